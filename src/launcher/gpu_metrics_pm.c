/* CUPTI PM sampling of one GPU from the launcher (gpu_metrics.h, gpu_metrics_pm.h). CUPTI
 * samples a GPU's performance monitors on a fixed time interval into a hardware buffer in the
 * GPU's memory, from any process: the launcher creates no context and uses no GPU memory of
 * its own (measured on an H200: `nvidia-smi` listed only the program). A thread per GPU
 * decodes the buffer every DECODE_PERIOD_NS into a counter-data image and evaluates each
 * sample's metrics on the CPU (~60 us to decode and ~60 us to evaluate a sample of 13 metrics
 * on the H200 host), then writes them. Sample times are the GPU's global timer, which the driver
 * keeps on CLOCK_REALTIME: they are moved to CLOCK_MONOTONIC with the offset between the two clocks
 * read at each decode. */
#include "launcher/gpu_metrics_pm.h"
#include "launcher/gpu_metrics.h"
#include "nvml/nvml_iface.h"
#include "trace/format.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DECODE_PERIOD_NS 20000000ull /* 100 samples at 5 kHz between decodes */
#define DECODE_ROUNDS_MAX 64         /* decodes in a row while the image fills up */
#define HW_BUFFER_BYTES (64u << 20)  /* in GPU memory; no sample lost at 5 kHz (H200) */

#define PARAMS(type, name) type name = {.structSize = type##_STRUCT_SIZE}
#define HOST_PARAMS(type, name) struct type name = {.struct_size = sizeof(struct type)}

/* ---- libcupti ------------------------------------------------------------------------------ */

struct pm_symbol {
    const char *name;
    size_t offset;
};
#define PM_SYMBOL(field, symbol)                                                                   \
    {                                                                                              \
        symbol, offsetof(struct pm_api, field)                                                     \
    }
static const struct pm_symbol pm_symbols[] = {
    PM_SYMBOL(result_string, "cuptiGetResultString"),
    PM_SYMBOL(profiler_initialize, "cuptiProfilerInitialize"),
    PM_SYMBOL(device_supported, "cuptiProfilerDeviceSupported"),
    PM_SYMBOL(chip_name, "cuptiDeviceGetChipName"),
    PM_SYMBOL(availability, "cuptiPmSamplingGetCounterAvailability"),
    PM_SYMBOL(enable, "cuptiPmSamplingEnable"),
    PM_SYMBOL(disable, "cuptiPmSamplingDisable"),
    PM_SYMBOL(set_config, "cuptiPmSamplingSetConfig"),
    PM_SYMBOL(data_size, "cuptiPmSamplingGetCounterDataSize"),
    PM_SYMBOL(data_initialize, "cuptiPmSamplingCounterDataImageInitialize"),
    PM_SYMBOL(start, "cuptiPmSamplingStart"),
    PM_SYMBOL(stop, "cuptiPmSamplingStop"),
    PM_SYMBOL(decode, "cuptiPmSamplingDecodeData"),
    PM_SYMBOL(data_info, "cuptiPmSamplingGetCounterDataInfo"),
    PM_SYMBOL(sample_info, "cuptiPmSamplingCounterDataGetSampleInfo"),
    PM_SYMBOL(host_initialize, "cuptiProfilerHostInitialize"),
    PM_SYMBOL(host_deinitialize, "cuptiProfilerHostDeinitialize"),
    PM_SYMBOL(host_add_metrics, "cuptiProfilerHostConfigAddMetrics"),
    PM_SYMBOL(host_config_size, "cuptiProfilerHostGetConfigImageSize"),
    PM_SYMBOL(host_config, "cuptiProfilerHostGetConfigImage"),
    PM_SYMBOL(host_passes, "cuptiProfilerHostGetNumOfPasses"),
    PM_SYMBOL(host_evaluate, "cuptiProfilerHostEvaluateToGpuValues"),
};

/* Opens path and fills every CUPTI entry point; 0, or with why[] set -ENOENT (no library) or
 * -ENOSYS (one too old). */
