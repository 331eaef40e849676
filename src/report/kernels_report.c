/* `lantern kernels`, the report: loads every kernel, memcpy and memset (kernels_load.c),
 * measures each with the GPU metrics where they were recorded (kernels_metrics.c),
 * attributes each to the layer and PyTorch op that launched it with its FLOPs and bytes
 * (kernels_attribute.c) and prints the chosen columns (kernels_columns.c, kernels_output.c).
 * kernels_report serves `lantern kernels` (src/cli/cmd_kernels.c, its own options);
 * report_kernels is its row in the table of reports (`lantern stats --report kernels`). */
#include "report/kernels.h"

#include <errno.h>
#include <string.h>

#include "report/kernels_attribute.h"
#include "report/kernels_load.h"
#include "report/kernels_output.h"
#include "report/report.h"

int kernels_report(sqlite3 *db, const struct kernels_options *opt, FILE *out)
{
    const char *bad;
    if (kernels_columns_check(opt->columns, &bad) < 0)
        return -EINVAL;
    struct kernels_state s;
    memset(&s, 0, sizeof s);
    s.db = db;
    int rc = kernels_load(&s, opt->no_memops);
    if (rc == 0)
        rc = kernels_metrics(&s);
    if (rc == 0)
        rc = kernels_attribute(&s);
    if (rc == 0)
        rc = kernels_output_write(&s.rows, opt, out);
    kernels_state_release(&s);
    return rc;
}

/* The default columns, every row, fitted to ctx->width as `lantern kernels` fits them. */
int report_kernels(struct report_ctx *ctx)
{
    struct kernels_options opt = {.format = (enum kernels_format)ctx->format,
                                  .width = ctx->width,
                                  .drop_columns = ctx->width > 0};
    report_why_no_cuda(ctx->db, ctx->note, sizeof ctx->note);
    int rc = kernels_report(ctx->db, &opt, ctx->out);
    if (rc > 0 && !ctx->note[0])
        snprintf(ctx->note, sizeof ctx->note,
                 "%d column%s left out to fit %d characters (-w 0: all)", rc, rc == 1 ? "" : "s",
                 ctx->width);
    if (rc >= 0)
        return 0;
    snprintf(ctx->error, sizeof ctx->error, "kernels: %s",
             rc == -EIO ? KERNELS_NO_TABLES : strerror(-rc));
    return -1;
}
