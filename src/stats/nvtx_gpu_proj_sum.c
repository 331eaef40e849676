/* nvtx_gpu_proj_sum: NVTX ranges projected onto the GPU, like nsys's report of the same name.
 * A range instance's projection runs from the start of the first to the end of the last GPU
 * operation launched inside it (nested ranges included); instances that launched nothing are
 * left out. Aggregated per range name and style, sorted by total projected time. */
#include "stats/cuda_query.h"

// clang-format off
static const char nvtx_gpu_proj_sum_sql[] =
    CUDA_SQL_OPS("gpu_ops") CUDA_SQL_OP_RANGES ","
    " projected AS (SELECT range_id, MAX(end_ns) - MIN(start_ns) AS proj_ns,"
    "  COUNT(*) AS ops FROM op_ranges GROUP BY range_id),"
    " children(parent_id, n) AS (SELECT parent_id, COUNT(*) FROM ranges"
    "  WHERE parent_id IS NOT NULL GROUP BY parent_id)"
    " SELECT " CUDA_SQL_RANGE_NAME("r") " AS range_name, " CUDA_SQL_RANGE_STYLE("r") ","
    " SUM(p.proj_ns), SUM(r.end_ns - r.start_ns), COUNT(*), AVG(p.proj_ns),"
    " lantern_median(p.proj_ns), MIN(p.proj_ns), MAX(p.proj_ns), lantern_stddev(p.proj_ns),"
    " SUM(p.ops), AVG(p.ops), AVG(COALESCE(r.depth, 0)), AVG(COALESCE(c.n, 0))"
    " FROM projected p JOIN ranges r ON r.id = p.range_id"
    " LEFT JOIN children c ON c.parent_id = r.id"
    " GROUP BY r.domain_id, r.name_id, r.style ORDER BY 3 DESC, range_name";
// clang-format on

/* Total Range Time is the CPU-side duration of the same instances (ranges never ended add
 * nothing); Avg Range Lvl is the push/pop nesting depth (0 outermost); Avg Num Child counts
 * the direct child ranges. */
static const struct table_column nvtx_gpu_proj_sum_columns[] = {
    {"Range", "range", TABLE_TEXT},
    {"Style", "style", TABLE_TEXT},
    {"Total Proj Time", "total_proj_ns", TABLE_NS},
    {"Total Range Time", "total_range_ns", TABLE_NS},
    {"Range Instances", "range_instances", TABLE_INT},
    {"Proj Avg", "proj_avg_ns", TABLE_NS},
    {"Proj Med", "proj_med_ns", TABLE_NS},
    {"Proj Min", "proj_min_ns", TABLE_NS},
    {"Proj Max", "proj_max_ns", TABLE_NS},
    {"Proj StdDev", "proj_stddev_ns", TABLE_NS},
    {"Total GPU Ops", "total_gpu_ops", TABLE_INT},
    {"Avg GPU Ops", "avg_gpu_ops", TABLE_REAL},
    {"Avg Range Lvl", "avg_range_level", TABLE_REAL},
    {"Avg Num Child", "avg_num_child", TABLE_REAL},
};

int stats_nvtx_gpu_proj_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "nvtx_gpu_proj_sum", nvtx_gpu_proj_sum_columns,
                            sizeof nvtx_gpu_proj_sum_columns / sizeof *nvtx_gpu_proj_sum_columns,
                            nvtx_gpu_proj_sum_sql);
}
