/* The energy windows of lantern.h: one sampling thread per GPU (the engine of
 * src/energy/gpu_sampling.h) feeds an energy track (src/energy/energy_model.h); window edges
 * only take a timestamp and read RAPL, and the energy between them is computed from the tracks
 * when the window ends. */
#include "lantern.h"

#include "energy/energy_model.h"
#include "energy/gpu_sampling.h"
#include "energy/rapl.h"
#include "nvml/nvml_iface.h"

#include <errno.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

/* About 11 minutes of power samples at one per API_POWER_PERIOD_NS, and 13 minutes of 100 ms
 * counter updates. Windows older than the rings fall back to the estimate made when they
 * began. */
#define API_POWER_RING (1u << 16)
#define API_UPDATE_RING (1u << 13)
/* Power is read every 10 ms (a read costs ~14 us on H100 and changes every 20-100 ms,
 * measured); the counter when the counter reader says, about once per update. */
#define API_POWER_PERIOD_NS 10000000ull
/* Until the counter's first update, reads this far apart (back to back, for up to ~100 ms,
 * inside lantern_monitor_open, which waits for that update anyway): the first update's time
 * is then known within about one read, where the reader's default 35 ms skewed the sensor's
 * gain over the first intervals and with it the windows of the monitor's first second
 * (against the fake NVML with 8 ms reads: the first windows +13 % without, -3 % with this; on
 * an H200 under load the first 50 ms window still reads +8 %, docs/benchmarks.md). */
#define API_ACQUIRE_GAP_NS 500000ull
/* How long lantern_monitor_open waits for each GPU's first sample. */
#define API_FIRST_SAMPLE_TIMEOUT_NS 500000000ull

struct api_gpu {
    struct lantern_monitor *monitor;
    const struct nvml_gpu *gpu;
    struct energy_track track;    /* guarded by monitor->lock */
    struct counter_reader reader; /* the sampling thread's */
    struct gpu_sampling sampling; /* the sampling thread's work */
    pthread_t thread;
    int thread_started;
    int counter; /* read the energy counter (else power only) */
};

struct window {
    char *name; /* NULL: a pushed window */
    uint64_t start_ns;
    struct energy_estimate gpu_start[NVML_MAX_GPUS];
    uint64_t cpu_start_uj[RAPL_MAX_PACKAGES], dram_start_uj[RAPL_MAX_PACKAGES];
    unsigned int cpu_ok, dram_ok; /* bit i: package i's counter was read at the start */
    nvtxRangeId_t range;
    struct window *next;
};

struct lantern_monitor {
    struct nvml nvml;
    int nvml_open;
    char disabled_reason[256]; /* why GPU energy is unavailable; "" when it works */
    unsigned int options;
    unsigned int gpu_count;
    struct api_gpu gpus[NVML_MAX_GPUS];
    int cpu_count;
    struct rapl_package cpus[RAPL_MAX_PACKAGES];
    pthread_mutex_t lock;
    int stop;             /* atomic */
    struct window *named; /* open named windows */
    struct window *stack; /* pushed windows, innermost first */
    nvtxDomainHandle_t domain;
};

struct gpu_result {
    int index;
    int available;
    double joules, error_joules;
    int updates;
    unsigned int flags;
};

struct lantern_measurement {
    double seconds;
    int gpu_count;
    struct gpu_result gpus[NVML_MAX_GPUS];
    int cpu_count;
    int cpu_index[RAPL_MAX_PACKAGES];
    double cpu_joules[RAPL_MAX_PACKAGES], dram_joules[RAPL_MAX_PACKAGES];
    unsigned int cpu_ok, dram_ok;
};

/* ---- version and errors -------------------------------------------------------------------- */

API const char *lantern_libversion(void)
{
    return LANTERN_VERSION;
}

