/* The table every stats report prints through (output/table.h), on the report's stream, in its
 * format and width; apart from the table of reports (stats.c), which only the CLI reads, so
 * that no report calls back into the file that lists it. */
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct table *stats_new_table(struct stats_ctx *ctx, const struct table_column *cols, int ncols)
{
    struct table *t = table_new(ctx->out, ctx->format, ctx->width, cols, ncols);
    if (t && ctx->terminal)
        table_escape_csv_controls(t);
    return t;
}

int stats_empty(struct stats_ctx *ctx, const struct table_column *cols, int ncols)
{
    struct table *t = stats_new_table(ctx, cols, ncols);
    if (t && table_finish(t) == 0)
        return 0;
    snprintf(ctx->error, sizeof ctx->error, "cannot write the table");
    return t ? -EIO : -ENOMEM;
}

int stats_room_for_row(void **rows, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t grown_cap = *cap ? *cap * 2 : 16;
    void *grown = realloc(*rows, grown_cap * size);
    if (!grown)
        return -ENOMEM;
    *rows = grown;
    *cap = grown_cap;
    return 0;
}

sqlite3_stmt *stats_thread_query(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT t.tid || ' (' || tl.label || ')', p.pid || ' (' || pl.label || ')'"
                       " FROM threads t JOIN thread_labels tl ON tl.id = t.id"
                       " JOIN processes p ON p.id = t.process_id"
                       " JOIN process_labels pl ON pl.id = p.id WHERE t.id = ?",
                       -1, &st, NULL);
    return st;
}

void stats_thread_cells(struct table *t, sqlite3_stmt *query, int64_t thread_id)
{
    sqlite3_reset(query);
    sqlite3_bind_int64(query, 1, thread_id);
    int known = sqlite3_step(query) == SQLITE_ROW;
    table_text(t, known ? (const char *)sqlite3_column_text(query, 0) : NULL);
    table_text(t, known ? (const char *)sqlite3_column_text(query, 1) : NULL);
}
