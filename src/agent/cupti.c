/* CUDA tracing through CUPTI: the agent as CUDA injection library (InitializeInjection),
 * the "cuda" event source (activity kinds, API filter, CUPTI's clock set to ours, a bounded
 * pool of activity buffers translated under the writer lock) and flushing at fork and exit. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/cupti_loader.h"
#include "agent/cupti_translate.h"
#include "agent/pytrace.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/list.h"
#include "trace/records.h"

/* CUPTI fills one buffer per request; 8 MB holds ~40k kernel records, so a launch-bound loop
 * asks for one every few tens of ms. 8 buffers bound the agent's CUPTI memory to 64 MB: past
 * that CUPTI drops records and counts them (reported as TRACE_DROPPED). */
#define CUPTI_BUFFER_SIZE (8u << 20)
#define CUPTI_BUFFER_COUNT 8u
/* CUPTI hands buffers back only when full unless asked (its own periodic flush returns full
 * buffers only): the agent asks every AGENT_PERIOD_MS for the completed records (the
 * source's periodic hook, on the writer thread), which bounds what a process that ends
 * without its exit hooks (_exit, a crash, SIGKILL) loses to ~200 ms of CUDA records and
 * keeps GPU events close behind their NVTX ranges in the file. */
/* A translated record is < 200 bytes (names are string ids); room for one, generously. */
#define CUPTI_RECORD_RESERVE 4096u

static struct {
    struct cupti_api api;
    struct cupti_translate translate;
    uint8_t *buffers[CUPTI_BUFFER_COUNT];
    uint32_t buffers_busy; /* bit i: buffers[i] is with CUPTI */
    CUpti_SubscriberHandle subscriber;
    int (*cu_device_get)(int *device, int ordinal);
    int (*cu_device_get_attribute)(int *value, int attribute, int device);
    int (*cu_ctx_synchronize)(void);
    uint32_t groups_wanted; /* bit g: cupti_kind_groups[g] is recorded (decided at start) */
    int apis_wanted;        /* API calls are recorded ("api" kind) */
    int apis_whole;         /* as RUNTIME/DRIVER kinds, not call by call */
    int capture_pauses;     /* cudaProfilerApi capture: collection pauses outside the windows */
    int collecting;         /* the pausable kinds are on */
    int capture_open;       /* inside a cudaProfilerApi window (1 without such a capture) */
    int control_open;       /* the launcher has the session recording (docs/long-runs.md) */
    pthread_mutex_t capture_lock;
    int running;
} cupti = {.capture_lock = PTHREAD_MUTEX_INITIALIZER, .capture_open = 1, .control_open = 1};

/* ---- hooks of the translator --------------------------------------------------------- */

static uint64_t cupti_hook_intern(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    return writer_intern(s, len);
}

static void cupti_hook_thread_seen(void *ctx, uint32_t os_tid)
{
    (void)ctx;
    writer_note_tid_locked(os_tid);
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

/* A value: -1 when it cannot be read (the hook's "none", cupti_translate.h). */
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

/* cuDevice* from the driver that loaded us, for what CUPTI's device record lacks, and
 * cuCtxSynchronize for a capture's end. */
static void cupti_find_helpers(void *driver)
{
    cupti.cu_device_get = (int (*)(int *, int))dlsym(driver, "cuDeviceGet");
    cupti.cu_device_get_attribute = (int (*)(int *, int, int))dlsym(driver, "cuDeviceGetAttribute");
    cupti.cu_ctx_synchronize = (int (*)(void))dlsym(driver, "cuCtxSynchronize");
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
        if (!cupti.buffers[i] &&
            posix_memalign((void **)&cupti.buffers[i], 8, CUPTI_BUFFER_SIZE) != 0) {
            cupti.buffers[i] = NULL;
            __atomic_fetch_and(&cupti.buffers_busy, ~bit, __ATOMIC_ACQ_REL);
            break;
        }
        *buffer = cupti.buffers[i];
        *size = CUPTI_BUFFER_SIZE;
        return;
    }
    /* No buffer: CUPTI drops what it cannot store and counts it for cupti_buffer_completed. */
}

static void cupti_buffer_release(uint8_t *buffer)
{
    for (unsigned i = 0; i < CUPTI_BUFFER_COUNT; i++)
        if (cupti.buffers[i] == buffer)
            __atomic_fetch_and(&cupti.buffers_busy, ~(1u << i), __ATOMIC_ACQ_REL);
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
        writer_put_dropped(0, lost); /* CUPTI does not say whose */
}

