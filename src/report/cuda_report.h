/* The CUDA reports (one file each: cuda_api_sum.c, cuda_gpu_kern_sum.c, cuda_gpu_mem_time_sum.c,
 * cuda_gpu_mem_size_sum.c, cuda_gpu_trace.c, nvtx_kern_sum.c, nvtx_gpu_proj_sum.c), modelled
 * on Nsight Systems' stats reports of the same names (docs/reports.md), and the query runner
 * they share. */
#ifndef LANTERN_REPORT_CUDA_REPORT_H
#define LANTERN_REPORT_CUDA_REPORT_H

#include "report/report.h"

int report_cuda_api_sum(struct report_ctx *ctx);
int report_cuda_gpu_kern_sum(struct report_ctx *ctx);
int report_cuda_gpu_mem_time_sum(struct report_ctx *ctx);
int report_cuda_gpu_mem_size_sum(struct report_ctx *ctx);
int report_cuda_gpu_trace(struct report_ctx *ctx);
int report_nvtx_kern_sum(struct report_ctx *ctx);
int report_nvtx_gpu_proj_sum(struct report_ctx *ctx);

/* Runs sql on ctx->db and prints every row through table.h as report `name`: result column i
 * is printed as cols[i] says (a NULL value prints an empty cell). Registers the median and
 * stddev aggregates (stats_sql.h) first. Returns 0, or -1 with ctx->error set. */
int cuda_report_query(struct report_ctx *ctx, const char *name, const struct table_column *cols,
                      int ncols, const char *sql);

#endif
