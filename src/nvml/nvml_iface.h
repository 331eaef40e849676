/* The narrow interface between Lantern and NVML: the few NVML types and functions Lantern uses,
 * declared here (nvml.h is not needed to build), a table of function pointers filled with
 * dlopen, and GPU selection by CUDA index or UUID honouring CUDA_VISIBLE_DEVICES. */
#ifndef LANTERN_NVML_IFACE_H
#define LANTERN_NVML_IFACE_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVML's ABI, as far as Lantern uses it (checked against nvml.h by
 *      tests/gpu_energy/check_nvml_decls.c on a machine that has it) ------------------------- */

typedef int nvml_return_t; /* nvmlReturn_t: an int-sized enum */
typedef struct nvml_device_st *nvml_device_t;

enum {
    NVML_OK = 0, /* NVML_SUCCESS */
    NVML_ERR_UNINITIALIZED = 1,
    NVML_ERR_INVALID_ARGUMENT = 2,
    NVML_ERR_NOT_SUPPORTED = 3,
    NVML_ERR_NO_PERMISSION = 4,
    NVML_ERR_NOT_FOUND = 6,
    NVML_ERR_DRIVER_NOT_LOADED = 9,
    NVML_ERR_GPU_IS_LOST = 15,
    NVML_ERR_UNKNOWN = 999,
};

enum { NVML_CLOCK_KIND_SM = 1, NVML_CLOCK_KIND_MEM = 2 }; /* nvmlClockType_t */
enum { NVML_TEMPERATURE_SENSOR_GPU = 0 };                 /* nvmlTemperatureSensors_t */
/* nvmlFieldValue_t field ids: the energy counter (mJ) and instantaneous power (mW, no
 * averaging window) */
enum { NVML_FIELD_TOTAL_ENERGY = 83, NVML_FIELD_POWER_INSTANT = 186 };
enum { NVML_VALUE_KIND_UINT = 1 };

union nvml_value { /* nvmlValue_t */
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
};

struct nvml_field_value { /* nvmlFieldValue_t */
    unsigned int field_id;
    unsigned int scope_id;  /* power fields: 0 = GPU only */
    long long timestamp_us; /* CLOCK_REALTIME µs of the driver's reading */
    long long latency_us;
    int value_type; /* nvmlValueType_t */
    nvml_return_t status;
    union nvml_value value;
};

struct nvml_utilization {
    unsigned int gpu, memory;
}; /* nvmlUtilization_t */
struct nvml_memory {
    unsigned long long total, free, used;
}; /* nvmlMemory_t (v1) */

/* GPU Performance Monitoring (GPM, Hopper and later): two samples of a GPU's counters give
 * metrics over the time between them (nvmlGpmMetricsGet). */
typedef struct {
    void *handle;
} nvml_gpm_sample_t; /* nvmlGpmSample_t, by value */

struct nvml_gpm_metric { /* nvmlGpmMetric_t */
    unsigned int metric_id; /* nvmlGpmMetricId_t: src/trace/gpu_metrics.def's GPM ids */
    nvml_return_t status;
    double value;
    struct {
        char *short_name, *long_name, *unit;
    } info;
};

#define NVML_GPM_METRICS_MAX 210 /* nvml.h 12.x and 13.x: NVML_GPM_METRIC_MAX, as sized there */
struct nvml_gpm_metrics_get {   /* nvmlGpmMetricsGet_t, version 1 */
    unsigned int version;       /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int num_metrics;
    nvml_gpm_sample_t sample1, sample2;
    struct nvml_gpm_metric metrics[NVML_GPM_METRICS_MAX];
};
#define NVML_GPM_METRICS_GET_VERSION 1

struct nvml_gpm_support { /* nvmlGpmSupport_t, version 1 */
    unsigned int version, is_supported_device;
};
#define NVML_GPM_SUPPORT_VERSION 1