static void CUPTIAPI cupti_buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)size;
    struct trace_chunk_builder *b = writer_lock();
    if (b) {
        size_t dropped = 0;
        cupti_translate_buffer(b, buffer, valid);
        if (cupti.api.activity_get_num_dropped_records(context, stream, &dropped) ==
                CUPTI_SUCCESS &&
            dropped) {
            writer_put_dropped(0, dropped);
        }
        /* in the file at once: what CUPTI delivered is kept however the process ends */
        writer_unlock_durable();
    }
    cupti_buffer_release(buffer);
}

static uint64_t CUPTIAPI cupti_timestamp(void)
{
    return clock_mono_ns();
}

/* ---- setup --------------------------------------------------------------------------- */

static const char *cupti_error(CUptiResult rc)
{
    const char *text = NULL;
    if (cupti.api.get_result_string && cupti.api.get_result_string(rc, &text) == CUPTI_SUCCESS &&
        text)
        return text;
    return "unknown CUPTI error";
}

/* LANTERN_CUDA_KINDS picks what is recorded (default: all but "memory" and "sync"); devices,
 * contexts and streams always are, since every other record refers to them. Allocations and
 * frees (MEMORY2) come only with LANTERN_CUDA_MEMORY=1 (lantern profile
 * --cuda-memory-usage=true) or when listed: like nsys's --cuda-memory-usage, off by default
 * for their cost. CUPTI's SYNCHRONIZATION records come only when listed: they alone cost
 * x1.2 in bench_cuda.py's launch-bound PyTorch loop (docs/benchmarks.md, runs 21-22), and the
 * importer derives the waits from the synchronizing API calls instead (without their
 * stream and event ids). The pausable kinds are those a paused cudaProfilerApi capture turns
 * off; the others cost nothing per launch and are needed whole (a context created while
 * paused, an allocation freed inside a window). */
struct cupti_kind_group {
    const char *name;
    CUpti_ActivityKind kinds[2];
    int pausable;
};
static const struct cupti_kind_group cupti_kind_groups[] = {
    {"kernel", {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_INVALID}, 1},
    {"memcpy", {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}, 1},
    {"memset", {CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_INVALID}, 1},
    {"sync", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_INVALID}, 1},
    {"memory", {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_INVALID}, 0},
    {"overhead", {CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_INVALID}, 1},
    {"device", {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT}, 0},
    {"stream", {CUPTI_ACTIVITY_KIND_STREAM, CUPTI_ACTIVITY_KIND_INVALID}, 0},
};

static int cupti_env_is(const char *variable, const char *value)
{
    const char *set = getenv(variable);
    return set && strcmp(set, value) == 0;
}

/* LANTERN_CUDA_API=none (lantern profile --cuda-api=none) turns "api" off whatever the list
 * says: GPU work then has no launching call to attribute it by. */
static int cupti_group_wanted(const char *list, const char *name)
{
    if (strcmp(name, "device") == 0 || strcmp(name, "stream") == 0)
        return 1;
    if (strcmp(name, "api") == 0 && cupti_env_is(trace_env_name(TRACE_ENV_CUDA_API), "none"))
        return 0;
    if (list && *list)
        return trace_list_has(list, name);
    if (strcmp(name, "memory") == 0)
        return cupti_env_is(trace_env_name(TRACE_ENV_CUDA_MEMORY), "1");
    return strcmp(name, "sync") != 0;
}

/* Turns the wanted kinds whose pausable flag is `pausable` on or off. */
static CUptiResult cupti_set_kinds(int on, int pausable)
{
    for (size_t g = 0; g < sizeof(cupti_kind_groups) / sizeof(cupti_kind_groups[0]); g++) {
        const struct cupti_kind_group *group = &cupti_kind_groups[g];
        if (group->pausable != pausable || !(cupti.groups_wanted & (1u << g)))
            continue;
        for (int k = 0; k < 2; k++) {
            CUpti_ActivityKind kind = group->kinds[k];
            if (kind == CUPTI_ACTIVITY_KIND_INVALID)
                continue;
            CUptiResult rc =
                on ? cupti.api.activity_enable(kind) : cupti.api.activity_disable(kind);
            if (rc != CUPTI_SUCCESS)
                return rc;
        }
    }
    return CUPTI_SUCCESS;
}

