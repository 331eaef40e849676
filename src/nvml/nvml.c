/* Loads NVML with dlopen (no link-time dependency), lists the GPUs and maps CUDA's numbering
 * (CUDA_VISIBLE_DEVICES: indices, UUIDs or prefixes of them) onto NVML's. A GPU source that
 * cannot work is not an error: nvml_open leaves one line in disabled_reason instead. */
#include "nvml/nvml_iface.h"

#include <errno.h>
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t nvml_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bind(struct nvml *n, void **slot, const char *symbol, int required)
{
    *slot = dlsym(n->library, symbol);
    if (*slot || !required)
        return 0;
    snprintf(n->disabled_reason, sizeof n->disabled_reason, "NVML too old: no %s", symbol);
    return -ENOSYS;
}

static int bind_all(struct nvml *n)
{
    struct nvml_api *a = &n->api;
    int rc = 0;
    rc |= bind(n, (void **)&a->init, "nvmlInit_v2", 1);
    rc |= bind(n, (void **)&a->shutdown, "nvmlShutdown", 1);
    rc |= bind(n, (void **)&a->error_string, "nvmlErrorString", 1);
    rc |= bind(n, (void **)&a->device_count, "nvmlDeviceGetCount_v2", 1);
    rc |= bind(n, (void **)&a->handle_by_index, "nvmlDeviceGetHandleByIndex_v2", 1);
    rc |= bind(n, (void **)&a->uuid, "nvmlDeviceGetUUID", 1);
    rc |= bind(n, (void **)&a->name, "nvmlDeviceGetName", 1);
    rc |= bind(n, (void **)&a->mig_mode, "nvmlDeviceGetMigMode", 0);
    rc |= bind(n, (void **)&a->power_usage, "nvmlDeviceGetPowerUsage", 1);
    rc |= bind(n, (void **)&a->field_values, "nvmlDeviceGetFieldValues", 0);
    rc |= bind(n, (void **)&a->total_energy, "nvmlDeviceGetTotalEnergyConsumption", 0);
    rc |= bind(n, (void **)&a->power_limit, "nvmlDeviceGetEnforcedPowerLimit", 1);
    rc |= bind(n, (void **)&a->clock, "nvmlDeviceGetClockInfo", 1);
    rc |= bind(n, (void **)&a->utilization, "nvmlDeviceGetUtilizationRates", 1);
    rc |= bind(n, (void **)&a->memory, "nvmlDeviceGetMemoryInfo", 1);
    rc |= bind(n, (void **)&a->temperature, "nvmlDeviceGetTemperature", 1);
    /* renamed in driver 535; the old name stays exported */
    rc |= bind(n, (void **)&a->clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons", 0);
    if (!a->clock_reasons)
        rc |= bind(n, (void **)&a->clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons", 0);
    rc |= bind(n, (void **)&a->gpm_query_support, "nvmlGpmQueryDeviceSupport", 0);
    rc |= bind(n, (void **)&a->gpm_sample_alloc, "nvmlGpmSampleAlloc", 0);
    rc |= bind(n, (void **)&a->gpm_sample_free, "nvmlGpmSampleFree", 0);
    rc |= bind(n, (void **)&a->gpm_sample_get, "nvmlGpmSampleGet", 0);
    rc |= bind(n, (void **)&a->gpm_metrics_get, "nvmlGpmMetricsGet", 0);
    return rc ? -ENOSYS : 0;
}

static void explain(struct nvml *n, const char *what, nvml_return_t rc)
{
    const char *why = n->api.error_string ? n->api.error_string(rc) : "error";
    if (rc == NVML_ERR_NO_PERMISSION)
        snprintf(n->disabled_reason, sizeof n->disabled_reason,
                 "no permission to use NVML (%s: %s)", what, why);
    else if (rc == NVML_ERR_DRIVER_NOT_LOADED)
        snprintf(n->disabled_reason, sizeof n->disabled_reason, "no NVIDIA driver loaded");
    else
        snprintf(n->disabled_reason, sizeof n->disabled_reason, "NVML %s failed: %s", what, why);
}

int nvml_read_power(const struct nvml *n, const struct nvml_gpu *g, unsigned int *mw)
{
    if (g->has_instant_power) {
        struct nvml_field_value v = {.field_id = NVML_FIELD_POWER_INSTANT};
        nvml_return_t rc = n->api.field_values(g->device, 1, &v);
        if (rc == NVML_OK && v.status == NVML_OK) {
            *mw = v.value.ui;
            return 0;
        }
    }
    return n->api.power_usage(g->device, mw);
}

/* Fills one GPU's description and probes which power sources it has. */
static int describe_gpu(struct nvml *n, unsigned int index)
{
    struct nvml_gpu *g = &n->gpus[index];
    const struct nvml_api *a = &n->api;
    g->nvml_index = index;
    g->cuda_index = -1;
    nvml_return_t rc = a->handle_by_index(index, &g->device);
    if (rc == NVML_OK)
        rc = a->uuid(g->device, g->uuid, sizeof g->uuid);
    if (rc == NVML_OK)
        rc = a->name(g->device, g->name, sizeof g->name);
    if (rc != NVML_OK) {
        explain(n, "reading a GPU", rc);
        return -EIO;
    }
    if (a->power_limit(g->device, &g->power_limit_mw) != NVML_OK)
        g->power_limit_mw = 0;
    struct nvml_memory mem;
    g->memory_bytes = a->memory(g->device, &mem) == NVML_OK ? mem.total : 0;
    unsigned long long mj;
    g->has_energy_counter = a->total_energy && a->total_energy(g->device, &mj) == NVML_OK;
    if (a->field_values) {
        struct nvml_field_value v = {.field_id = NVML_FIELD_POWER_INSTANT};
        g->has_instant_power = a->field_values(g->device, 1, &v) == NVML_OK && v.status == NVML_OK;
    }
    unsigned int mw;
    rc = nvml_read_power(n, g, &mw);
    if (rc != NVML_OK && !g->has_energy_counter) {
        explain(n, "reading GPU power", rc);
        return -EIO;
    }
    return 0;
}

/* Does a CUDA_VISIBLE_DEVICES entry (index, UUID or UUID prefix) name this GPU? */
static int entry_names_gpu(const char *entry, size_t len, const struct nvml_gpu *g)
{
    if (len && isdigit((unsigned char)entry[0])) {
        char *end;
        unsigned long i = strtoul(entry, &end, 10);
        return (size_t)(end - entry) == len && i == g->nvml_index;
    }
    const char *uuid = g->uuid;
    if (strncmp(entry, "GPU-", 4) != 0 && strncmp(uuid, "GPU-", 4) == 0)
        uuid += 4;
    return len > 0 && strncmp(entry, uuid, len) == 0;
}

/* Numbers the GPUs as CUDA will: CUDA_VISIBLE_DEVICES order, stopping at the first entry
 * that names no GPU (as CUDA does). Integer entries are taken as NVML's PCI-ordered index,
 * which matches CUDA under CUDA_DEVICE_ORDER=PCI_BUS_ID and on single-model machines. */
static void number_for_cuda(struct nvml *n)
{
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    if (!list) {
        for (unsigned int i = 0; i < n->gpu_count; i++)
            n->gpus[i].cuda_index = (int)i;
        return;
    }
    int next = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        int found = 0;
        for (unsigned int i = 0; i < n->gpu_count && !found; i++) {
            if (n->gpus[i].cuda_index < 0 && entry_names_gpu(p, len, &n->gpus[i])) {
                n->gpus[i].cuda_index = next++;
                found = 1;
            }
        }
        if (!found)
            return;
        p += len;
        if (*p == ',')
            p++;
    }
}

int nvml_open(struct nvml *n)
{
    memset(n, 0, sizeof *n);
    const char *path = getenv("LANTERN_NVML_LIBRARY");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    n->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->library) {
        snprintf(n->disabled_reason, sizeof n->disabled_reason, "NVML not found (%s)", dlerror());
        return -ENOENT;
    }
    int err = bind_all(n);
    if (err < 0)
        goto fail_unload;
    err = -EIO;
    nvml_return_t rc = n->api.init();
    if (rc != NVML_OK) {
        explain(n, "init", rc);
        goto fail_unload;
    }
    rc = n->api.device_count(&n->gpu_count);
    if (rc != NVML_OK) {
        explain(n, "device count", rc);
        goto fail_shutdown;
    }
    if (n->gpu_count == 0) {
        snprintf(n->disabled_reason, sizeof n->disabled_reason, "no NVIDIA GPU");
        err = -ENODEV;
        goto fail_shutdown;
    }
    if (n->gpu_count > NVML_MAX_GPUS)
        n->gpu_count = NVML_MAX_GPUS;
    for (unsigned int i = 0; i < n->gpu_count; i++)
        if ((err = describe_gpu(n, i)) < 0)
            goto fail_shutdown;
    number_for_cuda(n);
    return 0;

fail_shutdown:
    n->api.shutdown();
fail_unload:
    dlclose(n->library);
    n->library = NULL;
    return err;
}

