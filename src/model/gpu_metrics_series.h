/* One GPU's hardware-metric samples (gpu_metric_samples of every set on that GPU) as step
 * functions of time, and what they say about an interval: the time-weighted sum, the time
 * they cover, and the extremes of the samples it overlaps. The reports that attribute the
 * GPU-wide samples to ranges and kernels (gpu_metrics_sum, lantern kernels, the tensor_cores
 * rule) share it, so that they agree to the last digit (docs/gpu-metrics.md, "Attribution").
 *
 *   struct gpu_metrics_series s;
 *   gpu_metrics_series_load(db, gpu_id, &s);            samples sorted, made disjoint
 *   struct gpu_metrics_cursor c = {0};
 *   for each interval, in nondecreasing start:
 *       gpu_metrics_series_add(&s, &c, from, to, acc);  acc[GPU_METRIC_COUNT], zeroed first
 *   gpu_metrics_series_release(&s);
 *
 * A query walks the samples it overlaps, whole blocks of GPU_METRICS_BLOCK samples at a time
 * where it covers them, so a kernel costs its few samples and a whole-run range its blocks. */
#ifndef LANTERN_MODEL_GPU_METRICS_SERIES_H
#define LANTERN_MODEL_GPU_METRICS_SERIES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/gpu_metrics.h"

#define GPU_METRICS_BLOCK 64

/* What the samples of one metric say about the intervals added to it. */
struct gpu_metric_acc {
    double area;        /* sum of value x overlap (value-ns): the time-weighted sum */
    int64_t covered_ns; /* the overlap: time inside the intervals that samples measured */
    int64_t touched_ns; /* the whole durations of the samples overlapped */
    double min, max;    /* over the samples overlapped; meaningless while covered_ns is 0 */
};

/* The time-weighted mean, or -1 when no sample covered the intervals (values are >= 0). */
static inline double gpu_metric_acc_mean(const struct gpu_metric_acc *a)
{
    return a->covered_ns > 0 ? a->area / (double)a->covered_ns : -1;
}

/* Sums and extremes of one metric over one block of samples. */
struct gpu_metrics_block {
    double area, min, max;
    int64_t covered_ns;
};

struct gpu_metrics_series {
    int64_t gpu_id;
    size_t count;                     /* samples, sorted by start, disjoint, none of zero length */
    int64_t *start, *end;             /* [start, end) */
    double *values[GPU_METRIC_COUNT]; /* NaN where a set lacks the metric; NULL: no sample has it */
    struct gpu_metrics_block *blocks[GPU_METRIC_COUNT]; /* per GPU_METRICS_BLOCK samples */
    size_t clipped; /* samples that began inside the previous one (two sets of a GPU) */
};

/* Where the last query's first sample was, so that the next, starting no earlier, begins
 * there. Zero-initialised: the first sample. */
struct gpu_metrics_cursor {
    size_t first;
};

/* Loads gpu_id's samples: sorted by start; a sample beginning before the previous one ends
 * (two sets sampling one GPU) starts at that end, or is dropped if nothing is left; samples
 * of zero length carry no time and are dropped. Returns 0, -ENOMEM or -EIO (SQLite: the
 * database's message says why). */
int gpu_metrics_series_load(sqlite3 *db, int64_t gpu_id, struct gpu_metrics_series *s);
void gpu_metrics_series_release(struct gpu_metrics_series *s);

/* Adds what the samples say about [from, to) to acc[metric] for every metric: each sample
 * overlapping it by d ns adds value x d to area, d to covered_ns, its duration to touched_ns,
 * and its value to the extremes. Calls sharing a cursor must come in nondecreasing `from`. */
void gpu_metrics_series_add(const struct gpu_metrics_series *s, struct gpu_metrics_cursor *c,
                            int64_t from, int64_t to, struct gpu_metric_acc *acc);

#endif