/* cudaProfilerStart/Stop and their driver twins: recorded whenever a cudaProfilerApi capture
 * is on, paused or not, since the importer draws the capture windows from them. */
static const CUpti_CallbackId cupti_profiler_runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000};
static const CUpti_CallbackId cupti_profiler_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop};

static int cupti_is_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    const CUpti_CallbackId *ids = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                                      ? cupti_profiler_runtime_cbids
                                      : cupti_profiler_driver_cbids;
    return cbid == ids[0] || cbid == ids[1];
}

static int cupti_record_profiler_calls(void)
{
    for (int i = 0; i < 2; i++)
        if (cupti.api.activity_enable_runtime_api(cupti_profiler_runtime_cbids[i], 1) !=
                CUPTI_SUCCESS ||
            cupti.api.activity_enable_driver_api(cupti_profiler_driver_cbids[i], 1) !=
                CUPTI_SUCCESS)
            return -EIO;
    return 0;
}

/* The default API filter: only allow-listed calls are enabled, so CUPTI does not even
 * record the rest; the profiler calls are left alone when turning off. 0, or -EIO if CUPTI
 * refused. */
static int cupti_set_allowed_apis(CUpti_CallbackDomain domain, uint32_t cbid_limit,
                                  CUptiResult (*enable)(CUpti_CallbackId, uint8_t), int on)
{
    for (uint32_t cbid = 1; cbid < cbid_limit; cbid++) {
        const char *name = NULL;
        if (cupti.api.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS ||
            !cupti_api_allowed(name) || (!on && cupti_is_profiler_call(domain, cbid)))
            continue;
        if (enable(cbid, (uint8_t)on) != CUPTI_SUCCESS)
            return -EIO;
    }
    return 0;
}

/* API calls on or off: the allow-list, or the RUNTIME and DRIVER kinds whole with
 * --cuda-api=all or where CUPTI refuses call-by-call control (the translator then filters). */
