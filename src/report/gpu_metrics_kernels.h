/* The GPU hardware metrics of each kernel name: its executions on one GPU swept against that
 * GPU's samples in start order (common/gpu_metrics_series.h), with the time other kernels
 * overlapped them (common/overlap.h). gpu_metrics_sum prints it; the tensor_cores rule judges
 * names by it (docs/gpu-metrics.md, "Attribution"). */
#ifndef LANTERN_REPORT_GPU_METRICS_KERNELS_H
#define LANTERN_REPORT_GPU_METRICS_KERNELS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gpu_metrics_series.h"
#include "common/u64_map.h"

/* A kernel execution: the kernel_ops view's GPU, times and name (demangled when known). */
struct gpu_metrics_kernel {
    int64_t gpu_id, start, end, name_id;
};

/* A kernel name's executions, and what the samples say over them. */
struct gpu_metrics_kernel_group {
    int64_t name_id;
    int64_t instances, time_ns;
    int64_t overlapped_ns; /* of time_ns, while another kernel ran on the GPU too */
    struct gpu_metric_acc acc[GPU_METRIC_COUNT];
};

struct gpu_metrics_kernel_groups {
    struct gpu_metrics_kernel_group *v;
    size_t count, cap;
    struct u64_map index; /* name_id + 1 -> position + 1 */
};

/* Every kernel with a GPU, in start order (malloc'd into *out). 0, -ENOMEM or -EIO. */
int gpu_metrics_kernels_load(sqlite3 *db, struct gpu_metrics_kernel **out, size_t *count);

/* Adds the kernels of s's GPU (of the n in k, in start order) to their names' groups: count,
 * time, time overlapped by others, and the samples over them. 0 or -ENOMEM. */
int gpu_metrics_kernels_sweep(const struct gpu_metrics_kernel *k, size_t n,
                              const struct gpu_metrics_series *s,
                              struct gpu_metrics_kernel_groups *groups);

void gpu_metrics_kernel_groups_release(struct gpu_metrics_kernel_groups *groups);

#endif