static int pm_bind(struct pm_api *api, const char *path, char *why, size_t why_len)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(why, why_len, "cannot load CUPTI: %s", dlerror());
        return -ENOENT;
    }
    for (size_t i = 0; i < sizeof pm_symbols / sizeof pm_symbols[0]; i++) {
        void *fn = dlsym(handle, pm_symbols[i].name);
        if (!fn) {
            snprintf(why, why_len, "%s has no %s (PM sampling needs CUPTI 12.6 or newer)", path,
                     pm_symbols[i].name);
            dlclose(handle);
            return -ENOSYS;
        }
        memcpy((char *)api + pm_symbols[i].offset, &fn, sizeof fn);
    }
    api->cupti = handle;
    return 0;
}

int pm_api_load(struct pm_api *api, int with_cuda, char *why, size_t why_len)
{
    memset(api, 0, sizeof *api);
    const char *explicit_path = getenv("LANTERN_CUPTI_PATH");
    const char *cuda_home = getenv("CUDA_HOME");
    char paths[3][4096];
    int n = 0;
    if (explicit_path && *explicit_path) {
        snprintf(paths[n++], sizeof paths[0], "%s", explicit_path);
    } else {
        snprintf(paths[n++], sizeof paths[0], "libcupti.so.13");
        if (cuda_home && *cuda_home)
            snprintf(paths[n++], sizeof paths[0], "%s/extras/CUPTI/lib64/libcupti.so", cuda_home);
        snprintf(paths[n++], sizeof paths[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
    }
    int loaded = -ENOENT;
    for (int i = 0; i < n && loaded < 0; i++)
        loaded = pm_bind(api, paths[i], why, why_len);
    if (loaded < 0 || !with_cuda)
        return loaded;
    if (!(api->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) ||
        !(*(void **)&api->cu_init = dlsym(api->cuda, "cuInit")) ||
        !(*(void **)&api->cu_device_get = dlsym(api->cuda, "cuDeviceGet"))) {
        snprintf(why, why_len, "no CUDA driver (libcuda.so.1)");
        return -ENOENT;
    }
    return 0;
}

const char *pm_error(const struct pm_api *api, CUptiResult rc)
{
    const char *text = NULL;
    if (api->result_string && api->result_string(rc, &text) == CUPTI_SUCCESS && text)
        return text;
    return "CUPTI error";
}

/* ---- the metrics for one chip -------------------------------------------------------------- */

struct pm_host {
    const struct pm_api *api;
    void *object;
};

static CUptiResult host_open(struct pm_host *h, const struct pm_api *api, const char *chip,
                             const uint8_t *availability)
{
    HOST_PARAMS(pm_host_initialize, p);
    p.profiler_type = PM_HOST_PM_SAMPLING;
    p.chip = chip;
    p.counter_availability = availability;
    h->api = api;
    CUptiResult rc = api->host_initialize(&p);
    h->object = rc == CUPTI_SUCCESS ? p.host : NULL;
    return rc;
}

static void host_close(struct pm_host *h)
{
    if (!h->object)
        return;
    HOST_PARAMS(pm_host_deinitialize, p);
    p.host = h->object;
    h->api->host_deinitialize(&p);
    h->object = NULL;
}

/* Adds names to the open host object h and makes its config image (malloc'd, in *image);
 * its passes in *passes. */
static CUptiResult host_add_config(struct pm_host *h, const char **names, size_t count,
                                   uint8_t **image, size_t *size, size_t *passes)
{
    const struct pm_api *api = h->api;
    HOST_PARAMS(pm_host_add_metrics, add);
    HOST_PARAMS(pm_host_config_size, cs);
    HOST_PARAMS(pm_host_config, cfg);
    HOST_PARAMS(pm_host_passes, np);
    CUptiResult rc;
    *image = NULL;
    add.host = cs.host = cfg.host = h->object;
    add.names = names;
    add.count = count;
    if ((rc = api->host_add_metrics(&add)) != CUPTI_SUCCESS ||
        (rc = api->host_config_size(&cs)) != CUPTI_SUCCESS)
        goto out;
    if (!(cfg.image = malloc(cs.size))) {
        rc = CUPTI_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    cfg.size = cs.size;
    if ((rc = api->host_config(&cfg)) != CUPTI_SUCCESS)
        goto out;
    np.size = cfg.size;
    np.image = cfg.image;
    if ((rc = api->host_passes(&np)) != CUPTI_SUCCESS)
        goto out;
    *image = cfg.image;
    *size = cfg.size;
    *passes = np.passes;
    cfg.image = NULL;
out:
    free(cfg.image);
    return rc;
}

/* The config image of names on a fresh host object; its passes in *passes. */
static CUptiResult host_config(const struct pm_api *api, const char *chip,
                               const uint8_t *availability, const char **names, size_t count,
                               uint8_t **image, size_t *size, size_t *passes)
{
    struct pm_host h;
    CUptiResult rc = host_open(&h, api, chip, availability);
    *image = NULL;
    if (rc != CUPTI_SUCCESS)
        return rc;
    rc = host_add_config(&h, names, count, image, size, passes);
    host_close(&h);
    return rc;
}

/* 1 when the chip accepts the hardware metric on its own. */
static int accepted(const struct pm_api *api, const char *chip, const uint8_t *availability,
                    const char *name)
{
    struct pm_host h;
    if (host_open(&h, api, chip, availability) != CUPTI_SUCCESS)
        return 0;
    HOST_PARAMS(pm_host_add_metrics, add);
    add.host = h.object;
    add.names = &name;
    add.count = 1;
    int ok = api->host_add_metrics(&add) == CUPTI_SUCCESS;
    host_close(&h);
    return ok;
}

/* The index of name in c->names, added when new; -1 when full. */
static int name_index(struct pm_choice *c, const char *name)
{
    for (size_t i = 0; i < c->count; i++)
        if (!strcmp(c->names[i], name))
            return (int)i;
    if (c->count == PM_NAMES_MAX)
        return -1;
    snprintf(c->names[c->count], PM_NAME_LEN, "%s", name);
    c->name_ptrs[c->count] = c->names[c->count];
    return (int)c->count++;
}

/* Each metric's hardware names: the parts of its first candidate the chip accepts. */
struct pm_candidates {
    char part[GPU_METRIC_COUNT][2][PM_NAME_LEN];
    int parts[GPU_METRIC_COUNT]; /* 0: no candidate accepted */
};

/* Tries metric m's candidates ("a|b+c") in order; keeps the first whose parts the chip all
 * accepts. */
static void choose_candidate(const struct pm_api *api, const char *chip,
                             const uint8_t *availability, int m, struct pm_candidates *k)
{
    for (const char *cand = gpu_metrics[m].cupti; *cand && !k->parts[m];) {
        size_t cand_len = strcspn(cand, "|");
        int n = 0, ok = 1;
        for (const char *p = cand; p < cand + cand_len && ok;) {
            size_t len = strcspn(p, "+|");
            ok = n < 2 && len < PM_NAME_LEN;
            if (ok) {
                memcpy(k->part[m][n], p, len);
                k->part[m][n][len] = 0;
                ok = accepted(api, chip, availability, k->part[m][n++]);
            }
            p += len + (p[len] == '+');
        }
        if (ok)
            k->parts[m] = n;
        cand += cand_len + (cand[cand_len] == '|');
    }
}

/* c->names and c->sum for the metrics of c->mask. 0, or -ENOSPC when the names do not fit. */
static int build_names(struct pm_choice *c, const struct pm_candidates *k)
{
    c->count = 0;
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        if (!(c->mask & (1u << m)))
            continue;
        c->sum[m].parts = (unsigned char)k->parts[m];
        for (int i = 0; i < k->parts[m]; i++) {
            int index = name_index(c, k->part[m][i]);
            if (index < 0)
                return -ENOSPC;
            c->sum[m].part[i] = (unsigned char)index;
        }
    }
    return 0;
}

int pm_choose_metrics(const struct pm_api *api, const char *chip, const uint8_t *availability,
                      uint32_t mask, struct pm_choice *c, char *why, size_t why_len)
{
    struct pm_candidates k;
    memset(c, 0, sizeof *c);
    memset(&k, 0, sizeof k);
    uint32_t accepted_mask = 0;
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        if (!(mask & (1u << m)))
            continue;
        choose_candidate(api, chip, availability, m, &k);
        if (k.parts[m])
            accepted_mask |= 1u << m;
        else
            c->refused |= 1u << m;
    }
    /* One pass: in order of importance, each metric joins the set if the set still takes one
     * pass with it (on GA100 sm_issue and warp_occupancy do not fit together: the occupancy,
     * which the tutorial reads, goes first). */
    static const int importance[GPU_METRIC_COUNT] = {
        GPU_METRIC_GR_ACTIVE,     GPU_METRIC_SM_ACTIVE,   GPU_METRIC_WARP_OCCUPANCY,
        GPU_METRIC_TENSOR_ACTIVE, GPU_METRIC_DRAM_READ,   GPU_METRIC_DRAM_WRITE,
        GPU_METRIC_DRAM_BW,       GPU_METRIC_PCIE_RX,     GPU_METRIC_PCIE_TX,
        GPU_METRIC_TENSOR_HMMA,   GPU_METRIC_TENSOR_IMMA, GPU_METRIC_TENSOR_DMMA,
        GPU_METRIC_SM_ISSUE,      GPU_METRIC_NVLINK_RX,   GPU_METRIC_NVLINK_TX,
    };
    for (int i = 0; i < GPU_METRIC_COUNT; i++) {
        int m = importance[i];
        if (!(accepted_mask & (1u << m)))
            continue;
        c->mask |= 1u << m;
        uint8_t *image = NULL;
        size_t size, passes = 0;
        CUptiResult rc = build_names(c, &k) < 0 ? CUPTI_ERROR_INVALID_PARAMETER
                                                : host_config(api, chip, availability, c->name_ptrs,
                                                              c->count, &image, &size, &passes);
        free(image);
        if (rc != CUPTI_SUCCESS) {
            snprintf(why, why_len, "CUPTI cannot configure the %s's metrics: %s", chip,
                     pm_error(api, rc));
            return -EIO;
        }
        if (passes != 1) {
            c->mask &= ~(1u << m);
            c->dropped |= 1u << m;
        }
    }
    if (!c->mask) {
        snprintf(why, why_len, "the %s accepts none of the metrics asked for", chip);
        return -EOPNOTSUPP;
    }
    return build_names(c, &k);
}

/* ---- sampling one GPU ------------------------------------------------------------------- */

struct pm_gpu {
    struct gpu_metrics_target t;
    const struct pm_api *api;
    struct pm_choice choice;
    struct pm_host host;
    CUpti_PmSampling_Object *object;
    /* What CUPTI was handed by pointer, alive until the object it was handed to is gone (the
     * API promises no copy; NVIDIA's pm_sampling sample keeps all three for the whole run):
     * the host object's chip name and counter availability image, the sampler's config. */
    char chip[64];
    uint8_t *availability;
    uint8_t *config;
    uint8_t *data, *blank; /* the counter-data image, and a fresh one to reset it from */
    size_t data_size;
    double *values; /* per hardware name, for one sample */
    struct gpu_metrics_thread th;
    int64_t offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, this decode's */
    int overflowed;
};

static struct {
    pthread_once_t once;
    struct pm_api api;
    CUptiResult init_rc;
    char why[256];
    pthread_mutex_t setup; /* one GPU's CUPTI set-up at a time */
} pm = {PTHREAD_ONCE_INIT, .setup = PTHREAD_MUTEX_INITIALIZER};

static void pm_global_init(void)
{
    if (pm_api_load(&pm.api, 1, pm.why, sizeof pm.why) < 0)
        return;
    if (pm.api.cu_init(0) != 0) {
        snprintf(pm.why, sizeof pm.why, "cuInit failed: no usable NVIDIA GPU");
        return;
    }
    PARAMS(CUpti_Profiler_Initialize_Params, p);
    if ((pm.init_rc = pm.api.profiler_initialize(&p)) != CUPTI_SUCCESS)
        snprintf(pm.why, sizeof pm.why, "cuptiProfilerInitialize: %s",
                 pm_error(&pm.api, pm.init_rc));
}

/* The status code for a CUPTI failure. */
static unsigned int status_of(CUptiResult rc)
{
    switch (rc) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return TRACE_GPU_METRICS_NOT_PERMITTED;
    case CUPTI_ERROR_HARDWARE_BUSY:
        return TRACE_GPU_METRICS_BUSY;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
        return TRACE_GPU_METRICS_UNAVAILABLE;
    default:
        return TRACE_GPU_METRICS_FAILED;
    }
}

