// Compiled, not run (ctest check_cupti_host_decls: `c++ -fsyntax-only`): proves that the
// structs src/launcher/gpu_metrics_pm.h declares for cupti_profiler_host.h, which C cannot
// include, have the header's layout. Every assertion is at compile time.
#include <cupti_profiler_host.h>
#include <cstddef>

extern "C" {
#include "launcher/gpu_metrics_pm.h"
}


#define LAYOUT(ours, field, theirs, their_field)                                                  \
    static_assert(offsetof(struct ours, field) == offsetof(theirs, their_field),                \
                  #ours "." #field)

static_assert(PM_HOST_PM_SAMPLING == CUPTI_PROFILER_TYPE_PM_SAMPLING, "profiler type");
static_assert(sizeof(struct pm_host_initialize) == CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE, "init");
LAYOUT(pm_host_initialize, profiler_type, CUpti_Profiler_Host_Initialize_Params, profilerType);
LAYOUT(pm_host_initialize, chip, CUpti_Profiler_Host_Initialize_Params, pChipName);
LAYOUT(pm_host_initialize, counter_availability, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
LAYOUT(pm_host_initialize, host, CUpti_Profiler_Host_Initialize_Params, pHostObject);
static_assert(sizeof(struct pm_host_deinitialize) == CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, "deinit");
LAYOUT(pm_host_deinitialize, host, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
static_assert(sizeof(struct pm_host_add_metrics) == CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, "add");
LAYOUT(pm_host_add_metrics, names, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
LAYOUT(pm_host_add_metrics, count, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
static_assert(sizeof(struct pm_host_config_size) == CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE, "size");
LAYOUT(pm_host_config_size, size, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
static_assert(sizeof(struct pm_host_config) == CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, "config");
LAYOUT(pm_host_config, size, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
LAYOUT(pm_host_config, image, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
static_assert(sizeof(struct pm_host_passes) == CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE, "passes");
LAYOUT(pm_host_passes, size, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize);
LAYOUT(pm_host_passes, image, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
LAYOUT(pm_host_passes, passes, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
static_assert(sizeof(struct pm_host_evaluate) == CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE, "evaluate");
LAYOUT(pm_host_evaluate, counter_data, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
LAYOUT(pm_host_evaluate, counter_data_size, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize);
LAYOUT(pm_host_evaluate, sample, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
LAYOUT(pm_host_evaluate, names, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
LAYOUT(pm_host_evaluate, count, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
LAYOUT(pm_host_evaluate, values, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);

// The fields every struct shares, and the host handles, at the header's offsets too (with the
// sizes above, the whole layout: every field is checked).
#define COMMON(ours, theirs)                                                                       \
    LAYOUT(ours, struct_size, theirs, structSize);                                              \
    LAYOUT(ours, priv, theirs, pPriv)
COMMON(pm_host_initialize, CUpti_Profiler_Host_Initialize_Params);
COMMON(pm_host_deinitialize, CUpti_Profiler_Host_Deinitialize_Params);
COMMON(pm_host_add_metrics, CUpti_Profiler_Host_ConfigAddMetrics_Params);
COMMON(pm_host_config_size, CUpti_Profiler_Host_GetConfigImageSize_Params);
COMMON(pm_host_config, CUpti_Profiler_Host_GetConfigImage_Params);
COMMON(pm_host_passes, CUpti_Profiler_Host_GetNumOfPasses_Params);
COMMON(pm_host_evaluate, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
LAYOUT(pm_host_add_metrics, host, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject);
LAYOUT(pm_host_config_size, host, CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject);
LAYOUT(pm_host_config, host, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject);
LAYOUT(pm_host_evaluate, host, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
static_assert(sizeof(((struct pm_host_initialize *)0)->profiler_type) ==
                  sizeof(CUpti_ProfilerType), "profiler type's size");
