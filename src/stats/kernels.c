/* `lantern stats --report kernels`: the kernels table of src/model/kernels.c with `lantern
 * kernels`' default columns, fitted to the stats report's width. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/kernels.h"
#include "stats/stats.h"

/* The default columns, every row, fitted to ctx->width as `lantern kernels` fits them. */
int stats_kernels(struct stats_ctx *ctx)
{
    struct kernels_options opt = {.format = (enum kernels_format)ctx->format,
                                  .width = ctx->width,
                                  .drop_columns = ctx->width > 0};
    stats_why_no_cuda(ctx->db, ctx->note, sizeof ctx->note);
    int rc = kernels_write(ctx->db, &opt, ctx->out);
    if (rc > 0 && !ctx->note[0])
        snprintf(ctx->note, sizeof ctx->note,
                 "%d column%s left out to fit %d characters (-w 0: all)", rc, rc == 1 ? "" : "s",
                 ctx->width);
    if (rc >= 0)
        return 0;
    snprintf(ctx->error, sizeof ctx->error, "kernels: %s",
             rc == -EIO ? KERNELS_NO_TABLES : strerror(-rc));
    return rc;
}