/* Why a failure happened, in words a user can act on. */
static void explain(struct pm_gpu *g, const char *what, CUptiResult rc, char *why, size_t len)
{
    const char *hint = "";
    if (rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        hint = " (GPU performance counters are restricted to administrators: run as root, or "
               "load the driver with NVreg_RestrictProfilingToAdminUsers=0)";
    else if (rc == CUPTI_ERROR_HARDWARE_BUSY)
        hint = " (another profiler holds the GPU's counters: ncu, nsys, DCGM profiling)";
    snprintf(why, len, "%s: %s%s", what, pm_error(g->api, rc), hint);
}

/* Why the device cannot be profiled, from cuptiProfilerDeviceSupported; "" when it can. */
static void device_support(struct pm_gpu *g, char *why, size_t len)
{
    int device = 0;
    why[0] = 0;
    if (g->api->cu_device_get(&device, g->t.cuda_index) != 0)
        return; /* Enable will say */
    PARAMS(CUpti_Profiler_DeviceSupported_Params, p);
    p.cuDevice = device;
    p.api = CUPTI_PROFILER_PM_SAMPLING;
    if (g->api->device_supported(&p) != CUPTI_SUCCESS ||
        p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return;
    snprintf(why, len, "PM sampling is not supported here (%s)",
             p.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "GPU too old: Turing or "
                                                                        "later is needed"
             : p.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED       ? "a vGPU without profiling"
             : p.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                 ? "confidential computing is on"
             : p.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "SLI"
             : p.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "a mining GPU"
             : p.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "WSL"
                                                               : "the driver says so");
}

/* Evaluates and writes the image's completed samples. 0, or a CUPTI error. */
static CUptiResult put_samples(struct pm_gpu *g, size_t completed)
{
    const struct pm_choice *c = &g->choice;
    for (size_t i = 0; i < completed; i++) {
        PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, si);
        si.pPmSamplingObject = g->object;
        si.pCounterDataImage = g->data;
        si.counterDataImageSize = g->data_size;
        si.sampleIndex = i;
        CUptiResult rc = g->api->sample_info(&si);
        if (rc != CUPTI_SUCCESS)
            return rc;
        if (si.endTimestamp <= si.startTimestamp)
            continue; /* no time, no weight: seen at the start and at buffer wraps */
        HOST_PARAMS(pm_host_evaluate, ev);
        ev.host = g->host.object;
        ev.counter_data = g->data;
        ev.counter_data_size = g->data_size;
        ev.sample = i;
        ev.names = (const char **)c->name_ptrs;
        ev.count = c->count;
        ev.values = g->values;
        if ((rc = g->api->host_evaluate(&ev)) != CUPTI_SUCCESS)
            return rc;
        struct trace_gpu_metric_sample r = {
            .set_id = g->t.set_id,
            .start = (uint64_t)((int64_t)si.startTimestamp - g->offset_ns),
            .end = (uint64_t)((int64_t)si.endTimestamp - g->offset_ns),
        };
        for (int m = 0; m < GPU_METRIC_COUNT; m++) {
            if (!(c->mask & (1u << m)))
                continue;
            double v = 0;
            for (int p = 0; p < c->sum[m].parts; p++)
                v += g->values[c->sum[m].part[p]];
            r.values.values[r.values.count++] = gpu_metric_encode(m, v);
        }
        gpu_metrics_thread_count(&g->th, r.start, r.end, g->t.period_ns);
        gpu_metrics_put_sample(g->t.sink, &r);
    }
    return CUPTI_SUCCESS;
}

/* Decodes what the hardware buffer holds, in rounds while the image fills up (all of it when
 * final). 0, or a CUPTI error. */
static CUptiResult drain(struct pm_gpu *g, int final)
{
    g->offset_ns = gpu_metrics_realtime_offset();
    for (int round = 0; round < DECODE_ROUNDS_MAX; round++) {
        PARAMS(CUpti_PmSampling_DecodeData_Params, dd);
        dd.pPmSamplingObject = g->object;
        dd.pCounterDataImage = g->data;
        dd.counterDataImageSize = g->data_size;
        uint64_t t0 = nvml_now_ns();
        CUptiResult rc = g->api->decode(&dd);
        g->th.read_ns += nvml_now_ns() - t0;
        g->th.reads++;
        if (rc != CUPTI_SUCCESS)
            return rc;
        g->overflowed |= dd.overflow;
        PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, di);
        di.pCounterDataImage = g->data;
        di.counterDataImageSize = g->data_size;
        if ((rc = g->api->data_info(&di)) != CUPTI_SUCCESS ||
            (rc = put_samples(g, di.numCompletedSamples)) != CUPTI_SUCCESS)
            return rc;
        memcpy(g->data, g->blank, g->data_size);
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL &&
            (!final || dd.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS))
            break;
    }
    return CUPTI_SUCCESS;
}

