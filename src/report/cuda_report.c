/* The query runner behind the CUDA reports: each report is one SQL statement whose result
 * columns map one to one onto table columns, so the report files hold only what differs
 * (the query and the column list). */
#include "report/cuda_report.h"

#include "report/stats_sql.h"

static void put_cell(struct table *t, const struct table_column *col, sqlite3_stmt *stmt, int i)
{
    if (sqlite3_column_type(stmt, i) == SQLITE_NULL) {
        table_text(t, NULL);
        return;
    }
    switch (col->kind) {
    case TABLE_TEXT:
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

int cuda_report_query(struct report_ctx *ctx, const char *name, const struct table_column *cols,
                      int ncols, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    struct table *t = NULL;
    int rc;

    if (stats_sql_register(ctx->db) < 0 ||
        sqlite3_prepare_v2(ctx->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        snprintf(ctx->error, sizeof ctx->error, "%s: %s", name, sqlite3_errmsg(ctx->db));
        goto fail;
    }
    t = table_new(ctx->out, ctx->format, cols, ncols);
    if (!t) {
        snprintf(ctx->error, sizeof ctx->error, "%s: out of memory", name);
        goto fail;
    }
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        for (int i = 0; i < ncols; i++)
            put_cell(t, &cols[i], stmt, i);
    if (rc != SQLITE_DONE) {
        snprintf(ctx->error, sizeof ctx->error, "%s: %s", name, sqlite3_errmsg(ctx->db));
        goto fail;
    }
    sqlite3_finalize(stmt);
    rc = table_finish(t);
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "%s: cannot write the output", name);
    return rc < 0 ? -1 : 0;
fail:
    if (t)
        table_finish(t);
    sqlite3_finalize(stmt);
    return -1;
}
