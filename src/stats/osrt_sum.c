/* osrt_sum: time spent in each OS runtime function (-t osrt), like nsys's osrt_sum: Time % of
 * the sum of all rows, Total Time, Num Calls, Avg, Med, Min, Max, StdDev, Name, sorted by total
 * time. Only the calls kept (at least the threshold) are in it: the header says how many were
 * timed. An empty result says why on stderr. */
#include "model/aggregates.h"
#include "stats/stats.h"

#include <errno.h>

#define DURATION "(o.end_ns - o.start_ns)"

static const char osrt_sum_sql[] =
    "SELECT " STATS_DURATION_SQL(DURATION, "SELECT SUM(end_ns - start_ns) FROM osrt_calls")
    ", s.value AS name"
    " FROM osrt_calls o JOIN strings s ON s.id = o.name_id GROUP BY name ORDER BY 2 DESC, name";

static const struct table_column osrt_sum_columns[] = {
    STATS_DURATION_COLUMNS("Num Calls", "num_calls"),
    {"Name", "name", TABLE_TEXT},
};
#define OSRT_SUM_COLUMNS (sizeof osrt_sum_columns / sizeof osrt_sum_columns[0])

/* Why no call is listed: osrt was off, or no call reached the threshold. */
static void osrt_why_empty(struct stats_ctx *ctx)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctx->db, "SELECT count(*), sum(seen), min(threshold_ns) FROM osrt", -1,
                           &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "no OS runtime calls: -t osrt was off (lantern profile -t ...,osrt)");
    else if (sqlite3_column_type(st, 1) != SQLITE_NULL)
        snprintf(ctx->note, sizeof ctx->note,
                 "no OS runtime call lasted the threshold (%lld ns) of %lld timed",
                 sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
}

int stats_osrt_sum(struct stats_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    struct table *t = NULL;
    int rc = -EIO, step;
    size_t rows = 0;
    if (aggregate_sql_register(ctx->db) < 0 ||
        sqlite3_prepare_v2(ctx->db, osrt_sum_sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    if (!(t = stats_new_table(ctx, osrt_sum_columns, (int)OSRT_SUM_COLUMNS)))
        goto fail;
    for (; (step = sqlite3_step(st)) == SQLITE_ROW; rows++) {
        table_percent(t, sqlite3_column_double(st, 0));
        table_ns(t, sqlite3_column_double(st, 1));
        table_int(t, sqlite3_column_int64(st, 2));
        for (int col = 3; col < 8; col++)
            table_ns(t, sqlite3_column_double(st, col));
        table_text(t, (const char *)sqlite3_column_text(st, 8));
    }
    if (step != SQLITE_DONE)
        goto fail;
    if (!rows)
        osrt_why_empty(ctx);
    rc = 0;
fail:
    if (rc)
        snprintf(ctx->error, sizeof ctx->error, "osrt_sum: %s", sqlite3_errmsg(ctx->db));
    sqlite3_finalize(st);
    if (t && table_finish(t) < 0 && rc == 0) {
        snprintf(ctx->error, sizeof ctx->error, "osrt_sum: cannot write the output");
        rc = -EIO;
    }
    return rc;
}
