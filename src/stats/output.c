/* The table every stats report prints through (output/table.h), on the report's stream, in its
 * format and width; apart from the table of reports (stats.c), which only the CLI reads, so
 * that no report calls back into the file that lists it. */
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>

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
