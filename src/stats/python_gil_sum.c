/* python_gil_sum: how long each Python thread waited for the GIL (cpu_gil_waits, nsys's
 * --trace=python-gil), its share of the thread's wall time, the number of waits seen and the
 * Python functions it waited in, one row per thread, the longest waits first. With
 * --filter-nvtx RANGE only the waits' time inside the ranges of that name the thread started
 * counts, against those ranges' time. docs/cpu.md, "GIL waits". */
#include "model/gil_waits.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIL_TOP_FUNCTIONS 3 /* functions named per thread */

struct gil_row {
    int64_t thread_id, wall_ns;
    struct gil_wait_sum sum;
};

struct gil_rows {
    struct gil_row *rows;
    size_t n, cap;
};

static const struct table_column columns[] = {
    {"Wait", "wait_percent", TABLE_PERCENT}, {"Total Wait", "wait_ns", TABLE_NS},
    {"Num Waits", "waits", TABLE_INT},       {"Wall Time", "wall_ns", TABLE_NS},
    {"Functions", "functions", TABLE_TEXT},  {"Thread", "thread", TABLE_TEXT},
    {"Process", "process", TABLE_TEXT},
};
#define COLUMNS ((int)(sizeof columns / sizeof columns[0]))

/* The thread's wall time in the run: from its first record (threads.start_ns, a sample, the
 * start of a wait) to its last (a sample, the end of a wait); threads have no recorded end. */
static const char span_sql[] =
    "SELECT max(e) - min(s) FROM ("
    " SELECT start_ns AS s, start_ns AS e FROM threads WHERE id = ?1"
    " UNION ALL SELECT min(ts_ns), max(ts_ns) FROM cpu_samples WHERE thread_id = ?1"
    " UNION ALL SELECT min(ts_ns - duration_ns), max(ts_ns) FROM cpu_gil_waits"
    " WHERE thread_id = ?1)";

static int wall_of(sqlite3_stmt *span, struct gil_row *r, const struct cpu_windows *w)
{
    if (w) {
        r->wall_ns = 0;
        for (size_t i = 0; i < w->count; i++)
            r->wall_ns += w->end[i] - w->start[i];
        return 0;
    }
    sqlite3_reset(span);
    sqlite3_bind_int64(span, 1, r->thread_id);
    if (sqlite3_step(span) != SQLITE_ROW)
        return -EIO;
    r->wall_ns = sqlite3_column_int64(span, 0);
    return 0;
}

/* One thread's row, unless it has no wait (inside the ranges). */
static int add_thread(struct stats_ctx *ctx, sqlite3_stmt *span, struct gil_rows *out,
                      int64_t thread)
{
    int64_t *start = NULL, *end = NULL;
    struct cpu_windows windows = {0};
    int rc = 0;
    if (ctx->filter_nvtx) {
        int64_t n = gil_range_windows(ctx->db, ctx->filter_nvtx, thread, &start, &end);
        if (n < 0) {
            rc = (int)n;
            goto out;
        }
        windows = (struct cpu_windows){start, end, (size_t)n};
    }
    const struct cpu_windows *w = ctx->filter_nvtx ? &windows : NULL;
    struct gil_row r = {.thread_id = thread};
    if ((rc = gil_waits_add(ctx->db, thread, w, &r.sum)) < 0 || r.sum.waits == 0 ||
        (rc = wall_of(span, &r, w)) < 0) {
        gil_wait_sum_release(&r.sum);
        goto out;
    }
    gil_wait_sum_sort(&r.sum);
    if ((rc = stats_room_for_row((void **)&out->rows, &out->cap, out->n, sizeof r)) < 0) {
        gil_wait_sum_release(&r.sum);
        goto out;
    }
    out->rows[out->n++] = r;
out:
    free(start);
    free(end);
    return rc;
}

static int collect(struct stats_ctx *ctx, struct gil_rows *out)
{
    sqlite3_stmt *threads = NULL, *span = NULL;
    int rc = -EIO, step;
    if (sqlite3_prepare_v2(ctx->db, "SELECT DISTINCT thread_id FROM cpu_gil_waits ORDER BY 1", -1,
                           &threads, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ctx->db, span_sql, -1, &span, NULL) != SQLITE_OK)
        goto out;
    rc = 0;
    while (rc == 0 && (step = sqlite3_step(threads)) == SQLITE_ROW)
        rc = add_thread(ctx, span, out, sqlite3_column_int64(threads, 0));
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
out:
    sqlite3_finalize(threads);
    sqlite3_finalize(span);
    return rc;
}

