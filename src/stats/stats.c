/* The table of reports: `lantern stats --report NAME` runs the row named NAME, and
 * `lantern stats --help` lists them all. Adding a report is a file and a row. */
#include "stats/stats.h"
#include "stats/cuda_query.h"

#include <string.h>

const struct stats_entry stats_table[] = {
    {"nvtx_sum", stats_nvtx_sum, "NVTX range summary: time per range name, domain and style"},
    {"cuda_api_sum", stats_cuda_api_sum, "CUDA API summary: CPU time per runtime/driver function"},
    {"cuda_gpu_kern_sum", stats_cuda_gpu_kern_sum, "CUDA kernel summary: GPU time per kernel"},
    {"cuda_gpu_mem_time_sum", stats_cuda_gpu_mem_time_sum,
     "CUDA memory operations: GPU time per kind"},
    {"cuda_gpu_mem_size_sum", stats_cuda_gpu_mem_size_sum,
     "CUDA memory operations: bytes per kind"},
    {"cuda_gpu_trace", stats_cuda_gpu_trace,
     "CUDA GPU trace: one row per kernel/copy/memset (--sort duration)"},
    {"nvtx_kern_sum", stats_nvtx_kern_sum, "Kernels launched inside each NVTX range"},
    {"nvtx_gpu_proj_sum", stats_nvtx_gpu_proj_sum, "NVTX ranges projected onto the GPU"},
    {"nccl_sum", stats_nccl_sum,
     "NCCL collectives: calls, size, GPU time, algorithm and bus bandwidth per type and size"},
    {"energy_sum", stats_energy_sum,
     "GPU energy (J, avg W) of the run, processes, NVTX ranges, kernels, windows"},
    {"gpu_metrics_sum", stats_gpu_metrics_sum,
     "GPU hardware metrics (min/mean/max) of the run, NVTX ranges and kernels, per GPU"},
    {"cpu_sample_sum", stats_cpu_sample_sum,
     "CPU samples: hot functions by self and total samples, per process and thread "
     "(--filter-nvtx)"},
    {"osrt_sum", stats_osrt_sum,
     "OS runtime calls (-t osrt): time per libc function (sleeps, I/O, waits, locks)"},
    {"osrt_backtraces", stats_osrt_backtraces,
     "OS runtime calls (-t osrt): who made the long ones, time per function and caller"},
    {"python_gil_sum", stats_python_gil_sum,
     "GIL waits: time each Python thread waited for the GIL, its share, where (--filter-nvtx)"},
    {"thread_state_sum", stats_thread_state_sum,
     "Thread states: time each sampled thread ran, was blocked or preempted (--filter-nvtx)"},
    {"kernels", stats_kernels,
     "One row per kernel/copy/memset with its layer, op, FLOPs, rates (as lantern kernels)"},
    {NULL, NULL, NULL},
};

const struct stats_entry *stats_find(const char *name)
{
    for (const struct stats_entry *r = stats_table; r->name; r++)
        if (!strcmp(r->name, name))
            return r;
    return NULL;
}