/* The NVML entry points Lantern calls. Optional ones may be NULL (older drivers). */
struct nvml_api {
    nvml_return_t (*init)(void); /* nvmlInit_v2 */
    nvml_return_t (*shutdown)(void);
    const char *(*error_string)(nvml_return_t);
    nvml_return_t (*device_count)(unsigned int *);                   /* _v2 */
    nvml_return_t (*handle_by_index)(unsigned int, nvml_device_t *); /* _v2 */
    nvml_return_t (*uuid)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*name)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*mig_mode)(nvml_device_t, unsigned int *, unsigned int *);     /* optional */
    nvml_return_t (*power_usage)(nvml_device_t, unsigned int *);                  /* averaged, mW */
    nvml_return_t (*field_values)(nvml_device_t, int, struct nvml_field_value *); /* optional */
    nvml_return_t (*total_energy)(nvml_device_t, unsigned long long *);           /* mJ; optional */
    nvml_return_t (*power_limit)(nvml_device_t, unsigned int *);                  /* enforced, mW */
    nvml_return_t (*clock)(nvml_device_t, int, unsigned int *);                   /* current, MHz */
    nvml_return_t (*utilization)(nvml_device_t, struct nvml_utilization *);
    nvml_return_t (*memory)(nvml_device_t, struct nvml_memory *);
    nvml_return_t (*temperature)(nvml_device_t, int, unsigned int *);
    nvml_return_t (*clock_reasons)(nvml_device_t, unsigned long long *); /* optional */
    /* GPM, all optional (drivers before 520 lack them) */
    nvml_return_t (*gpm_query_support)(nvml_device_t, struct nvml_gpm_support *);
    nvml_return_t (*gpm_sample_alloc)(nvml_gpm_sample_t *);
    nvml_return_t (*gpm_sample_free)(nvml_gpm_sample_t);
    nvml_return_t (*gpm_sample_get)(nvml_device_t, nvml_gpm_sample_t);
    nvml_return_t (*gpm_metrics_get)(struct nvml_gpm_metrics_get *);
};

/* ---- Lantern's side ------------------------------------------------------------------------ */

#define NVML_MAX_GPUS 64
#define NVML_UUID_LEN 96
#define NVML_NAME_LEN 96

/* One GPU as Lantern sees it. */
struct nvml_gpu {
    nvml_device_t device;
    unsigned int nvml_index; /* NVML's (physical) index */
    int cuda_index;          /* index in this process's CUDA numbering, -1: hidden */
    char uuid[NVML_UUID_LEN];
    char name[NVML_NAME_LEN];
    unsigned int power_limit_mw;     /* 0: unknown */
    unsigned long long memory_bytes; /* 0: unknown */
    int has_energy_counter;          /* nvmlDeviceGetTotalEnergyConsumption works (Volta+) */
    int has_instant_power;           /* NVML_FI_DEV_POWER_INSTANT works */
};

/* A loaded NVML: the function table and the GPUs. */
struct nvml {
    void *library; /* dlopen handle */
    struct nvml_api api;
    unsigned int gpu_count; /* all GPUs NVML sees */
    struct nvml_gpu gpus[NVML_MAX_GPUS];
    char disabled_reason[256]; /* why NVML cannot be used; "" when it can */
};

/* Loads NVML from $LANTERN_NVML_LIBRARY or libnvidia-ml.so.1, initialises it and lists the
 * GPUs. Returns 0, or a negative errno (-ENOENT not found, -ENOSYS too old, -EIO an NVML
 * error, -ENODEV no GPU) with n->disabled_reason saying why in one line ("NVML not found
 * (libnvidia-ml.so.1: cannot open ...)", "no permission to read GPU power", "no NVIDIA GPU").
 * On failure nothing stays loaded; nvml_close is still safe to call. */
int nvml_open(struct nvml *n);
void nvml_close(struct nvml *n);

/* Chooses GPUs. spec is NULL or "" (every GPU visible to CUDA), or a comma-separated list of
 * CUDA indices (as the program sees them, i.e. after CUDA_VISIBLE_DEVICES) or UUIDs (full
 * or a unique prefix, as CUDA_VISIBLE_DEVICES accepts). Fills out[] with indexes into
 * n->gpus (at most max) and returns how many, or -ENODEV, -EINVAL or -EOPNOTSUPP with why[]
 * set ("GPU 3 does not exist (2 GPUs visible)", MIG instance: not supported). */
int nvml_select(struct nvml *n, const char *spec, unsigned int *out, unsigned int max, char *why,
                size_t why_len);

/* Reads instant power (mW). Falls back to the averaged value when the GPU has no instant
 * field. Returns 0 or an NVML error code. */
int nvml_read_power(const struct nvml *n, const struct nvml_gpu *g, unsigned int *mw);

/* CLOCK_MONOTONIC nanoseconds, the clock of every Lantern timestamp. */
uint64_t nvml_now_ns(void);

#endif
