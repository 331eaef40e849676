/* `lantern kernels`, the table: loads every kernel, memcpy and memset (kernels_load.c),
 * measures each with the GPU metrics where they were recorded (kernels_metrics.c),
 * attributes each to the layer and PyTorch op that launched it with its FLOPs and bytes
 * (kernels_attribute.c) and prints the chosen columns (kernels_columns.c, kernels_output.c).
 * kernels_write serves `lantern kernels` (src/cli/cmd_kernels.c, its own options), the
 * tensor_cores rule (src/analyze/rule_tensor_cores.c) and `lantern stats --report kernels`
 * (src/stats/kernels.c). */
#include "model/kernels.h"

#include <errno.h>
#include <string.h>

#include "model/kernels_attribute.h"
#include "model/kernels_load.h"
#include "model/kernels_output.h"

int kernels_write(sqlite3 *db, const struct kernels_options *opt, FILE *out)
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