static int cupti_set_apis(int on)
{
    if (!cupti.apis_whole &&
        cupti_set_allowed_apis(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                               cupti.api.activity_enable_runtime_api, on) == 0 &&
        cupti_set_allowed_apis(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
                               cupti.api.activity_enable_driver_api, on) == 0)
        return 0;
    cupti.apis_whole = 1;
    CUptiResult (*set)(CUpti_ActivityKind) =
        on ? cupti.api.activity_enable : cupti.api.activity_disable;
    if (set(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS ||
        set(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS)
        return -EIO;
    return on || !cupti.capture_pauses ? 0 : cupti_record_profiler_calls();
}

/* ---- --capture-range=cudaProfilerApi ------------------------------------------------- */

/* As in nsys, CUPTI collects only between cudaProfilerStart and cudaProfilerStop, so the
 * program runs at full speed outside the windows (LANTERN_CAPTURE=cudaProfilerApi). At Stop
 * the context is synchronized and CUPTI flushed first, so the records of work launched
 * inside the window are complete before the kinds go off. Called at the exit of the
 * profiler calls, from the calling thread; the lock orders concurrent calls. */
static void cupti_collect_locked(int collecting, int synchronize)
{
    if (cupti.collecting == collecting)
        return;
    if (!collecting) {
        if (synchronize && cupti.cu_ctx_synchronize)
            cupti.cu_ctx_synchronize();
        cupti.api.activity_flush_all(synchronize ? 0 : CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    if (cupti_set_kinds(collecting, 1) != CUPTI_SUCCESS ||
        (cupti.apis_wanted && cupti_set_apis(collecting) < 0))
        agent_warn("-t cuda: CUPTI refused to %s collection", collecting ? "resume" : "pause");
    cupti.collecting = collecting;
}

static void cupti_capture_set(int open)
{
    pthread_mutex_lock(&cupti.capture_lock);
    cupti.capture_open = open;
    cupti_collect_locked(cupti.capture_open && cupti.control_open, 1);
    pthread_mutex_unlock(&cupti.capture_lock);
}

/* lantern stop / start (agent.h's set_recording), on the writer thread: the same pause as
 * outside a cudaProfilerApi window, without the context synchronization (the writer thread
 * has no context): records of work still running at the stop come at the next resume or at
 * exit, and the importer keeps them by their launch. Untested on a GPU yet. */
static void cupti_set_recording(int on)
{
    if (!cupti.running)
        return;
    pthread_mutex_lock(&cupti.capture_lock);
    cupti.control_open = on;
    cupti_collect_locked(cupti.capture_open && cupti.control_open, 0);
    pthread_mutex_unlock(&cupti.capture_lock);
}

/* Whether collection can pause outside the windows: it needs the callbacks at the profiler
 * calls (one CUPTI subscriber per process). Without them everything is recorded and the
 * importer keeps the windows, as with the other capture ranges. */
static int cupti_capture_can_pause(int subscribed)
{
    if (!subscribed || !cupti_env_is(trace_env_name(TRACE_ENV_CAPTURE), "cudaProfilerApi"))
        return 0;
    for (int i = 0; i < 2; i++)
        if (cupti.api.enable_callback(1, cupti.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                      cupti_profiler_runtime_cbids[i]) != CUPTI_SUCCESS ||
            cupti.api.enable_callback(1, cupti.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                      cupti_profiler_driver_cbids[i]) != CUPTI_SUCCESS)
            return 0;
    return 1;
}

/* ---- stream and context handles ------------------------------------------------------ */

/* NVTX names streams and contexts by CUstream and CUcontext; CUPTI's records name them by
 * id. The resource callbacks are the one place both are known. */
static void cupti_put_handle(unsigned type, uint64_t handle, uint32_t context_id,
                             uint32_t stream_id)
{
    struct trace_chunk_builder *b = writer_lock();
    if (!b)
        return;
    writer_reserve_locked(64);
    if (type == TRACE_CUDA_STREAM_HANDLE)
        trace_put_cuda_stream_handle(b, &(struct trace_cuda_stream_handle){.handle = handle,
                                                                           .context = context_id,
                                                                           .stream = stream_id});
    else
        trace_put_cuda_context_handle(
            b, &(struct trace_cuda_context_handle){.handle = handle, .context = context_id});
    writer_unlock();
}

static void CUPTIAPI cupti_resource_callback(void *userdata, CUpti_CallbackDomain domain,
                                             CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *call = data;
        if (!cupti_is_profiler_call(domain, cbid))
            pytrace_on_api(domain, call); /* enabled only with --python-backtrace */
        else if (call->callbackSite == CUPTI_API_EXIT)
            cupti_capture_set(cbid == cupti_profiler_runtime_cbids[0] ||
                              cbid == cupti_profiler_driver_cbids[0]);
        return;
    }
    const CUpti_ResourceData *r = data;
    uint32_t context_id = 0, stream_id = 0;
    if (domain != CUPTI_CB_DOMAIN_RESOURCE ||
        cupti.api.get_context_id(r->context, &context_id) != CUPTI_SUCCESS)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        cupti_put_handle(TRACE_CUDA_CONTEXT_HANDLE, (uint64_t)(uintptr_t)r->context, context_id, 0);
        return;
    }
    if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED &&
        cupti.api.get_stream_id_ex(r->context, r->resourceHandle.stream, 0, &stream_id) ==
            CUPTI_SUCCESS)
        cupti_put_handle(TRACE_CUDA_STREAM_HANDLE, (uint64_t)(uintptr_t)r->resourceHandle.stream,
                         context_id, stream_id);
}

/* ---- start --------------------------------------------------------------------------- */

/* Where there is no NVIDIA driver, say so once and leave CUDA off (NVTX still records). */
static void *cupti_open_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) != 0) {
        agent_warn("-t cuda: no NVIDIA GPU here (no /dev/nvidiactl); CUDA is not traced");
        return NULL;
    }
    /* the program's own libcuda when it has loaded it; kept open: the driver stays anyway */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver)
        agent_warn("-t cuda: no CUDA driver (libcuda.so.1): %s; CUDA is not traced", dlerror());
    return driver;
}

/* The capture range (lantern profile --capture-range, --delay, --duration) as the launcher
 * passed it; the importer keeps the CUDA records inside it. Outside a cudaProfilerApi
 * capture's windows collection pauses (cupti_capture_set); the other ranges record
 * everything and filter at import, which keeps the windows exact at the price of CUPTI's
 * overhead outside them. */