static void *pm_loop(void *arg)
{
    struct pm_gpu *g = arg;
    CUptiResult rc = CUPTI_SUCCESS;
    while (rc == CUPTI_SUCCESS &&
           !gpu_metrics_thread_sleep(&g->th, nvml_now_ns() + DECODE_PERIOD_NS))
        rc = drain(g, 0);
    PARAMS(CUpti_PmSampling_Stop_Params, sp);
    sp.pPmSamplingObject = g->object;
    if (rc == CUPTI_SUCCESS && (rc = g->api->stop(&sp)) == CUPTI_SUCCESS)
        rc = drain(g, 1);
    if (rc != CUPTI_SUCCESS) {
        char why[256];
        explain(g, "PM sampling stopped", rc, why, sizeof why);
        gpu_metrics_put_status(g->t.sink, g->t.uuid, TRACE_GPU_METRICS_PM_SAMPLING,
                               TRACE_GPU_METRICS_FAILED, 0, why);
    }
    gpu_metrics_thread_finish(&g->th, &g->t, TRACE_GPU_METRICS_PM_SAMPLING,
                              g->overflowed ? "the GPU's sample buffer overflowed" : NULL);
    return NULL;
}

static void pm_free(struct pm_gpu *g)
{
    gpu_metrics_thread_stop(&g->th);
    if (g->object) {
        PARAMS(CUpti_PmSampling_Disable_Params, p);
        p.pPmSamplingObject = g->object;
        g->api->disable(&p);
    }
    host_close(&g->host);
    free(g->values);
    free(g->config);
    free(g->availability);
    free(g->data);
    free(g->blank);
    free(g);
}

