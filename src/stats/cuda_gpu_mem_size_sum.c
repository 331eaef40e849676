/* cuda_gpu_mem_size_sum: bytes moved or set by memory operations per kind, like nsys's report
 * of the same name: Total, Count, Avg, Med, Min, Max, StdDev, Operation, sorted by total size.
 * Tables show MB (10^6 bytes, as nsys does); CSV and JSON give exact bytes. */
#include "stats/cuda_query.h"

// clang-format off
static const char cuda_gpu_mem_size_sum_sql[] =
    CUDA_SQL_MEM_OPS
    "SELECT SUM(bytes), COUNT(*), AVG(bytes), lantern_median(bytes), MIN(bytes), MAX(bytes),"
    " lantern_stddev(bytes), name FROM mem_ops GROUP BY name ORDER BY 1 DESC, name";
// clang-format on

static const struct table_column cuda_gpu_mem_size_sum_columns[] = {
    {"Total", "total_bytes", TABLE_BYTES},   {"Count", "count", TABLE_INT},
    {"Avg", "avg_bytes", TABLE_BYTES},       {"Med", "med_bytes", TABLE_BYTES},
    {"Min", "min_bytes", TABLE_BYTES},       {"Max", "max_bytes", TABLE_BYTES},
    {"StdDev", "stddev_bytes", TABLE_BYTES}, {"Operation", "operation", TABLE_TEXT},
};

int stats_cuda_gpu_mem_size_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "cuda_gpu_mem_size_sum", cuda_gpu_mem_size_sum_columns,
                            sizeof cuda_gpu_mem_size_sum_columns /
                                sizeof *cuda_gpu_mem_size_sum_columns,
                            cuda_gpu_mem_size_sum_sql);
}