void nvml_close(struct nvml *n)
{
    if (!n->library)
        return;
    n->api.shutdown();
    dlclose(n->library);
    n->library = NULL;
}

static int in_mig_mode(const struct nvml *n, const struct nvml_gpu *g)
{
    unsigned int current = 0, pending = 0;
    return n->api.mig_mode && n->api.mig_mode(g->device, &current, &pending) == NVML_OK &&
           current == 1;
}

/* Finds the GPU one spec item names; returns its index in n->gpus, or with why[] set -ENODEV
 * (none), -EINVAL (ambiguous) or -EOPNOTSUPP (MIG). */
static int find_gpu(struct nvml *n, const char *item, size_t len, char *why, size_t why_len)
{
    if (len >= 4 && strncmp(item, "MIG-", 4) == 0) {
        snprintf(why, why_len, "MIG instance %.*s: per-instance energy is not supported by NVML",
                 (int)len, item);
        return -EOPNOTSUPP;
    }
    int found = -1;
    for (unsigned int i = 0; i < n->gpu_count; i++) {
        const struct nvml_gpu *g = &n->gpus[i];
        int match;
        if (len && isdigit((unsigned char)item[0])) {
            char *end;
            long cuda = strtol(item, &end, 10);
            match = (size_t)(end - item) == len && g->cuda_index >= 0 && cuda == g->cuda_index;
        } else {
            match = entry_names_gpu(item, len, g);
        }
        if (!match)
            continue;
        if (found >= 0) {
            snprintf(why, why_len, "GPU '%.*s' is ambiguous", (int)len, item);
            return -EINVAL;
        }
        found = (int)i;
    }
    if (found < 0) {
        unsigned int visible = 0;
        for (unsigned int i = 0; i < n->gpu_count; i++)
            visible += n->gpus[i].cuda_index >= 0;
        snprintf(why, why_len, "GPU %.*s does not exist (%u GPU%s visible)", (int)len, item,
                 visible, visible == 1 ? "" : "s");
        return -ENODEV;
    } else if (in_mig_mode(n, &n->gpus[found])) {
        snprintf(why, why_len, "GPU %.*s is in MIG mode: energy per MIG instance is not supported",
                 (int)len, item);
        return -EOPNOTSUPP;
    }
    return found;
}

