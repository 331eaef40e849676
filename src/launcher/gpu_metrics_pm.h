/* CUPTI PM sampling for the launcher's GPU metric sampler (gpu_metrics_pm.c): libcupti loaded
 * with dlopen behind a table of the functions used, the part of CUPTI's host API that C
 * cannot include (cupti_profiler_host.h includes <string>: its structs are declared here, as
 * the header lays them out; tests/launcher/check_cupti_host_decls.cpp compares them), and the
 * choice of hardware metrics for a chip. The target-side headers are C and used as they are. */
#ifndef LANTERN_LAUNCHER_GPU_METRICS_PM_H
#define LANTERN_LAUNCHER_GPU_METRICS_PM_H

#include "trace/gpu_metrics.h"

#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <stddef.h>
#include <stdint.h>

/* ---- cupti_profiler_host.h, as far as Lantern uses it ------------------------------------- */

#define PM_HOST_PM_SAMPLING 1 /* CUpti_ProfilerType CUPTI_PROFILER_TYPE_PM_SAMPLING */

struct pm_host_initialize { /* CUpti_Profiler_Host_Initialize_Params */
    size_t struct_size;
    void *priv;
    int profiler_type;
    const char *chip;
    const uint8_t *counter_availability;
    void *host; /* out: CUpti_Profiler_Host_Object * */
};
struct pm_host_deinitialize { /* CUpti_Profiler_Host_Deinitialize_Params */
    size_t struct_size;
    void *priv;
    void *host;
};
struct pm_host_add_metrics { /* CUpti_Profiler_Host_ConfigAddMetrics_Params */
    size_t struct_size;
    void *priv;
    void *host;
    const char **names;
    size_t count;
};
struct pm_host_config_size { /* CUpti_Profiler_Host_GetConfigImageSize_Params */
    size_t struct_size;
    void *priv;
    void *host;
    size_t size; /* out */
};
struct pm_host_config { /* CUpti_Profiler_Host_GetConfigImage_Params */
    size_t struct_size;
    void *priv;
    void *host;
    size_t size;
    uint8_t *image; /* out */
};
struct pm_host_passes { /* CUpti_Profiler_Host_GetNumOfPasses_Params */
    size_t struct_size;
    void *priv;
    size_t size;
    uint8_t *image;
    size_t passes; /* out */
};
struct pm_host_evaluate { /* CUpti_Profiler_Host_EvaluateToGpuValues_Params */
    size_t struct_size;
    void *priv;
    void *host;
    const uint8_t *counter_data;
    size_t counter_data_size;
    size_t sample; /* rangeIndex */
    const char **names;
    size_t count;
    double *values; /* out */
};

/* ---- the functions, from libcupti (and two from libcuda) --------------------------------- */

struct pm_api {
    void *cupti, *cuda;
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*profiler_initialize)(CUpti_Profiler_Initialize_Params *);
    CUptiResult (*device_supported)(CUpti_Profiler_DeviceSupported_Params *);
    CUptiResult (*chip_name)(CUpti_Device_GetChipName_Params *);
    CUptiResult (*availability)(CUpti_PmSampling_GetCounterAvailability_Params *);
    CUptiResult (*enable)(CUpti_PmSampling_Enable_Params *);
    CUptiResult (*disable)(CUpti_PmSampling_Disable_Params *);
    CUptiResult (*set_config)(CUpti_PmSampling_SetConfig_Params *);
    CUptiResult (*data_size)(CUpti_PmSampling_GetCounterDataSize_Params *);
    CUptiResult (*data_initialize)(CUpti_PmSampling_CounterDataImage_Initialize_Params *);
    CUptiResult (*start)(CUpti_PmSampling_Start_Params *);
    CUptiResult (*stop)(CUpti_PmSampling_Stop_Params *);
    CUptiResult (*decode)(CUpti_PmSampling_DecodeData_Params *);
    CUptiResult (*data_info)(CUpti_PmSampling_GetCounterDataInfo_Params *);
    CUptiResult (*sample_info)(CUpti_PmSampling_CounterData_GetSampleInfo_Params *);
    CUptiResult (*host_initialize)(struct pm_host_initialize *);
    CUptiResult (*host_deinitialize)(struct pm_host_deinitialize *);
    CUptiResult (*host_add_metrics)(struct pm_host_add_metrics *);
    CUptiResult (*host_config_size)(struct pm_host_config_size *);
    CUptiResult (*host_config)(struct pm_host_config *);
    CUptiResult (*host_passes)(struct pm_host_passes *);
    CUptiResult (*host_evaluate)(struct pm_host_evaluate *);
    int (*cu_init)(unsigned int);     /* cuInit; NULL without libcuda */
    int (*cu_device_get)(int *, int); /* cuDeviceGet */
};

/* Loads libcupti ($LANTERN_CUPTI_PATH, libcupti.so.13, $CUDA_HOME's, /usr/local/cuda's: the
 * agent's order) and, when with_cuda, libcuda.so.1. 0, or with why[] set -ENOENT (a library
 * not found) or -ENOSYS (a CUPTI older than 12.6). */
int pm_api_load(struct pm_api *api, int with_cuda, char *why, size_t why_len);
/* The text of a CUPTI result ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"). */
const char *pm_error(const struct pm_api *api, CUptiResult rc);

/* ---- the metrics for one chip ---------------------------------------------------------- */

#define PM_NAMES_MAX (2 * GPU_METRIC_COUNT) /* a metric is one hardware name or a sum of two */
#define PM_NAME_LEN 128

/* What the chip samples in one pass: per metric of gpu_metrics.def in mask, the hardware
 * names (indexes into names[]) whose values add up to it. */
struct pm_choice {
    uint32_t mask; /* the metrics chosen, a subset of those asked for */
    size_t count;  /* distinct hardware names */
    char names[PM_NAMES_MAX][PM_NAME_LEN];
    const char *name_ptrs[PM_NAMES_MAX]; /* into names[], for CUPTI */
    struct {
        unsigned char parts, part[2];
    } sum[GPU_METRIC_COUNT];
    uint32_t refused; /* metrics asked for that no candidate of the chip had */
    uint32_t dropped; /* accepted ones left out so that the set takes one pass */
};

/* Chooses, for the chip (CUPTI's name, GH100) and its counter availability image (NULL: the
 * chip's full list, as on a machine without the GPU), the first candidate of gpu_metrics.def
 * that the chip accepts for each metric asked for in mask, then leaves out metrics from the
 * last row up until the set takes one pass (PM sampling takes no more). 0, or with why[] set
 * -EIO (CUPTI failed), -EOPNOTSUPP (no metric is left) or -ENOSPC (too many names). */
int pm_choose_metrics(const struct pm_api *api, const char *chip, const uint8_t *availability,
                      uint32_t mask, struct pm_choice *out, char *why, size_t why_len);

#endif
