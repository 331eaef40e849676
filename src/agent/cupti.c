/* CUDA tracing through CUPTI: the agent as CUDA injection library (InitializeInjection),
 * the "cuda" event source (activity kinds, API filter, CUPTI's clock set to ours, a bounded
 * pool of activity buffers translated under the writer lock) and flushing at fork and exit. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/cupti_loader.h"
#include "agent/cupti_translate.h"
#include "agent/writer.h"
#include "trace/format.h"

/* CUPTI fills one buffer per request; 8 MB holds ~40k kernel records, so a launch-bound loop
 * asks for one every few tens of ms. 8 buffers bound the agent's CUPTI memory to 64 MB: past
 * that CUPTI drops records and counts them (reported as TRACE_DROPPED). */
#define CUPTI_BUFFER_SIZE (8u << 20)
#define CUPTI_BUFFER_COUNT 8u
/* CUPTI hands buffers back only when full unless asked: a periodic flush bounds what a
 * SIGKILL can lose and keeps GPU events close behind their NVTX ranges in the file. */
#define CUPTI_FLUSH_PERIOD_MS 200u
/* A translated record is < 200 bytes (names are string ids); room for one, generously. */
#define CUPTI_RECORD_RESERVE 4096u

static struct {
    struct cupti_api api;
    struct cupti_translate translate;
    uint8_t *buffers[CUPTI_BUFFER_COUNT];
    uint32_t buffers_busy;                 /* bit i: buffers[i] is with CUPTI */
    uint64_t buffers_refused;              /* requests met with no buffer (CUPTI then drops) */
    uint64_t dropped_total;                /* records lost, reported in TRACE_DROPPED */
    CUpti_SubscriberHandle subscriber;
    char *(*cxa_demangle)(const char *, char *, size_t *, int *);
    int (*cu_device_get)(int *device, int ordinal);
    int (*cu_device_get_attribute)(int *value, int attribute, int device);
    int running;
} cupti;

/* ---- hooks of the translator --------------------------------------------------------- */

static uint64_t cupti_hook_intern(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    return writer_intern(s, len);
}

static const char *cupti_hook_api_name(void *ctx, int driver, uint32_t cbid)
{
    (void)ctx;
    const char *name = NULL;
    CUpti_CallbackDomain domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    if (cupti.api.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS)
        return NULL;
    return name;
}

static char *cupti_hook_demangle(void *ctx, const char *mangled)
{
    (void)ctx;
    int status = 0;
    if (!cupti.cxa_demangle || strncmp(mangled, "_Z", 2) != 0)
        return NULL;
    char *out = cupti.cxa_demangle(mangled, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static int64_t cupti_hook_device_attribute(void *ctx, uint32_t ordinal, int attribute)
{
    (void)ctx;
    int device, value;
    if (!cupti.cu_device_get || !cupti.cu_device_get_attribute ||
        cupti.cu_device_get(&device, (int)ordinal) != 0 ||
        cupti.cu_device_get_attribute(&value, attribute, device) != 0)
        return -1;
    return value;
}

/* __cxa_demangle from the process's C++ runtime (CUDA programs link one; the agent itself
 * stays C), cuDevice* from the driver that loaded us. Both optional. */
static void cupti_find_helpers(void)
{
    cupti.cxa_demangle = (char *(*)(const char *, char *, size_t *, int *))dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!cupti.cxa_demangle) {
        void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (cxx)
            cupti.cxa_demangle = (char *(*)(const char *, char *, size_t *, int *))dlsym(cxx, "__cxa_demangle");
    }
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver) {
        cupti.cu_device_get = (int (*)(int *, int))dlsym(driver, "cuDeviceGet");
        cupti.cu_device_get_attribute = (int (*)(int *, int, int))dlsym(driver, "cuDeviceGetAttribute");
    }
}

/* ---- buffers ------------------------------------------------------------------------- */

static void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    for (unsigned i = 0; i < CUPTI_BUFFER_COUNT; i++) {
        uint32_t bit = 1u << i;
        if (__atomic_fetch_or(&cupti.buffers_busy, bit, __ATOMIC_ACQ_REL) & bit)
            continue;
        if (!cupti.buffers[i] && posix_memalign((void **)&cupti.buffers[i], 8, CUPTI_BUFFER_SIZE) != 0) {
            cupti.buffers[i] = NULL;
            __atomic_fetch_and(&cupti.buffers_busy, ~bit, __ATOMIC_ACQ_REL);
            break;
        }
        *buffer = cupti.buffers[i];
        *size = CUPTI_BUFFER_SIZE;
        return;
    }
    __atomic_fetch_add(&cupti.buffers_refused, 1, __ATOMIC_RELAXED);
}