API int lantern_libversion_number(void)
{
    int major = 0, minor = 0, patch = 0;
    sscanf(LANTERN_VERSION, "%d.%d.%d", &major, &minor, &patch);
    return major * 1000000 + minor * 1000 + patch;
}

/* lantern_errdetail's text: per thread, like errno, so concurrent opens do not mix. */
static __thread char api_errdetail[320];

API const char *lantern_errdetail(void)
{
    return api_errdetail;
}

API const char *lantern_strerror(int code)
{
    switch (code) {
    case LANTERN_OK:
        return "success";
    case LANTERN_ERR_ARGUMENT:
        return "invalid argument";
    case LANTERN_ERR_NO_MEMORY:
        return "out of memory";
    case LANTERN_ERR_GPU:
        return "no such GPU (or a MIG instance, which is not supported)";
    case LANTERN_ERR_NO_WINDOW:
        return "no such window is open";
    case LANTERN_ERR_WINDOW_OPEN:
        return "a window of that name is already open";
    case LANTERN_ERR_UNAVAILABLE:
        return "not measurable here";
    case LANTERN_ERR_THREAD:
        return "cannot start the sampling thread";
    case LANTERN_ERR_NO_NVML:
        return "NVML not available";
    default:
        return "unknown error";
    }
}

/* ---- sampling ------------------------------------------------------------------------------ */

static void sleep_until(uint64_t deadline)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

/* The engine's sink (src/energy/gpu_sampling.h): readings into the GPU's track. */
static void on_power(void *ctx, unsigned int gpu, const struct gpu_power_sample *p)
{
    (void)gpu;
    struct api_gpu *g = ctx;
    if (!p->power_ok)
        return;
    pthread_mutex_lock(&g->monitor->lock);
    energy_track_add_power(&g->track, p->ts, p->power_mw);
    pthread_mutex_unlock(&g->monitor->lock);
}

static void on_counter(void *ctx, unsigned int gpu, const struct gpu_counter_read *r)
{
    (void)gpu;
    struct api_gpu *g = ctx;
    pthread_mutex_lock(&g->monitor->lock);
    if (r->updated)
        energy_track_add_update(&g->track, r->update.ts, r->update.uncertainty_ns,
                                (double)r->update.mj);
    pthread_mutex_unlock(&g->monitor->lock);
}

/* Sleeps until deadline; the monitor's close stops the thread at its next wake. */
static int wait_until(void *ctx, uint64_t deadline)
{
    struct api_gpu *g = ctx;
    if (deadline > nvml_now_ns())
        sleep_until(deadline);
    return __atomic_load_n(&g->monitor->stop, __ATOMIC_ACQUIRE) ? -EINTR : 0;
}

/* One GPU's thread: power every API_POWER_PERIOD_NS, the energy counter when the counter
 * reader says (never back to back: src/energy/counter_reader.h). */
static int start_sampling(struct api_gpu *g)
{
    g->sampling = (struct gpu_sampling){
        .nvml = &g->monitor->nvml,
        .sink = {.ctx = g, .power = on_power, .counter = on_counter, .wait_until = wait_until},
        .power_count = 1,
        .power_gpus = {g->gpu},
        .power_period_ns = API_POWER_PERIOD_NS,
        .power_read = GPU_POWER_ONE,
        .counter_gpu = g->counter ? g->gpu : NULL,
        .reader = &g->reader,
        .acquire_gap_ns = API_ACQUIRE_GAP_NS,
    };
    return pthread_create(&g->thread, NULL, gpu_sampling_thread, &g->sampling);
}

static int has_first_sample(struct lantern_monitor *m, const struct api_gpu *g)
{
    pthread_mutex_lock(&m->lock);
    /* the first update seen: windows then start on the counter's scale, from an anchor whose
     * time is known (before it, only the power sensor would say) */
    int ready = g->track.power_total > 0 && (!g->counter || g->track.update_total > 0);
    pthread_mutex_unlock(&m->lock);
    return ready;
}

