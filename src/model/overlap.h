/* How much of each interval others overlapped: for kernels on one GPU, the share of a
 * kernel's time that another kernel ran too (gpu_metrics_sum's Overlapped column, and why a
 * kernel's GPU-wide metrics may not be its own: docs/gpu-metrics.md). */
#ifndef LANTERN_MODEL_OVERLAP_H
#define LANTERN_MODEL_OVERLAP_H

#include <stddef.h>
#include <stdint.h>

/* For n half-open intervals [start[i], end[i]) sorted by start, overlapped[i] = the time in
 * interval i during which at least one other interval was open too. One sort of the ends, one
 * sweep, then two binary searches per interval: O(n log n). Returns 0 or -ENOMEM. */
int overlap_with_others(const int64_t *start, const int64_t *end, size_t n, int64_t *overlapped);

#endif