/* The NUL-separated hardware names of each chosen metric, for the set record. */
static size_t hardware_names(const struct pm_choice *c, char *out, size_t size)
{
    size_t len = 0;
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        if (!(c->mask & (1u << m)))
            continue;
        for (int p = 0; p < c->sum[m].parts; p++)
            len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s", p ? "+" : "",
                                    c->names[c->sum[m].part[p]]);
        if (len < size)
            out[len] = 0;
        len++;
    }
    return len > size ? size : len;
}

/* Chooses the metrics, enables sampling and the images; 0, or a CUPTI error with what[] naming
 * the step. Under pm.setup. */
static CUptiResult pm_setup(struct pm_gpu *g, const char **what)
{
    const struct pm_api *api = g->api;
    const char *chip_out = g->chip;
    CUptiResult rc;
    *what = "cuptiDeviceGetChipName";
    PARAMS(CUpti_Device_GetChipName_Params, cn);
    cn.deviceIndex = (size_t)g->t.cuda_index;
    if ((rc = api->chip_name(&cn)) != CUPTI_SUCCESS)
        return rc;
    snprintf(g->chip, sizeof g->chip, "%s", cn.pChipName);
    *what = "cuptiPmSamplingGetCounterAvailability";
    PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, ca);
    ca.deviceIndex = (size_t)g->t.cuda_index;
    if ((rc = api->availability(&ca)) != CUPTI_SUCCESS)
        return rc;
    uint8_t *availability = g->availability = malloc(ca.counterAvailabilityImageSize);
    if (!availability)
        return CUPTI_ERROR_OUT_OF_MEMORY;
    ca.pCounterAvailabilityImage = availability;
    if ((rc = api->availability(&ca)) != CUPTI_SUCCESS)
        goto out;
    char why[256];
    *what = "choosing the metrics";
    if (pm_choose_metrics(api, chip_out, availability, g->t.mask, &g->choice, why, sizeof why) <
        0) {
        rc = CUPTI_ERROR_NOT_SUPPORTED;
        goto out;
    }
    size_t config_size = 0, passes;
    *what = "the configuration";
    /* The host object that made the config image evaluates the samples, as in NVIDIA's
     * pm_sampling sample (a second object with the metrics only added never made one). */
    if ((rc = host_open(&g->host, api, chip_out, availability)) != CUPTI_SUCCESS ||
        (rc = host_add_config(&g->host, g->choice.name_ptrs, g->choice.count, &g->config,
                              &config_size, &passes)) != CUPTI_SUCCESS)
        goto out;
    *what = "cuptiPmSamplingEnable";
    PARAMS(CUpti_PmSampling_Enable_Params, en);
    en.deviceIndex = (size_t)g->t.cuda_index;
    if (rc == CUPTI_SUCCESS && (rc = api->enable(&en)) == CUPTI_SUCCESS)
        g->object = en.pPmSamplingObject;
    PARAMS(CUpti_PmSampling_SetConfig_Params, sc);
    sc.pPmSamplingObject = g->object;
    sc.configSize = config_size;
    sc.pConfig = g->config;
    sc.hardwareBufferSize = HW_BUFFER_BYTES;
    sc.samplingInterval = g->t.period_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    if (rc == CUPTI_SUCCESS) {
        *what = "cuptiPmSamplingSetConfig";
        rc = api->set_config(&sc);
    }
    /* room for 4 decode periods of samples, so a late decode loses none */
    uint64_t per_decode = DECODE_PERIOD_NS / g->t.period_ns + 1;
    PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, ds);
    ds.pPmSamplingObject = g->object;
    ds.pMetricNames = g->choice.name_ptrs;
    ds.numMetrics = g->choice.count;
    ds.maxSamples = (uint32_t)(per_decode * 4 < 64 ? 64 : per_decode * 4);
    if (rc == CUPTI_SUCCESS) {
        *what = "cuptiPmSamplingGetCounterDataSize";
        rc = api->data_size(&ds);
    }
    if (rc == CUPTI_SUCCESS &&
        (!(g->data = malloc(ds.counterDataSize)) || !(g->blank = malloc(ds.counterDataSize)) ||
         !(g->values = calloc(g->choice.count, sizeof(double)))))
        rc = CUPTI_ERROR_OUT_OF_MEMORY;
    PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, ci);
    ci.pPmSamplingObject = g->object;
    ci.counterDataSize = ds.counterDataSize;
    ci.pCounterData = g->data;
    if (rc == CUPTI_SUCCESS) {
        *what = "cuptiPmSamplingCounterDataImageInitialize";
        rc = api->data_initialize(&ci);
    }
    if (rc == CUPTI_SUCCESS) {
        g->data_size = ds.counterDataSize;
        memcpy(g->blank, g->data, g->data_size);
        *what = "cuptiPmSamplingStart";
        PARAMS(CUpti_PmSampling_Start_Params, st);
        st.pPmSamplingObject = g->object;
        rc = api->start(&st);
    }