static void cupti_put_capture(void)
{
    const char *mode = getenv(trace_env_name(TRACE_ENV_CAPTURE));
    const char *from = getenv(trace_env_name(TRACE_ENV_CAPTURE_FROM_NS)),
               *until = getenv(trace_env_name(TRACE_ENV_CAPTURE_UNTIL_NS));
    if ((!mode || !*mode || strcmp(mode, "none") == 0) && !from && !until)
        return;
    if (!mode || !*mode)
        mode = "none";
    struct trace_chunk_builder *b = writer_lock();
    if (!b)
        return;
    struct trace_cuda_capture r = {.mode = trace_cstr(mode),
                                   .from_ns = from ? strtoull(from, NULL, 10) : 0,
                                   .until_ns = until ? strtoull(until, NULL, 10) : 0};
    writer_reserve_locked(strlen(mode) + 64);
    trace_put_cuda_capture(b, &r);
    writer_unlock();
}

static int cupti_start(void)
{
    char why[512];
    void *driver = cupti_open_driver();
    if (!driver)
        return -ENODEV;
    int loaded = cupti_load(&cupti.api, why, sizeof(why));
    if (loaded < 0) {
        agent_warn("-t cuda: %s; CUDA is not traced", why);
        return loaded;
    }
    cupti_find_helpers(driver);
    int all_apis = cupti_env_is(trace_env_name(TRACE_ENV_CUDA_API), "all");
    struct cupti_translate_hooks hooks = {
        .intern = cupti_hook_intern,
        .api_name = cupti_hook_api_name,
        .device_attribute = cupti_hook_device_attribute,
        .thread_seen = cupti_hook_thread_seen,
    };
    cupti_translate_init(&cupti.translate, &hooks, all_apis);

    const char *kinds = getenv(trace_env_name(TRACE_ENV_CUDA_KINDS));
    for (size_t g = 0; g < sizeof(cupti_kind_groups) / sizeof(cupti_kind_groups[0]); g++)
        if (cupti_group_wanted(kinds, cupti_kind_groups[g].name))
            cupti.groups_wanted |= 1u << g;
    cupti.apis_wanted = cupti_group_wanted(kinds, "api");
    cupti.apis_whole = all_apis;
    CUptiResult rc = cupti.api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.api.activity_register_timestamp_callback(cupti_timestamp);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.api.activity_register_callbacks(cupti_buffer_requested, cupti_buffer_completed);
    /* Handles are a nicety: another CUPTI subscriber in the process (one per process is
     * allowed) only costs the NVTX names of streams and contexts, and a cudaProfilerApi
     * capture's pauses. */
    int subscribed =
        rc == CUPTI_SUCCESS &&
        cupti.api.subscribe(&cupti.subscriber, cupti_resource_callback, NULL) == CUPTI_SUCCESS;
    if (subscribed) {
        cupti.api.enable_callback(1, cupti.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
        cupti.api.enable_callback(1, cupti.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_STREAM_CREATED);
    }
    cupti.capture_pauses = cupti_capture_can_pause(subscribed);
    cupti.collecting = !cupti.capture_pauses;
    cupti.capture_open = !cupti.capture_pauses;
    if (rc == CUPTI_SUCCESS)
        rc = cupti_set_kinds(1, 0);
    if (rc == CUPTI_SUCCESS && cupti.collecting)
        rc = cupti_set_kinds(1, 1);
    int apis_rc = 0;
    if (cupti.collecting && cupti.apis_wanted)
        apis_rc = cupti_set_apis(1);
    else if (cupti.capture_pauses)
        apis_rc = cupti_record_profiler_calls();
    if (rc != CUPTI_SUCCESS || apis_rc < 0) {
        agent_warn("-t cuda: CUPTI refused activity tracing (%s); CUDA is not traced",
                   rc != CUPTI_SUCCESS ? cupti_error(rc) : "API calls");
        return -EIO;
    }
    pytrace_start(&cupti.api, subscribed ? cupti.subscriber : NULL);
    cupti_put_capture();
    cupti.running = 1;
    return 0;
}

/* Everything CUPTI holds goes through cupti_buffer_completed now, while the writer runs. */
static void cupti_flush(void)
{
    if (cupti.running)
        cupti.api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* The completed records CUPTI holds, in whatever buffers (not forced: records still being
 * written stay). */
static void cupti_hand_over(void)
{
    if (cupti.running)
        cupti.api.activity_flush_all(0);
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
    .periodic = cupti_hand_over,
    .set_recording = cupti_set_recording,
    .flush = cupti_flush,
};

/* The CUDA driver calls this at cuInit when CUDA_INJECTION64_PATH names the agent. It may
 * come after NVTX started the agent (then this does nothing) and may be called again. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
    agent_init(TRACE_FLAG_CUDA);
    return 1;
}
