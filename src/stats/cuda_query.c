/* The query runner behind the CUDA reports: each report is one SQL statement whose result
 * columns map one to one onto table columns, so the report files hold only what differs
 * (the query and the column list). */
#include "stats/cuda_query.h"

#include "model/aggregates.h"

#include <errno.h>
#include <string.h>

static int query_text(sqlite3 *db, const char *sql, char *out, size_t size)
{
    sqlite3_stmt *st;
    int found = 0;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        snprintf(out, size, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

static int list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, item, n) && (p[n] == ',' || !p[n]))
            return 1;
    return 0;
}

int stats_why_no_cuda(sqlite3 *db, char *why, size_t size)
{
    char trace[128], present[8];
    if (query_text(db,
                   "SELECT 1 WHERE EXISTS(SELECT 1 FROM cuda_api) OR EXISTS(SELECT 1 FROM kernels) "
                   "OR EXISTS(SELECT 1 FROM memcpys) OR EXISTS(SELECT 1 FROM memsets)",
                   present, sizeof present))
        return 0;
    query_text(db, "SELECT value FROM meta WHERE key = 'trace'", trace, sizeof trace);
    int no_gpu = query_text(db, "SELECT value FROM meta WHERE key = 'nvidia_gpu_present'", present,
                            sizeof present) &&
                 !strcmp(present, "0");
    if (!list_has(trace, "cuda"))
        snprintf(why, size, "no CUDA activity: -t cuda was off (the session traced '%s')%s", trace,
                 no_gpu ? "; the host had no NVIDIA GPU"
                        : "; lantern profile traces CUDA by default only where a GPU is present");
    else if (no_gpu)
        snprintf(why, size, "no CUDA activity was recorded: the host had no NVIDIA GPU");
    else
        snprintf(why, size,
                 "no CUDA activity was recorded: the program made no CUDA call, or CUDA could "
                 "not be traced (see the lantern: warnings printed when it ran)");
    return 1;
}

static void put_cell(struct table *t, const struct table_column *col, sqlite3_stmt *stmt, int i)
{
    if (sqlite3_column_type(stmt, i) == SQLITE_NULL) {
        table_text(t, NULL);
        return;
    }
    switch (col->kind) {
    case TABLE_TEXT:
    case TABLE_FORMATTED:
        table_text(t, (const char *)sqlite3_column_text(stmt, i));
        break;
    case TABLE_INT:
        table_int(t, sqlite3_column_int64(stmt, i));
        break;
    case TABLE_NS:
        table_ns(t, sqlite3_column_double(stmt, i));
        break;
    case TABLE_PERCENT:
        table_percent(t, sqlite3_column_double(stmt, i));
        break;
    case TABLE_BYTES:
        table_bytes(t, sqlite3_column_double(stmt, i));
        break;
    case TABLE_REAL:
        table_real(t, sqlite3_column_double(stmt, i));
        break;
    }
}

int stats_cuda_query(struct stats_ctx *ctx, const char *name, const struct table_column *cols,
                     int ncols, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    struct table *t = NULL;
    int rc;

    if (aggregate_sql_register(ctx->db) < 0 ||
        sqlite3_prepare_v2(ctx->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        snprintf(ctx->error, sizeof ctx->error, "%s: %s", name, sqlite3_errmsg(ctx->db));
        goto fail;
    }
    t = stats_new_table(ctx, cols, ncols);
    if (!t) {
        snprintf(ctx->error, sizeof ctx->error, "%s: out of memory", name);
        sqlite3_finalize(stmt);
        return -ENOMEM;
    }
    size_t rows = 0;
    for (; (rc = sqlite3_step(stmt)) == SQLITE_ROW; rows++)
        for (int i = 0; i < ncols; i++)
            put_cell(t, &cols[i], stmt, i);
    if (rc != SQLITE_DONE) {
        snprintf(ctx->error, sizeof ctx->error, "%s: %s", name, sqlite3_errmsg(ctx->db));
        goto fail;
    }
    sqlite3_finalize(stmt);
    if (!rows)
        stats_why_no_cuda(ctx->db, ctx->note, sizeof ctx->note);
    rc = table_finish(t);
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "%s: cannot write the output", name);
    return rc < 0 ? rc : 0;
fail:
    if (t)
        table_finish(t);
    sqlite3_finalize(stmt);
    return -EIO;
}