static int by_wait(const void *a, const void *b)
{
    const struct gil_row *x = a, *y = b;
    if (x->sum.ns != y->sum.ns)
        return x->sum.ns > y->sum.ns ? -1 : 1;
    return (x->thread_id > y->thread_id) - (x->thread_id < y->thread_id);
}

/* "hot 61.0 %, warm 38.2 %": the functions the thread waited in, by their share of its wait. */
static void format_functions(sqlite3_stmt *frame, const struct gil_row *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->sum.nfunctions && i < GIL_TOP_FUNCTIONS && used < size; i++) {
        const struct gil_function *f = &r->sum.functions[i];
        const char *name = "[no Python stack]";
        sqlite3_reset(frame);
        sqlite3_bind_int64(frame, 1, f->frame_id);
        if (f->frame_id && sqlite3_step(frame) == SQLITE_ROW && sqlite3_column_text(frame, 0))
            name = (const char *)sqlite3_column_text(frame, 0);
        int n = snprintf(buf + used, size - used, "%s%s %.1f %%", i ? ", " : "", name,
                         100.0 * (double)f->ns / (double)r->sum.ns);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int write_rows(struct stats_ctx *ctx, const struct gil_rows *rows)
{
    sqlite3_stmt *frame = NULL, *thread = NULL;
    struct table *t = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(ctx->db, "SELECT name FROM cpu_frames WHERE id = ?", -1, &frame, NULL) !=
            SQLITE_OK ||
        !(thread = stats_thread_query(ctx->db)))
        goto out;
    if (!(t = stats_new_table(ctx, columns, COLUMNS))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < rows->n; i++) {
        const struct gil_row *r = &rows->rows[i];
        char functions[512];
        table_percent(t, r->wall_ns > 0 ? 100.0 * (double)r->sum.ns / (double)r->wall_ns : 0);
        table_ns(t, (double)r->sum.ns);
        table_int(t, r->sum.waits);
        table_ns(t, (double)r->wall_ns);
        format_functions(frame, r, functions, sizeof functions);
        table_text(t, functions);
        stats_thread_cells(t, thread, r->thread_id);
    }
    rc = table_finish(t) == 0 ? 0 : -EIO;
out:
    sqlite3_finalize(frame);
    sqlite3_finalize(thread);
    return rc;
}

/* Why no thread is listed: the Python sampler did not run (sampling off, no Python), no
 * thread waited, or none inside the range. */
static void explain_empty(struct stats_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    int python = 0;
    if (sqlite3_prepare_v2(ctx->db, "SELECT 1 FROM cpu_sampling WHERE python_status = 'on'", -1,
                           &st, NULL) == SQLITE_OK)
        python = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (ctx->filter_nvtx && gil_waits_present(ctx->db))
        snprintf(ctx->note, sizeof ctx->note,
                 "python_gil_sum: no GIL wait inside an NVTX range named '%s'", ctx->filter_nvtx);
    else if (python)
        snprintf(ctx->note, sizeof ctx->note,
                 "python_gil_sum: no Python thread was seen waiting for the GIL");
    else
        snprintf(ctx->note, sizeof ctx->note,
                 "python_gil_sum: no GIL waits: the Python sampler did not run (-t cpu in a "
                 "CPython 3.10-3.13 process: docs/cpu.md)");
}

int stats_python_gil_sum(struct stats_ctx *ctx)
{
    struct gil_rows rows = {0};
    int rc = collect(ctx, &rows);
    if (rc == 0) {
        if (rows.n)
            qsort(rows.rows, rows.n, sizeof *rows.rows, by_wait);
        rc = write_rows(ctx, &rows);
        if (rc == 0 && rows.n == 0)
            explain_empty(ctx);
    }
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "python_gil_sum: %s",
                 rc == -ENOMEM ? "out of memory" : sqlite3_errmsg(ctx->db));
    for (size_t i = 0; i < rows.n; i++)
        gil_wait_sum_release(&rows.rows[i].sum);
    free(rows.rows);
    return rc;
}
