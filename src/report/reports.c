/* The table of reports: `lantern stats --report NAME` runs the row named NAME, and
 * `lantern stats --help` lists them all. Adding a report is a file and a row. */
#include "report/cuda_report.h"
#include "report/report.h"

#include <stdio.h>
#include <string.h>

const struct report report_table[] = {
    {"nvtx_sum", report_nvtx_sum, "NVTX range summary: time per range name, domain and style"},
    {"cuda_api_sum", report_cuda_api_sum, "CUDA API summary: CPU time per runtime/driver function"},
    {"cuda_gpu_kern_sum", report_cuda_gpu_kern_sum, "CUDA kernel summary: GPU time per kernel"},
    {"cuda_gpu_mem_time_sum", report_cuda_gpu_mem_time_sum,
     "CUDA memory operations: GPU time per kind"},
    {"cuda_gpu_mem_size_sum", report_cuda_gpu_mem_size_sum,
     "CUDA memory operations: bytes per kind"},
    {"cuda_gpu_trace", report_cuda_gpu_trace,
     "CUDA GPU trace: one row per kernel/copy/memset (--sort duration)"},
    {"nvtx_kern_sum", report_nvtx_kern_sum, "Kernels launched inside each NVTX range"},
    {"nvtx_gpu_proj_sum", report_nvtx_gpu_proj_sum, "NVTX ranges projected onto the GPU"},
    {"nccl_sum", report_nccl_sum,
     "NCCL collectives: calls, size, GPU time, algorithm and bus bandwidth per type and size"},
    {"energy_sum", report_energy_sum,
     "GPU energy (J, avg W) of the run, processes, NVTX ranges, kernels, windows"},
    {"gpu_metrics_sum", report_gpu_metrics_sum,
     "GPU hardware metrics (min/mean/max) of the run, NVTX ranges and kernels, per GPU"},
    {"cpu_sample_sum", report_cpu_sample_sum,
     "CPU samples: hot functions by self and total samples, per process and thread "
     "(--filter-nvtx)"},
    {"osrt_sum", report_osrt_sum,
     "OS runtime calls (-t osrt): time per libc function (sleeps, I/O, waits, locks)"},
    {"kernels", report_kernels,
     "One row per kernel/copy/memset with its layer, op, FLOPs, rates (as lantern kernels)"},
    {NULL, NULL, NULL},
};

const struct report *report_find(const char *name)
{
    for (const struct report *r = report_table; r->name; r++)
        if (!strcmp(r->name, name))
            return r;
    return NULL;
}

struct table *report_table_new(struct report_ctx *ctx, const struct table_column *cols, int ncols)
{
    struct table *t = table_new(ctx->out, ctx->format, ctx->width, cols, ncols);
    if (t && ctx->terminal)
        table_escape_csv_controls(t);
    return t;
}

int report_empty(struct report_ctx *ctx, const struct table_column *cols, int ncols)
{
    struct table *t = report_table_new(ctx, cols, ncols);
    if (t && table_finish(t) == 0)
        return 0;
    snprintf(ctx->error, sizeof ctx->error, "cannot write the table");
    return -1;
}
