/* The GPU metric table (gpu_metrics.h), generated from gpu_metrics.def, and the one encoding
 * of a metric's value in the raw trace. */
#include "trace/gpu_metrics.h"
#include "trace/format.h"
#include "trace/records.h"

#include <math.h>
#include <string.h>

_Static_assert(GPU_METRIC_COUNT <= TRACE_U_LIST_MAX, "a sample's values are one ul field");
_Static_assert(GPU_METRIC_COUNT <= 32, "a set's mask is 32 bits");

const struct gpu_metric gpu_metrics[GPU_METRIC_COUNT] = {
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition)                         \
    [GPU_METRIC_##ID] = {column, unit, gpm_id, gpm_scale, cupti, definition},
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
};

int gpu_metric_is_percent(enum gpu_metric_id id)
{
    return strcmp(gpu_metrics[id].unit, "%") == 0;
}

uint64_t gpu_metric_encode(enum gpu_metric_id id, double value)
{
    if (gpu_metric_is_percent(id))
        value *= TRACE_GPU_METRIC_PERCENT_SCALE;
    if (!(value > 0)) /* negative readings and NaN */
        return 0;
    if (value >= 1.8e19)
        return UINT64_MAX;
    return (uint64_t)llround(value);
}

double gpu_metric_decode(enum gpu_metric_id id, uint64_t stored)
{
    double v = (double)stored;
    return gpu_metric_is_percent(id) ? v / TRACE_GPU_METRIC_PERCENT_SCALE : v;
}

uint32_t gpu_metrics_parse(const char *list, const char **bad)
{
    uint32_t mask = 0;
    *bad = NULL;
    if (!list || !*list || strcmp(list, "all") == 0)
        return (1u << GPU_METRIC_COUNT) - 1;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < GPU_METRIC_COUNT; i++)
            if (strlen(gpu_metrics[i].column) == len && !strncmp(gpu_metrics[i].column, p, len))
                found = i;
        if (found < 0) {
            *bad = p;
            return 0;
        }
        mask |= 1u << found;
        p += len + (p[len] == ',');
    }
    return mask;
}
