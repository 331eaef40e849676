/* dlopen of libcupti for the agent (cupti_loader.h): the first library found in the search
 * order that has every entry point we use wins. Runs once, at CUDA tracing's start. */
#include "agent/cupti_loader.h"
#include "trace/environment.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cupti_symbol {
    const char *name;
    size_t offset;
};

#define CUPTI_SYMBOL(field, symbol)                                                                \
    {                                                                                              \
        symbol, offsetof(struct cupti_api, field)                                                  \
    }
static const struct cupti_symbol cupti_symbols[] = {
    CUPTI_SYMBOL(activity_enable, "cuptiActivityEnable"),
    CUPTI_SYMBOL(activity_disable, "cuptiActivityDisable"),
    CUPTI_SYMBOL(activity_register_callbacks, "cuptiActivityRegisterCallbacks"),
    CUPTI_SYMBOL(activity_register_timestamp_callback, "cuptiActivityRegisterTimestampCallback"),
    CUPTI_SYMBOL(activity_get_next_record, "cuptiActivityGetNextRecord"),
    CUPTI_SYMBOL(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords"),
    CUPTI_SYMBOL(activity_flush_all, "cuptiActivityFlushAll"),
    CUPTI_SYMBOL(activity_enable_runtime_api, "cuptiActivityEnableRuntimeApi"),
    CUPTI_SYMBOL(activity_enable_driver_api, "cuptiActivityEnableDriverApi"),
    CUPTI_SYMBOL(set_thread_id_type, "cuptiSetThreadIdType"),
    CUPTI_SYMBOL(get_callback_name, "cuptiGetCallbackName"),
    CUPTI_SYMBOL(get_result_string, "cuptiGetResultString"),
    CUPTI_SYMBOL(subscribe, "cuptiSubscribe"),
    CUPTI_SYMBOL(enable_callback, "cuptiEnableCallback"),
    CUPTI_SYMBOL(get_context_id, "cuptiGetContextId"),
    CUPTI_SYMBOL(get_stream_id_ex, "cuptiGetStreamIdEx"),
};

/* Fills every pointer from handle; 0, or -ENOSYS naming the first missing symbol in why. */
static int cupti_bind(struct cupti_api *api, void *handle, const char *path, char *why,
                      size_t why_len)
{
    for (size_t i = 0; i < sizeof(cupti_symbols) / sizeof(cupti_symbols[0]); i++) {
        void *fn = dlsym(handle, cupti_symbols[i].name);
        if (!fn) {
            snprintf(why, why_len, "%s has no %s (CUPTI 13 or newer is needed)", path,
                     cupti_symbols[i].name);
            return -ENOSYS;
        }
        memcpy((char *)api + cupti_symbols[i].offset, &fn, sizeof(fn));
    }
    api->handle = handle;
    return 0;
}

/* 0, -ENOENT where dlopen fails, or cupti_bind's -ENOSYS; why says which. */
static int cupti_try(struct cupti_api *api, const char *path, char *why, size_t why_len)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(why, why_len, "cannot load CUPTI: %s", dlerror());
        return -ENOENT;
    }
    int rc = cupti_bind(api, handle, path, why, why_len);
    if (rc == 0)
        return 0;
    dlclose(handle);
    return rc;
}

int cupti_load(struct cupti_api *api, char *why, size_t why_len)
{
    char path[4096];
    const char *explicit_path = getenv(trace_env_name(TRACE_ENV_CUPTI_PATH));
    const char *cuda_home = getenv("CUDA_HOME");
    if (explicit_path && *explicit_path)
        return cupti_try(api, explicit_path, why, why_len);
    if (cupti_try(api, "libcupti.so.13", why, why_len) == 0)
        return 0;
    if (cuda_home && *cuda_home) {
        snprintf(path, sizeof(path), "%s/extras/CUPTI/lib64/libcupti.so", cuda_home);
        if (cupti_try(api, path, why, why_len) == 0)
            return 0;
        snprintf(path, sizeof(path), "%s/targets/x86_64-linux/lib/libcupti.so", cuda_home);
        if (cupti_try(api, path, why, why_len) == 0)
            return 0;
    }
    if (cupti_try(api, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", why, why_len) == 0)
        return 0;
    return cupti_try(api, "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so", why, why_len);
}
