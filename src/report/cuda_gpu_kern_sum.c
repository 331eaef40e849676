/* cuda_gpu_kern_sum: GPU time of each CUDA kernel, like nsys's report of the same name:
 * Time %, Total, Instances, Avg, Med, Min, Max, StdDev, Name (demangled when known),
 * sorted by total time. */
#include "report/cuda_report.h"

#define DURATION "(k.end_ns - k.start_ns)"

// clang-format off
static const char cuda_gpu_kern_sum_sql[] =
    "SELECT 100.0 * SUM(" DURATION ") / (SELECT SUM(end_ns - start_ns) FROM kernels),"
    " SUM(" DURATION "), COUNT(*), AVG(" DURATION "), lantern_median(" DURATION "),"
    " MIN(" DURATION "), MAX(" DURATION "), lantern_stddev(" DURATION "),"
    " k.name FROM kernel_ops k GROUP BY k.name ORDER BY 2 DESC, k.name";
// clang-format on

static const struct table_column cuda_gpu_kern_sum_columns[] = {
    {"Time", "time_percent", TABLE_PERCENT},
    {"Total Time", "total_ns", TABLE_NS},
    {"Instances", "instances", TABLE_INT},
    {"Avg", "avg_ns", TABLE_NS},
    {"Med", "med_ns", TABLE_NS},
    {"Min", "min_ns", TABLE_NS},
    {"Max", "max_ns", TABLE_NS},
    {"StdDev", "stddev_ns", TABLE_NS},
    {"Name", "name", TABLE_TEXT},
};

int report_cuda_gpu_kern_sum(struct report_ctx *ctx)
{
    return cuda_report_query(ctx, "cuda_gpu_kern_sum", cuda_gpu_kern_sum_columns,
                             sizeof cuda_gpu_kern_sum_columns / sizeof *cuda_gpu_kern_sum_columns,
                             cuda_gpu_kern_sum_sql);
}
