/* osrt_backtraces: who made the long OS runtime calls (-t osrt, the calls of at least
 * --osrt-backtrace-threshold, which carry a backtrace): one row per function and caller's
 * stack, the functions in osrt_sum's order (total time), each one's stacks by their time. Time
 * (%) is the stack's share of its function's time in every kept call, so "80 % of read's time
 * came from here". An empty result says why on stderr. */
#include "stats/stats.h"

#include <errno.h>

#define DURATION "(o.end_ns - o.start_ns)"

static const char osrt_backtraces_sql[] =
    "WITH per_name AS (SELECT name_id, SUM(end_ns - start_ns) AS total FROM osrt_calls"
    "   GROUP BY name_id)"
    " SELECT 100.0 * SUM(" DURATION ") / p.total, SUM(" DURATION "), COUNT(*), AVG(" DURATION "),"
    " MAX(" DURATION "), s.value, b.value"
    " FROM osrt_calls o JOIN per_name p ON p.name_id = o.name_id"
    " JOIN strings s ON s.id = o.name_id JOIN strings b ON b.id = o.backtrace_id"
    " GROUP BY o.name_id, o.backtrace_id ORDER BY p.total DESC, s.value, 2 DESC, b.value";

static const struct table_column osrt_backtraces_columns[] = {
    {"Time", "time_percent", TABLE_PERCENT},
    {"Total Time", "total_ns", TABLE_NS},
    {"Num Calls", "num_calls", TABLE_INT},
    {"Avg", "avg_ns", TABLE_NS},
    {"Max", "max_ns", TABLE_NS},
    {"Name", "name", TABLE_TEXT},
    {"Backtrace", "backtrace", TABLE_TEXT},
};
#define OSRT_BACKTRACES_COLUMNS (sizeof osrt_backtraces_columns / sizeof osrt_backtraces_columns[0])

/* Why no backtrace is listed: osrt was off, backtraces were off, or no call was that long. */
static void osrt_backtraces_why_empty(struct stats_ctx *ctx)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctx->db,
                           "SELECT count(*), max(backtrace_depth), min(backtrace_threshold_ns),"
                           " (SELECT count(*) FROM osrt_calls) FROM osrt",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "no OS runtime calls: -t osrt was off (lantern profile -t ...,osrt)");
    else if (sqlite3_column_int64(st, 1) == 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "no OS runtime backtraces: they were off (--osrt-backtrace-depth 0, or a "
                 "Lantern before them)");
    else
        snprintf(ctx->note, sizeof ctx->note,
                 "no OS runtime call with a backtrace: none of the %lld kept lasted "
                 "--osrt-backtrace-threshold (%lld ns)",
                 sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
}

int stats_osrt_backtraces(struct stats_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    struct table *t = NULL;
    int rc = -EIO, step;
    size_t rows = 0;
    if (sqlite3_prepare_v2(ctx->db, osrt_backtraces_sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    if (!(t = stats_new_table(ctx, osrt_backtraces_columns, (int)OSRT_BACKTRACES_COLUMNS)))
        goto fail;
    for (; (step = sqlite3_step(st)) == SQLITE_ROW; rows++) {
        table_percent(t, sqlite3_column_double(st, 0));
        table_ns(t, sqlite3_column_double(st, 1));
        table_int(t, sqlite3_column_int64(st, 2));
        table_ns(t, sqlite3_column_double(st, 3));
        table_ns(t, sqlite3_column_double(st, 4));
        table_text(t, (const char *)sqlite3_column_text(st, 5));
        table_text(t, (const char *)sqlite3_column_text(st, 6));
    }
    if (step != SQLITE_DONE)
        goto fail;
    if (!rows)
        osrt_backtraces_why_empty(ctx);
    rc = 0;
fail:
    if (rc)
        snprintf(ctx->error, sizeof ctx->error, "osrt_backtraces: %s", sqlite3_errmsg(ctx->db));
    sqlite3_finalize(st);
    if (t && table_finish(t) < 0 && rc == 0) {
        snprintf(ctx->error, sizeof ctx->error, "osrt_backtraces: cannot write the output");
        rc = -EIO;
    }
    return rc;
}
