/* Compiled (not run) where nvml.h exists: proves that the NVML types, constants and
 * signatures declared in src/nvml/nvml_iface.h match NVIDIA's header. Every assertion is at
 * compile time; `cc -fsyntax-only -I<cuda>/include -Isrc check_nvml_decls.c` passes or fails. */
#include "nvml/nvml_iface.h"
#include <nvml.h>
#include <stddef.h>

#define SAME_TYPE(a, b) __builtin_types_compatible_p(__typeof__(a), b)
#define CHECK(cond) _Static_assert(cond, #cond)
/* enum constants are compared as ints: the two headers' enum types differ by design */

CHECK(sizeof(nvmlReturn_t) == sizeof(nvml_return_t));
CHECK(sizeof(nvmlDevice_t) == sizeof(nvml_device_t));
CHECK((int)NVML_SUCCESS == NVML_OK && (int)NVML_ERROR_UNINITIALIZED == NVML_ERR_UNINITIALIZED);
CHECK((int)NVML_ERROR_INVALID_ARGUMENT == NVML_ERR_INVALID_ARGUMENT);
CHECK((int)NVML_ERROR_NOT_SUPPORTED == NVML_ERR_NOT_SUPPORTED);
CHECK((int)NVML_ERROR_NO_PERMISSION == NVML_ERR_NO_PERMISSION);
CHECK((int)NVML_ERROR_NOT_FOUND == NVML_ERR_NOT_FOUND);
CHECK((int)NVML_ERROR_DRIVER_NOT_LOADED == NVML_ERR_DRIVER_NOT_LOADED);
CHECK((int)NVML_ERROR_GPU_IS_LOST == NVML_ERR_GPU_IS_LOST && (int)NVML_ERROR_UNKNOWN == NVML_ERR_UNKNOWN);
CHECK((int)NVML_CLOCK_SM == NVML_CLOCK_KIND_SM && (int)NVML_CLOCK_MEM == NVML_CLOCK_KIND_MEM);
CHECK((int)NVML_TEMPERATURE_GPU == NVML_TEMPERATURE_SENSOR_GPU);
CHECK(NVML_FI_DEV_POWER_INSTANT == NVML_FIELD_POWER_INSTANT);
CHECK(NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION == NVML_FIELD_TOTAL_ENERGY);
CHECK((int)NVML_VALUE_TYPE_UNSIGNED_INT == NVML_VALUE_KIND_UINT);

CHECK(sizeof(nvmlValue_t) == sizeof(union nvml_value));
CHECK(sizeof(nvmlFieldValue_t) == sizeof(struct nvml_field_value));
CHECK(offsetof(nvmlFieldValue_t, fieldId) == offsetof(struct nvml_field_value, field_id));
CHECK(offsetof(nvmlFieldValue_t, scopeId) == offsetof(struct nvml_field_value, scope_id));
CHECK(offsetof(nvmlFieldValue_t, timestamp) == offsetof(struct nvml_field_value, timestamp_us));
CHECK(offsetof(nvmlFieldValue_t, latencyUsec) == offsetof(struct nvml_field_value, latency_us));
CHECK(offsetof(nvmlFieldValue_t, valueType) == offsetof(struct nvml_field_value, value_type));
CHECK(offsetof(nvmlFieldValue_t, nvmlReturn) == offsetof(struct nvml_field_value, status));
CHECK(offsetof(nvmlFieldValue_t, value) == offsetof(struct nvml_field_value, value));
CHECK(sizeof(nvmlUtilization_t) == sizeof(struct nvml_utilization));
CHECK(offsetof(nvmlUtilization_t, memory) == offsetof(struct nvml_utilization, memory));
CHECK(sizeof(nvmlMemory_t) == sizeof(struct nvml_memory));
CHECK(offsetof(nvmlMemory_t, used) == offsetof(struct nvml_memory, used));

/* The signatures, written in nvml.h's vocabulary; the layout checks above map them to ours. */
CHECK(SAME_TYPE(nvmlInit_v2, nvmlReturn_t(void)));
CHECK(SAME_TYPE(nvmlShutdown, nvmlReturn_t(void)));
CHECK(SAME_TYPE(nvmlErrorString, const char *(nvmlReturn_t)));
CHECK(SAME_TYPE(nvmlDeviceGetCount_v2, nvmlReturn_t(unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t(unsigned int, nvmlDevice_t *)));
CHECK(SAME_TYPE(nvmlDeviceGetUUID, nvmlReturn_t(nvmlDevice_t, char *, unsigned int)));
CHECK(SAME_TYPE(nvmlDeviceGetName, nvmlReturn_t(nvmlDevice_t, char *, unsigned int)));
CHECK(SAME_TYPE(nvmlDeviceGetMigMode, nvmlReturn_t(nvmlDevice_t, unsigned int *, unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetPowerUsage, nvmlReturn_t(nvmlDevice_t, unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetFieldValues, nvmlReturn_t(nvmlDevice_t, int, nvmlFieldValue_t *)));
CHECK(SAME_TYPE(nvmlDeviceGetTotalEnergyConsumption,
                nvmlReturn_t(nvmlDevice_t, unsigned long long *)));
CHECK(SAME_TYPE(nvmlDeviceGetEnforcedPowerLimit, nvmlReturn_t(nvmlDevice_t, unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetClockInfo, nvmlReturn_t(nvmlDevice_t, nvmlClockType_t, unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetUtilizationRates, nvmlReturn_t(nvmlDevice_t, nvmlUtilization_t *)));
CHECK(SAME_TYPE(nvmlDeviceGetMemoryInfo, nvmlReturn_t(nvmlDevice_t, nvmlMemory_t *)));
CHECK(SAME_TYPE(nvmlDeviceGetTemperature,
                nvmlReturn_t(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *)));
CHECK(SAME_TYPE(nvmlDeviceGetCurrentClocksEventReasons,
                nvmlReturn_t(nvmlDevice_t, unsigned long long *)));
CHECK(sizeof(nvmlClockType_t) == sizeof(int) && sizeof(nvmlTemperatureSensors_t) == sizeof(int));

/* GPM (src/launcher/gpu_metrics_gpm.c) */
CHECK(sizeof(nvmlGpmSample_t) == sizeof(nvml_gpm_sample_t));
CHECK(sizeof(nvmlGpmMetric_t) == sizeof(struct nvml_gpm_metric));
CHECK(offsetof(nvmlGpmMetric_t, nvmlReturn) == offsetof(struct nvml_gpm_metric, status));
CHECK(offsetof(nvmlGpmMetric_t, value) == offsetof(struct nvml_gpm_metric, value));
CHECK(offsetof(nvmlGpmMetricsGet_t, sample1) == offsetof(struct nvml_gpm_metrics_get, sample1));
CHECK(offsetof(nvmlGpmMetricsGet_t, metrics) == offsetof(struct nvml_gpm_metrics_get, metrics));
CHECK(NVML_GPM_METRIC_MAX <= NVML_GPM_METRICS_MAX);
CHECK(NVML_GPM_METRICS_GET_VERSION == 1 && NVML_GPM_SUPPORT_VERSION == 1);
CHECK(sizeof(nvmlGpmSupport_t) == sizeof(struct nvml_gpm_support));
CHECK(NVML_GPM_METRIC_SM_UTIL == 2 && NVML_GPM_METRIC_SM_OCCUPANCY == 3);
CHECK(NVML_GPM_METRIC_ANY_TENSOR_UTIL == 5 && NVML_GPM_METRIC_DRAM_BW_UTIL == 10);
CHECK(NVML_GPM_METRIC_PCIE_TX_PER_SEC == 20 && NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC == 60);
