/* cuda_gpu_trace: one row per GPU operation (kernel, copy, memset) with its launch geometry,
 * sizes and placement, like nsys's report of the same name. Rows come in start order, or
 * longest first with --sort duration (the "what took longest" view). */
#include <errno.h>
#include <string.h>

#include "stats/cuda_query.h"

/* From the gpu_ops view: kernels fill the launch columns, copies and memsets the byte
 * columns; the rest stay NULL. */
// clang-format off
#define CUDA_GPU_TRACE_SQL                                                                    \
    " SELECT o.start_ns - " CUDA_SQL_SESSION_START ", o.end_ns - o.start_ns AS duration,"     \
    " o.correlation_id, o.grid_x, o.grid_y, o.grid_z, o.block_x, o.block_y, o.block_z,"       \
    " o.regs_per_thread, o.static_smem, o.dynamic_smem, o.bytes,"                             \
    " CASE WHEN o.bytes IS NOT NULL AND o.end_ns > o.start_ns"                                \
    "  THEN o.bytes * 1000.0 / (o.end_ns - o.start_ns) END, "                                 \
    CUDA_SQL_MEM_KIND("o.src_kind") ", " CUDA_SQL_MEM_KIND("o.dst_kind") ", "                  \
    CUDA_SQL_DEVICE_NAME("o") ", o.context, o.stream, o.name FROM gpu_ops o"
// clang-format on

static const char by_start_sql[] = CUDA_GPU_TRACE_SQL " ORDER BY o.start_ns, duration, o.name";
static const char by_duration_sql[] =
    CUDA_GPU_TRACE_SQL " ORDER BY duration DESC, o.start_ns, o.name";

/* Throughput is bytes per ns * 1000 = MB/s (10^6 bytes), nsys's unit. */
static const struct table_column cuda_gpu_trace_columns[] = {
    {"Start", "start_ns", TABLE_NS},
    {"Duration", "duration_ns", TABLE_NS},
    {"CorrId", "correlation_id", TABLE_INT},
    {"GrdX", "grid_x", TABLE_INT},
    {"GrdY", "grid_y", TABLE_INT},
    {"GrdZ", "grid_z", TABLE_INT},
    {"BlkX", "block_x", TABLE_INT},
    {"BlkY", "block_y", TABLE_INT},
    {"BlkZ", "block_z", TABLE_INT},
    {"Reg/Trd", "regs_per_thread", TABLE_INT},
    {"StcSMem", "static_smem_bytes", TABLE_BYTES},
    {"DymSMem", "dynamic_smem_bytes", TABLE_BYTES},
    {"Bytes", "bytes", TABLE_BYTES},
    {"Throughput (MB/s)", "throughput_mb_per_s", TABLE_REAL},
    {"SrcMemKd", "src_mem_kind", TABLE_TEXT},
    {"DstMemKd", "dst_mem_kind", TABLE_TEXT},
    {"Device", "device", TABLE_TEXT},
    {"Ctx", "context", TABLE_INT},
    {"Strm", "stream", TABLE_INT},
    {"Name", "name", TABLE_TEXT},
};

int stats_cuda_gpu_trace(struct stats_ctx *ctx)
{
    const char *sql = by_start_sql;
    if (ctx->sort && strcmp(ctx->sort, "duration") == 0) {
        sql = by_duration_sql;
    } else if (ctx->sort && strcmp(ctx->sort, "start") != 0) {
        snprintf(ctx->error, sizeof ctx->error,
                 "cuda_gpu_trace: cannot sort by '%s' (start or duration)", ctx->sort);
        return -EINVAL;
    }
    return stats_cuda_query(ctx, "cuda_gpu_trace", cuda_gpu_trace_columns,
                            sizeof cuda_gpu_trace_columns / sizeof *cuda_gpu_trace_columns, sql);
}