static void wait_first_samples(struct lantern_monitor *m)
{
    uint64_t deadline = nvml_now_ns() + API_FIRST_SAMPLE_TIMEOUT_NS;
    for (unsigned int i = 0; i < m->gpu_count; i++)
        while (!has_first_sample(m, &m->gpus[i]) && nvml_now_ns() < deadline)
            sleep_until(nvml_now_ns() + 200000);
}

static int power_only_requested(unsigned int options)
{
    const char *method = getenv("LANTERN_ENERGY_METHOD");
    return (options & LANTERN_POWER_ONLY) || (method && strcmp(method, "power") == 0);
}

static int start_gpus(struct lantern_monitor *m, const char *spec)
{
    unsigned int chosen[NVML_MAX_GPUS];
    char why[256];
    int count = nvml_select(&m->nvml, spec, chosen, NVML_MAX_GPUS, why, sizeof why);
    if (count < 0 && (!spec || !*spec)) {
        snprintf(m->disabled_reason, sizeof m->disabled_reason, "%s", why);
        return LANTERN_OK; /* nothing visible to measure is not an error */
    }
    if (count < 0) {
        snprintf(api_errdetail, sizeof api_errdetail, "%s", why);
        return LANTERN_ERR_GPU;
    }
    int power_only = power_only_requested(m->options);
    for (int i = 0; i < count; i++) {
        struct api_gpu *g = &m->gpus[i];
        g->monitor = m;
        g->gpu = &m->nvml.gpus[chosen[i]];
        g->counter = g->gpu->has_energy_counter && !power_only;
        if (energy_track_init(&g->track, API_POWER_RING, API_UPDATE_RING) != 0)
            return LANTERN_ERR_NO_MEMORY;
        g->track.power_only = !g->counter;
        m->gpu_count++;
        if (start_sampling(g) != 0)
            return LANTERN_ERR_THREAD;
        g->thread_started = 1;
    }
    wait_first_samples(m);
    return LANTERN_OK;
}

/* Loads NVML and starts sampling the GPUs; without usable NVML the monitor carries the
 * reason, unless GPUs were named, which then cannot be measured. */
static int open_gpus(struct lantern_monitor *m, const char *gpus)
{
    m->nvml_open = nvml_open(&m->nvml) == 0;
    if (m->nvml_open)
        return start_gpus(m, gpus);
    snprintf(m->disabled_reason, sizeof m->disabled_reason, "%s", m->nvml.disabled_reason);
    if (!gpus || !*gpus)
        return LANTERN_OK;
    snprintf(api_errdetail, sizeof api_errdetail, "NVML not available: %s", m->disabled_reason);
    return LANTERN_ERR_NO_NVML;
}

/* ---- monitors ------------------------------------------------------------------------------ */

API int lantern_monitor_open(const char *gpus, const char *cpus, unsigned int options,
                             lantern_monitor **out)
{
    api_errdetail[0] = '\0';
    if (!out)
        return LANTERN_ERR_ARGUMENT;
    *out = NULL;
    lantern_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return LANTERN_ERR_NO_MEMORY;
    pthread_mutex_init(&m->lock, NULL);
    m->options = options;
    int rc = LANTERN_OK;
    m->cpu_count = rapl_discover(cpus, m->cpus, RAPL_MAX_PACKAGES);
    if (m->cpu_count < 0) {
        snprintf(api_errdetail, sizeof api_errdetail,
                 "CPU packages '%s': not all exist with RAPL (powercap) here", cpus);
        rc = LANTERN_ERR_ARGUMENT;
        goto fail;
    }
    if (!gpus || strcmp(gpus, "none") != 0) { /* "none": CPU only, NVML not even loaded */
        rc = open_gpus(m, gpus);
        if (rc != LANTERN_OK)
            goto fail;
    }
    if (!(options & LANTERN_NO_NVTX))
        m->domain = nvtxDomainCreateA("lantern.energy");
    *out = m;
    return LANTERN_OK;
fail:
    lantern_monitor_close(m);
    return rc;
}