int nvml_select(struct nvml *n, const char *spec, unsigned int *out, unsigned int max, char *why,
                size_t why_len)
{
    unsigned int count = 0;
    if (!spec || !*spec) {
        for (int cuda = 0; count < max; cuda++) {
            unsigned int i;
            for (i = 0; i < n->gpu_count && n->gpus[i].cuda_index != cuda; i++)
                ;
            if (i == n->gpu_count)
                break;
            if (in_mig_mode(n, &n->gpus[i])) {
                snprintf(why, why_len,
                         "GPU %d is in MIG mode: energy per MIG instance is not "
                         "supported",
                         cuda);
                return -EOPNOTSUPP;
            }
            out[count++] = i;
        }
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        if (count == 0 && visible && strstr(visible, "MIG-"))
            snprintf(why, why_len,
                     "MIG instances in CUDA_VISIBLE_DEVICES: per-instance energy is "
                     "not supported by NVML");
        else if (count == 0)
            snprintf(why, why_len, "no GPU visible (CUDA_VISIBLE_DEVICES)");
        return count ? (int)count : -ENODEV;
    }
    for (const char *p = spec; *p && count < max;) {
        size_t len = strcspn(p, ",");
        int i = find_gpu(n, p, len, why, why_len);
        if (i < 0)
            return i;
        out[count++] = (unsigned int)i;
        p += len;
        if (*p == ',')
            p++;
    }
    return (int)count;
}