static void cupti_buffer_release(uint8_t *buffer)
{
    for (unsigned i = 0; i < CUPTI_BUFFER_COUNT; i++)
        if (cupti.buffers[i] == buffer)
            __atomic_fetch_and(&cupti.buffers_busy, ~(1u << i), __ATOMIC_ACQ_REL);
}

static void cupti_put_dropped(struct trace_chunk_builder *b, uint64_t count)
{
    writer_reserve_locked(64);
    struct trace_record_mark m = trace_record_begin(b, TRACE_DROPPED);
    trace_put_u(b, 0);   /* process-wide: CUPTI does not say whose records they were */
    trace_put_u(b, count);
    trace_record_end(b, m);
}

static void cupti_translate_buffer(struct trace_chunk_builder *b, uint8_t *buffer, size_t valid)
{
    CUpti_Activity *record = NULL;
    uint64_t lost = 0;
    while (cupti.api.activity_get_next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (cupti_translate_record(&cupti.translate, b, record) != CUPTI_NO_ROOM)
            continue;
        if (writer_reserve_locked(CUPTI_RECORD_RESERVE) < 0 ||
            cupti_translate_record(&cupti.translate, b, record) == CUPTI_NO_ROOM)
            lost++;
    }
    if (cupti_translate_flush_rejected(&cupti.translate, b) == CUPTI_NO_ROOM &&
        writer_reserve_locked(64) == 0)
        cupti_translate_flush_rejected(&cupti.translate, b);
    if (lost)
        cupti_put_dropped(b, lost);
}

static void CUPTIAPI cupti_buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)size;
    struct trace_chunk_builder *b = writer_lock();
    if (b) {
        size_t dropped = 0;
        cupti_translate_buffer(b, buffer, valid);
        if (cupti.api.activity_get_num_dropped_records(context, stream, &dropped) == CUPTI_SUCCESS &&
            dropped) {
            cupti.dropped_total += dropped;
            cupti_put_dropped(b, dropped);
        }
        writer_unlock();
    }
    cupti_buffer_release(buffer);
}

static uint64_t CUPTIAPI cupti_timestamp(void) { return agent_now(); }

/* ---- stream handles ------------------------------------------------------------------ */

/* NVTX names streams by CUstream; CUPTI's records name them by id. The resource callback
 * is the one place both are known. */
static void CUPTIAPI cupti_resource_callback(void *userdata, CUpti_CallbackDomain domain,
                                             CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_STREAM_CREATED)
        return;
    const CUpti_ResourceData *r = data;
    uint32_t context_id = 0, stream_id = 0;
    if (cupti.api.get_context_id(r->context, &context_id) != CUPTI_SUCCESS ||
        cupti.api.get_stream_id_ex(r->context, r->resourceHandle.stream, 0, &stream_id) != CUPTI_SUCCESS)
        return;
    struct trace_chunk_builder *b = writer_lock();
    if (!b)
        return;
    writer_reserve_locked(64);
    struct trace_record_mark m = trace_record_begin(b, TRACE_CUDA_STREAM_HANDLE);
    trace_put_u(b, (uint64_t)(uintptr_t)r->resourceHandle.stream);
    trace_put_u(b, context_id);
    trace_put_u(b, stream_id);
    trace_record_end(b, m);
    writer_unlock();
}

/* ---- setup --------------------------------------------------------------------------- */

static const char *cupti_error(CUptiResult rc)
{
    const char *text = NULL;
    if (cupti.api.get_result_string && cupti.api.get_result_string(rc, &text) == CUPTI_SUCCESS && text)
        return text;
    return "unknown CUPTI error";
}

/* The default API filter: only allow-listed calls are enabled, so CUPTI does not even
 * record the rest. 0, or -1 if CUPTI refused (the caller then records all and filters). */
