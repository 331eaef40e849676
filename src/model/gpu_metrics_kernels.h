/* The GPU hardware metrics of each kernel name: its executions on one GPU swept against that
 * GPU's samples in start order (model/gpu_metrics_series.h), with the time other kernels
 * overlapped them (model/overlap.h), into groups by name (the same groups hold
 * gpu_metrics_sum's ranges). gpu_metrics_sum prints it; the tensor_cores rule judges names by
 * it (docs/gpu-metrics.md, "Attribution"). */
#ifndef LANTERN_MODEL_GPU_METRICS_KERNELS_H
#define LANTERN_MODEL_GPU_METRICS_KERNELS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"
#include "model/gpu_metrics_series.h"

/* A kernel execution: the kernel_ops view's GPU, times and name (demangled when known). */
struct gpu_metrics_kernel {
    int64_t gpu_id, start, end, name_id;
};

/* Intervals grouped by a key, and what the samples say over them: a kernel name's executions
 * (key: its name_id, gpu_metrics_kernels_sweep), or gpu_metrics_sum's range names'
 * projections (key: the index of its label). */
struct gpu_metrics_group {
    int64_t key;
    int64_t instances, time_ns;
    int64_t overlapped_ns; /* kernels: of time_ns, while another kernel ran on the GPU too */
    struct gpu_metric_acc acc[GPU_METRIC_COUNT];
};

struct gpu_metrics_groups {
    struct gpu_metrics_group *v;
    size_t count, cap;
    struct u64_map index; /* key + 1 -> position + 1 */
};

/* key's group, added (zeroed) when new; NULL when out of memory. */
struct gpu_metrics_group *gpu_metrics_group_of(struct gpu_metrics_groups *groups, int64_t key);
/* key's group, or NULL. */
const struct gpu_metrics_group *gpu_metrics_group_find(const struct gpu_metrics_groups *groups,
                                                       int64_t key);
/* Adds the interval [start, end) to g: one instance, its time, and the samples over it (c's
 * calls in nondecreasing start, gpu_metrics_series_add). */
void gpu_metrics_group_add(struct gpu_metrics_group *g, const struct gpu_metrics_series *s,
                           struct gpu_metrics_cursor *c, int64_t start, int64_t end);
/* Orders the groups by time, longest first, then by key: for printing, after the last
 * gpu_metrics_group_of or _find (the index keeps the positions of before). */
void gpu_metrics_groups_sort(struct gpu_metrics_groups *groups);
void gpu_metrics_groups_release(struct gpu_metrics_groups *groups);

/* Every kernel with a GPU, in start order (malloc'd into *out). 0, -ENOMEM or -EIO. */
int gpu_metrics_kernels_load(sqlite3 *db, struct gpu_metrics_kernel **out, size_t *count);

/* Adds the kernels of s's GPU (of the n in k, in start order) to their names' groups: count,
 * time, time overlapped by others, and the samples over them. 0 or -ENOMEM. */
int gpu_metrics_kernels_sweep(const struct gpu_metrics_kernel *k, size_t n,
                              const struct gpu_metrics_series *s,
                              struct gpu_metrics_groups *groups);

#endif
