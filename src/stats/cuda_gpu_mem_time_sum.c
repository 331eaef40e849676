/* cuda_gpu_mem_time_sum: GPU time of memory operations per kind ("[CUDA memcpy Host-to-Device]",
 * "[CUDA memset]", ...), like nsys's report of the same name: Time %, Total, Count, Avg, Med,
 * Min, Max, StdDev, Operation, sorted by total time. */
#include "stats/cuda_query.h"

// clang-format off
static const char cuda_gpu_mem_time_sum_sql[] =
    CUDA_SQL_MEM_OPS
    "SELECT " STATS_DURATION_SQL("duration", "SELECT SUM(duration) FROM mem_ops") ","
    " name FROM mem_ops GROUP BY name ORDER BY 2 DESC, name";
// clang-format on

static const struct table_column cuda_gpu_mem_time_sum_columns[] = {
    STATS_DURATION_COLUMNS("Count", "count"),
    {"Operation", "operation", TABLE_TEXT},
};

int stats_cuda_gpu_mem_time_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "cuda_gpu_mem_time_sum", cuda_gpu_mem_time_sum_columns,
                            sizeof cuda_gpu_mem_time_sum_columns /
                                sizeof *cuda_gpu_mem_time_sum_columns,
                            cuda_gpu_mem_time_sum_sql);
}