out:
    return rc;
}

/* One status line naming the metrics of mask that were asked for but are not sampled. */
static void say_missing(const struct gpu_metrics_target *t, const char *chip, uint32_t mask,
                        const char *because)
{
    char line[768];
    size_t len = 0;
    if (!mask)
        return;
    len += (size_t)snprintf(line, sizeof line, "not sampled on the %s: ", chip);
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        if (mask & (1u << m))
            len += (size_t)snprintf(line + len, len < sizeof line ? sizeof line - len : 0, "%s, ",
                                    gpu_metrics[m].column);
    if (len < sizeof line)
        snprintf(line + len - 2, sizeof line - (len - 2), " (%s)", because);
    gpu_metrics_put_status(t->sink, t->uuid, TRACE_GPU_METRICS_PM_SAMPLING,
                           TRACE_GPU_METRICS_UNAVAILABLE, 0, line);
}

static void *pm_start(const struct gpu_metrics_target *t, unsigned int *code, char *why,
                      size_t why_len)
{
    pthread_once(&pm.once, pm_global_init);
    if (pm.why[0]) {
        *code = pm.init_rc == CUPTI_SUCCESS ? TRACE_GPU_METRICS_UNAVAILABLE : status_of(pm.init_rc);
        snprintf(why, why_len, "%s", pm.why);
        return NULL;
    }
    struct pm_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        *code = TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    g->t = *t;
    g->api = &pm.api;
    gpu_metrics_thread_init(&g->th);

    char names[PM_NAMES_MAX * PM_NAME_LEN];
    const char *chip = g->chip;
    const char *what = "";
    device_support(g, why, why_len);
    if (why[0]) {
        *code = TRACE_GPU_METRICS_UNAVAILABLE;
        pm_free(g);
        return NULL;
    }
    pthread_mutex_lock(&pm.setup);
    CUptiResult rc = pm_setup(g, &what);
    pthread_mutex_unlock(&pm.setup);
    if (rc != CUPTI_SUCCESS) {
        *code = status_of(rc);
        explain(g, what, rc, why, why_len);
        pm_free(g);
        return NULL;
    }
    size_t names_len = hardware_names(&g->choice, names, sizeof names);
    struct trace_gpu_metric_set set = {
        .set_id = t->set_id,
        .gpu_uuid = trace_cstr(t->uuid),
        .gpu_name = trace_cstr(t->name),
        .source = TRACE_GPU_METRICS_PM_SAMPLING,
        .period_ns = t->period_ns,
        .metrics = g->choice.mask,
        .hardware = {(const uint8_t *)names, names_len},
        .chip = trace_cstr(chip),
        .nvml_index = t->gpu->nvml_index + 1,
    };
    gpu_metrics_put_set(t->sink, &set);
    say_missing(t, chip, g->choice.refused, "the chip has none of their counters");
    say_missing(t, chip, g->choice.dropped, "they do not fit in one pass with the others");
    if (gpu_metrics_thread_start(&g->th, pm_loop, g) < 0) {
        *code = TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "cannot start a thread");
        pm_free(g);
        return NULL;
    }
    return g;
}

static void pm_stop(void *handle)
{
    pm_free(handle); /* stops the thread first */
}

const struct gpu_metrics_backend gpu_metrics_pm_backend = {
    .name = "CUPTI PM sampling",
    .option = "pm",
    .source = TRACE_GPU_METRICS_PM_SAMPLING,
    .start = pm_start,
    .stop = pm_stop,
};