static int cupti_enable_allowed_apis(CUpti_CallbackDomain domain, uint32_t cbid_limit,
                                     CUptiResult (*enable)(CUpti_CallbackId, uint8_t))
{
    for (uint32_t cbid = 1; cbid < cbid_limit; cbid++) {
        const char *name = NULL;
        if (cupti.api.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !cupti_api_allowed(name))
            continue;
        if (enable(cbid, 1) != CUPTI_SUCCESS)
            return -1;
    }
    return 0;
}

static int cupti_enable_apis(int all_apis)
{
    if (!all_apis &&
        cupti_enable_allowed_apis(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                                  cupti.api.activity_enable_runtime_api) == 0 &&
        cupti_enable_allowed_apis(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
                                  cupti.api.activity_enable_driver_api) == 0)
        return 0;
    CUptiResult rc = cupti.api.activity_enable(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.api.activity_enable(CUPTI_ACTIVITY_KIND_DRIVER);
    return rc == CUPTI_SUCCESS ? 0 : -1;
}

static const CUpti_ActivityKind cupti_kinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
};

/* Where there is no NVIDIA driver, say so once and leave CUDA off (NVTX still records). */
static int cupti_gpu_present(void)
{
    if (access("/dev/nvidiactl", F_OK) != 0) {
        agent_warn("-t cuda: no NVIDIA GPU here (no /dev/nvidiactl); CUDA is not traced");
        return 0;
    }
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        agent_warn("-t cuda: no CUDA driver (libcuda.so.1): %s; CUDA is not traced", dlerror());
        return 0;
    }
    dlclose(driver);
    return 1;
}

static int cupti_start(void)
{
    char why[512];
    if (!cupti_gpu_present())
        return -1;
    if (cupti_load(&cupti.api, why, sizeof(why)) < 0) {
        agent_warn("-t cuda: %s; CUDA is not traced", why);
        return -1;
    }
    cupti_find_helpers();
    const char *api_mode = getenv("LANTERN_CUDA_API");
    int all_apis = api_mode && strcmp(api_mode, "all") == 0;
    struct cupti_translate_hooks hooks = {
        .intern = cupti_hook_intern,
        .api_name = cupti_hook_api_name,
        .demangle = cupti_hook_demangle,
        .device_attribute = cupti_hook_device_attribute,
    };
    cupti_translate_init(&cupti.translate, &hooks, all_apis);

    CUptiResult rc = cupti.api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.api.activity_register_timestamp_callback(cupti_timestamp);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.api.activity_register_callbacks(cupti_buffer_requested, cupti_buffer_completed);
    for (size_t i = 0; rc == CUPTI_SUCCESS && i < sizeof(cupti_kinds) / sizeof(cupti_kinds[0]); i++)
        rc = cupti.api.activity_enable(cupti_kinds[i]);
    if (rc != CUPTI_SUCCESS || cupti_enable_apis(all_apis) < 0) {
        agent_warn("-t cuda: CUPTI refused activity tracing (%s); CUDA is not traced", cupti_error(rc));
        return -1;
    }
    cupti.api.activity_flush_period(CUPTI_FLUSH_PERIOD_MS);
    /* Stream handles are a nicety: another CUPTI subscriber in the process (one per process
     * is allowed) only costs the NVTX names of streams. */
    if (cupti.api.subscribe(&cupti.subscriber, cupti_resource_callback, NULL) == CUPTI_SUCCESS)
        cupti.api.enable_callback(1, cupti.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_STREAM_CREATED);
    cupti.running = 1;
    return 0;
}

/* Everything CUPTI holds goes through cupti_buffer_completed now, while the writer runs. */
static void cupti_flush(void)
{
    if (cupti.running)
        cupti.api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void cupti_at_fork_child(void)
{
    /* The child's file has its own string ids; the CUDA context did not survive fork. */
    cupti_translate_reset(&cupti.translate);
}

AGENT_SOURCE(cupti_source) = {
    .name = "cuda",
    .trace_flag = TRACE_FLAG_CUDA,
    .init = cupti_start,
    .at_fork_prepare = cupti_flush,
    .at_fork_child = cupti_at_fork_child,
    .at_exit = cupti_flush,
};

/* The CUDA driver calls this at cuInit when CUDA_INJECTION64_PATH names the agent. It may
 * come after NVTX started the agent (then this does nothing) and may be called again. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
    agent_init(TRACE_FLAG_CUDA);
    return 1;
}
