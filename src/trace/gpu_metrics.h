/* The GPU hardware metrics of gpu_metrics.def as a table: what the launcher's samplers read,
 * what TRACE_GPU_METRIC_SAMPLE values mean, and the database's gpu_metric_samples columns. */
#ifndef LANTERN_TRACE_GPU_METRICS_H
#define LANTERN_TRACE_GPU_METRICS_H

#include <stdint.h>

enum gpu_metric_id {
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition) GPU_METRIC_##ID,
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
    GPU_METRIC_COUNT
};

struct gpu_metric {
    const char *column;     /* gpu_metric_samples column, --gpu-metrics name */
    const char *unit;       /* "%" or "B/s" */
    unsigned int gpm_id;    /* nvmlGpmMetricId_t, 0: GPM has none */
    double gpm_scale;       /* GPM value x scale = the value in unit */
    const char *cupti;      /* PM-sampling candidates: "a|b+c" */
    const char *definition; /* one sentence, for docs and --help */
};

extern const struct gpu_metric gpu_metrics[GPU_METRIC_COUNT];

/* 1 when the metric's unit is a percentage (stored x TRACE_GPU_METRIC_PERCENT_SCALE). */
int gpu_metric_is_percent(enum gpu_metric_id id);

/* A value in the metric's unit as TRACE_GPU_METRIC_SAMPLE stores it, and back. */
uint64_t gpu_metric_encode(enum gpu_metric_id id, double value);
double gpu_metric_decode(enum gpu_metric_id id, uint64_t stored);

/* The mask of the metrics named in a comma-separated list of columns ("all": every one), or
 * 0 with *bad set to the first unknown name (pointing into list, up to its comma). */
uint32_t gpu_metrics_parse(const char *list, const char **bad);

#endif