static void free_windows(struct window *w)
{
    while (w) {
        struct window *next = w->next;
        free(w->name);
        free(w);
        w = next;
    }
}

API void lantern_monitor_close(lantern_monitor *m)
{
    if (!m)
        return;
    __atomic_store_n(&m->stop, 1, __ATOMIC_RELEASE);
    for (unsigned int i = 0; i < m->gpu_count; i++) {
        if (m->gpus[i].thread_started)
            pthread_join(m->gpus[i].thread, NULL);
        energy_track_release(&m->gpus[i].track);
    }
    if (m->nvml_open)
        nvml_close(&m->nvml);
    if (m->domain)
        nvtxDomainDestroy(m->domain);
    free_windows(m->named);
    free_windows(m->stack);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

API const char *lantern_monitor_disabled_reason(const lantern_monitor *m)
{
    if (!m)
        return "no monitor";
    return m->disabled_reason;
}

API int lantern_monitor_gpu_count(const lantern_monitor *m)
{
    return m ? (int)m->gpu_count : 0;
}

API int lantern_monitor_gpu_index(const lantern_monitor *m, int i)
{
    if (!m || i < 0 || (unsigned int)i >= m->gpu_count)
        return LANTERN_ERR_ARGUMENT;
    return m->gpus[i].gpu->cuda_index;
}

API int lantern_monitor_cpu_count(const lantern_monitor *m)
{
    return m ? m->cpu_count : 0;
}

API int lantern_monitor_cpu_index(const lantern_monitor *m, int i)
{
    if (!m || i < 0 || i >= m->cpu_count)
        return LANTERN_ERR_ARGUMENT;
    return m->cpus[i].index;
}

/* ---- windows ------------------------------------------------------------------------------- */

static void read_rapl(const lantern_monitor *m, uint64_t *cpu_uj, uint64_t *dram_uj,
                      unsigned int *cpu_ok, unsigned int *dram_ok)
{
    *cpu_ok = *dram_ok = 0;
    for (int i = 0; i < m->cpu_count; i++) {
        if (rapl_read(&m->cpus[i].package, &cpu_uj[i]) == 0)
            *cpu_ok |= 1u << i;
        if (rapl_read(&m->cpus[i].dram, &dram_uj[i]) == 0)
            *dram_ok |= 1u << i;
    }
}

/* Starts a window now; the caller links it in (with the lock held). */
static struct window *window_start(lantern_monitor *m, const char *name)
{
    struct window *w = calloc(1, sizeof *w);
    if (!w || (name && !(w->name = strdup(name)))) {
        free(w);
        return NULL;
    }
    if (m->domain) {
        nvtxEventAttributes_t a = {.version = NVTX_VERSION,
                                   .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                                   .messageType = NVTX_MESSAGE_TYPE_ASCII,
                                   .message.ascii = name ? name : "window"};
        w->range = nvtxDomainRangeStartEx(m->domain, &a);
    }
    read_rapl(m, w->cpu_start_uj, w->dram_start_uj, &w->cpu_ok, &w->dram_ok);
    w->start_ns = nvml_now_ns();
    return w;
}

/* Estimates each GPU's energy at the window's start while the samples are at hand. */
static void window_note_start(lantern_monitor *m, struct window *w)
{
    for (unsigned int i = 0; i < m->gpu_count; i++)
        w->gpu_start[i] = energy_track_at(&m->gpus[i].track, w->start_ns);
}

static void measure_gpu(lantern_monitor *m, const struct window *w, uint64_t end, unsigned int i,
                        struct gpu_result *r)
{
    const struct energy_track *t = &m->gpus[i].track;
    struct energy_estimate start =
        energy_track_holds(t, w->start_ns) ? energy_track_at(t, w->start_ns) : w->gpu_start[i];
    struct energy_interval e = energy_interval_of(start, energy_track_at(t, end));
    r->index = m->gpus[i].gpu->cuda_index;
    r->available = !(e.flags & ENERGY_NO_DATA);
    r->joules = e.mj / 1000;
    r->error_joules = e.error_mj / 1000;
    r->updates = (int)e.updates;
    r->flags = (e.flags & ENERGY_EXTRAPOLATED ? LANTERN_ENERGY_EXTRAPOLATED : 0) |
               (e.flags & ENERGY_POWER_ONLY ? LANTERN_ENERGY_POWER_ONLY : 0) |
               (e.updates < 2 ? LANTERN_ENERGY_TOO_SHORT : 0);
}

/* Ends a window unlinked by the caller (lock held): measures it and frees it. */
static lantern_measurement *window_finish(lantern_monitor *m, struct window *w, uint64_t end)
{
    lantern_measurement *r = calloc(1, sizeof *r);
    if (r) {
        r->seconds = (double)(end - w->start_ns) / 1e9;
        r->gpu_count = (int)m->gpu_count;
        for (unsigned int i = 0; i < m->gpu_count; i++)
            measure_gpu(m, w, end, i, &r->gpus[i]);
    }
    if (m->domain)
        nvtxDomainRangeEnd(m->domain, w->range);
    free(w->name);
    free(w);
    return r;
}

static void measure_cpus(const lantern_monitor *m, const struct window *w_start_copy,
                         lantern_measurement *r)
{
    uint64_t cpu_uj[RAPL_MAX_PACKAGES], dram_uj[RAPL_MAX_PACKAGES];
    unsigned int cpu_ok, dram_ok;
    read_rapl(m, cpu_uj, dram_uj, &cpu_ok, &dram_ok);
    r->cpu_count = m->cpu_count;
    r->cpu_ok = cpu_ok & w_start_copy->cpu_ok;
    r->dram_ok = dram_ok & w_start_copy->dram_ok;
    for (int i = 0; i < m->cpu_count; i++) {
        r->cpu_index[i] = m->cpus[i].index;
        if (r->cpu_ok & (1u << i))
            r->cpu_joules[i] =
                rapl_joules_between(&m->cpus[i].package, w_start_copy->cpu_start_uj[i], cpu_uj[i]);
        if (r->dram_ok & (1u << i))
            r->dram_joules[i] =
                rapl_joules_between(&m->cpus[i].dram, w_start_copy->dram_start_uj[i], dram_uj[i]);
    }
}

static int window_open(lantern_monitor *m, const char *name)
{
    struct window *w = window_start(m, name);
    if (!w)
        return LANTERN_ERR_NO_MEMORY;
    pthread_mutex_lock(&m->lock);
    int rc = LANTERN_OK;
    for (struct window *o = name ? m->named : NULL; o; o = o->next)
        if (strcmp(o->name, name) == 0)
            rc = LANTERN_ERR_WINDOW_OPEN;
    if (rc == LANTERN_OK) {
        window_note_start(m, w);
        struct window **list = name ? &m->named : &m->stack;
        w->next = *list;
        *list = w;
    }
    pthread_mutex_unlock(&m->lock);
    if (rc != LANTERN_OK) {
        if (m->domain)
            nvtxDomainRangeEnd(m->domain, w->range);
        free(w->name);
        free(w);
    }
    return rc;
}

static int window_close(lantern_monitor *m, const char *name, lantern_measurement **out)
{
    uint64_t end = nvml_now_ns();
    *out = NULL;
    pthread_mutex_lock(&m->lock);
    struct window **link = name ? &m->named : &m->stack;
    while (*link && name && strcmp((*link)->name, name) != 0)
        link = &(*link)->next;
    struct window *w = *link;
    if (!w) {
        pthread_mutex_unlock(&m->lock);
        return LANTERN_ERR_NO_WINDOW;
    }
    *link = w->next;
    struct window start = *w; /* RAPL start values outlive the window */
    lantern_measurement *r = window_finish(m, w, end);
    pthread_mutex_unlock(&m->lock);
    if (!r)
        return LANTERN_ERR_NO_MEMORY;
    measure_cpus(m, &start, r);
    *out = r;
    return LANTERN_OK;
}

API int lantern_window_begin(lantern_monitor *m, const char *name)
{
    return m && name ? window_open(m, name) : LANTERN_ERR_ARGUMENT;
}

API int lantern_window_end(lantern_monitor *m, const char *name, lantern_measurement **out)
{
    return m && name && out ? window_close(m, name, out) : LANTERN_ERR_ARGUMENT;
}

API int lantern_window_push(lantern_monitor *m)
{
    return m ? window_open(m, NULL) : LANTERN_ERR_ARGUMENT;
}

API int lantern_window_pop(lantern_monitor *m, lantern_measurement **out)
{
    return m && out ? window_close(m, NULL, out) : LANTERN_ERR_ARGUMENT;
}

/* ---- measurements -------------------------------------------------------------------------- */

API double lantern_measurement_time(const lantern_measurement *r)
{
    return r ? r->seconds : 0;
}

API int lantern_measurement_gpu_count(const lantern_measurement *r)
{
    return r ? r->gpu_count : 0;
}

static const struct gpu_result *gpu_result(const lantern_measurement *r, int i)
{
    return r && i >= 0 && i < r->gpu_count ? &r->gpus[i] : NULL;
}

API int lantern_measurement_gpu_index(const lantern_measurement *r, int i)
{
    const struct gpu_result *g = gpu_result(r, i);
    return g ? g->index : LANTERN_ERR_ARGUMENT;
}

API int lantern_measurement_gpu_energy(const lantern_measurement *r, int i, double *joules,
                                       double *error_joules)
{
    const struct gpu_result *g = gpu_result(r, i);
    if (!g)
        return LANTERN_ERR_ARGUMENT;
    if (!g->available)
        return LANTERN_ERR_UNAVAILABLE;
    if (joules)
        *joules = g->joules;
    if (error_joules)
        *error_joules = g->error_joules;
    return LANTERN_OK;
}

API int lantern_measurement_gpu_updates(const lantern_measurement *r, int i)
{
    const struct gpu_result *g = gpu_result(r, i);
    return g ? g->updates : LANTERN_ERR_ARGUMENT;
}

API unsigned int lantern_measurement_gpu_flags(const lantern_measurement *r, int i)
{
    const struct gpu_result *g = gpu_result(r, i);
    return g ? g->flags : 0;
}

API int lantern_measurement_cpu_count(const lantern_measurement *r)
{
    return r ? r->cpu_count : 0;
}

API int lantern_measurement_cpu_index(const lantern_measurement *r, int i)
{
    return r && i >= 0 && i < r->cpu_count ? r->cpu_index[i] : LANTERN_ERR_ARGUMENT;
}

static int rapl_result(const lantern_measurement *r, int i, unsigned int ok, const double *values,
                       double *joules)
{
    if (!r || i < 0 || i >= r->cpu_count)
        return LANTERN_ERR_ARGUMENT;
    if (!(ok & (1u << i)))
        return LANTERN_ERR_UNAVAILABLE;
    if (joules)
        *joules = values[i];
    return LANTERN_OK;
}

API int lantern_measurement_cpu_energy(const lantern_measurement *r, int i, double *joules)
{
    return r ? rapl_result(r, i, r->cpu_ok, r->cpu_joules, joules) : LANTERN_ERR_ARGUMENT;
}

API int lantern_measurement_dram_energy(const lantern_measurement *r, int i, double *joules)
{
    return r ? rapl_result(r, i, r->dram_ok, r->dram_joules, joules) : LANTERN_ERR_ARGUMENT;
}

API void lantern_measurement_free(lantern_measurement *r)
{
    free(r);
}
