/* nvtx_kern_sum: the kernels launched inside each NVTX range, like nsys's report of the same
 * name: one row per (range name, style, process, thread, kernel) with the number of range
 * instances, kernel instances and the kernels' GPU time statistics. A kernel counts for every
 * range it was launched inside, nested ones included (cuda_query.h, CUDA_SQL_OP_RANGES). */
#include "stats/cuda_query.h"

#define DURATION "(x.end_ns - x.start_ns)"

/* Grouped on ids, named after: grouping 10^5 kernels on their name text is several times
 * slower. */
// clang-format off
static const char nvtx_kern_sum_sql[] =
    CUDA_SQL_OPS("kernel_ops") CUDA_SQL_OP_RANGES
    " SELECT " CUDA_SQL_RANGE_NAME("r") " AS range_name, " CUDA_SQL_RANGE_STYLE("r") ","
    " p.pid, t.tid, COUNT(DISTINCT r.id), COUNT(*), SUM(" DURATION ") AS total,"
    " AVG(" DURATION "), lantern_median(" DURATION "), MIN(" DURATION "), MAX(" DURATION "),"
    " lantern_stddev(" DURATION "),"
    " COALESCE((SELECT value FROM strings WHERE id = x.name_id), '(unnamed kernel)') AS kernel"
    " FROM op_ranges x JOIN ranges r ON r.id = x.range_id"
    " JOIN processes p ON p.id = r.process_id JOIN threads t ON t.id = r.start_thread_id"
    " GROUP BY r.domain_id, r.name_id, r.style, r.process_id, r.start_thread_id, x.name_id"
    " ORDER BY range_name, total DESC, kernel";
// clang-format on

static const struct table_column nvtx_kern_sum_columns[] = {
    {"NVTX Range", "range", TABLE_TEXT},
    {"Style", "style", TABLE_TEXT},
    {"PID", "pid", TABLE_INT},
    {"TID", "tid", TABLE_INT},
    {"NVTX Inst", "range_instances", TABLE_INT},
    {"Kern Inst", "kernel_instances", TABLE_INT},
    {"Total Time", "total_ns", TABLE_NS},
    STATS_DURATION_SPREAD_COLUMNS,
    {"Kernel Name", "kernel", TABLE_TEXT},
};

int stats_nvtx_kern_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "nvtx_kern_sum", nvtx_kern_sum_columns,
                            sizeof nvtx_kern_sum_columns / sizeof *nvtx_kern_sum_columns,
                            nvtx_kern_sum_sql);
}
