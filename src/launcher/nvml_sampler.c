/* The launcher's GPU sampler (see nvml_sampler.h). Threads append records to one chunk under a
 * mutex (the launcher is not the profiled program: a lock costs nobody), and the power
 * thread writes the chunk out every ~200 ms or when it is half full, so memory stays bounded
 * and a killed launcher loses at most that much. Every NVML call is counted and timed: the
 * sampler's footprint (calls, time in flight, CPU) is itself recorded (TRACE_NVML_SAMPLER). */
#include "launcher/nvml_sampler.h"
#include "energy/gpu_sampling.h"
#include "launcher/samplers.h"
#include "nvml/nvml_iface.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SAMPLER_BUFFER_BYTES (1u << 20)
#define SAMPLER_FLUSH_NS 200000000ull
#define SAMPLER_STATE_PERIOD_NS 100000000ull /* clocks, utilization, ...: NVML averages them */

/* Calls of one kind to NVML for one GPU: how many, and how long they were in flight. */
struct call_count {
    uint64_t calls, busy_ns, max_ns;
};

struct sampler_gpu {
    const struct nvml_gpu *gpu;
    pthread_t energy_thread;
    int energy_started;
    struct counter_reader counter;          /* the energy thread's */
    struct gpu_sampling energy_sampling;    /* the energy thread's: the counter only */
    struct call_count energy, power, state; /* guarded by the sampler's lock */
};

struct nvml_sampler {
    struct launcher_file *file;
    struct nvml nvml;
    unsigned int gpu_count;
    struct sampler_gpu gpus[NVML_MAX_GPUS];
    struct gpu_sampling power_sampling; /* the power thread's: power and state, every GPU */
    pthread_t power_thread;
    int power_started;
    uint64_t start_ns;
    uint64_t next_flush;  /* the power thread's; 0 before its first round */
    int stop;             /* atomic; set under lock, with wake broadcast */
    pthread_mutex_t lock; /* guards the chunk and the call counts */
    pthread_cond_t wake;  /* the threads' sleep, cut short by stop */
    struct trace_chunk_builder chunk;
    uint8_t *buffer;
};

/* ---- the chunk ------------------------------------------------------------------------------ */

/* Writes the chunk out and starts the next one (lock held). */
static void flush_locked(struct nvml_sampler *s)
{
    launcher_file_flush(s->file, &s->chunk, s->buffer, SAMPLER_BUFFER_BYTES, nvml_now_ns());
}

/* Record builders: each appends one record (lock held), flushing and retrying once if the
 * chunk is full. */
static void put_power(struct nvml_sampler *s, unsigned int gpu, uint64_t ts, int instant_ok,
                      unsigned int instant, int avg_ok, unsigned int avg)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct trace_nvml_power r = {.gpu = gpu,
                                     .ts = ts,
                                     .power_mw = instant_ok ? (uint64_t)instant + 1 : 0,
                                     .power_avg_mw = avg_ok ? (uint64_t)avg + 1 : 0};
        if (trace_put_nvml_power(&s->chunk, &r) == 0)
            return;
        flush_locked(s);
    }
}

static void put_energy(struct nvml_sampler *s, unsigned int gpu, uint64_t ts, uint64_t mj,
                       uint64_t uncertainty_ns)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct trace_nvml_energy r = {
            .gpu = gpu, .ts = ts, .energy_mj = mj, .uncertainty_ns = uncertainty_ns};
        if (trace_put_nvml_energy(&s->chunk, &r) == 0)
            return;
        flush_locked(s);
    }
}

static void put_state(struct nvml_sampler *s, unsigned int gpu, uint64_t ts,
                      const struct gpu_state *st)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        const uint64_t *v = st->values;
        struct trace_nvml_state r = {.gpu = gpu,
                                     .ts = ts,
                                     .sm_clock_mhz = v[0],
                                     .memory_clock_mhz = v[1],
                                     .gpu_util = v[2],
                                     .memory_util = v[3],
                                     .memory_used_bytes = v[4],
                                     .temperature_c = v[5],
                                     .throttle_reasons = v[6]};
        if (trace_put_nvml_state(&s->chunk, &r) == 0)
            return;
        flush_locked(s);
    }
}

static void put_gpu(struct nvml_sampler *s, const struct nvml_gpu *g)
{
    struct trace_nvml_gpu r = {
        .gpu = g->nvml_index,
        .uuid = trace_cstr(g->uuid),
        .name = trace_cstr(g->name),
        .power_limit_mw = g->power_limit_mw,
        .memory_bytes = g->memory_bytes,
        .flags = (g->has_energy_counter ? TRACE_NVML_HAS_ENERGY_COUNTER : 0) |
                 (g->has_instant_power ? TRACE_NVML_HAS_INSTANT_POWER : 0),
        .cuda_index = (uint64_t)(g->cuda_index + 1),
    };
    trace_put_nvml_gpu(&s->chunk, &r);
}

/* ---- the engine's sink (src/energy/gpu_sampling.h) ---------------------------------------- */

/* Sleeps until deadline (CLOCK_MONOTONIC) or until the sampler stops. Returns 0, or -EINTR
 * when it stopped. */
static int wait_until(void *ctx, uint64_t deadline)
{
    struct nvml_sampler *s = ctx;
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    pthread_mutex_lock(&s->lock);
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) &&
           pthread_cond_timedwait(&s->wake, &s->lock, &ts) != ETIMEDOUT)
        ;
    int stopped = __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&s->lock);
    return stopped ? -EINTR : 0;
}

static void count_call(struct call_count *c, uint64_t t0, uint64_t t1)
{
    c->calls++;
    c->busy_ns += t1 - t0;
    if (t1 - t0 > c->max_ns)
        c->max_ns = t1 - t0;
}

static void on_power(void *ctx, unsigned int gpu, const struct gpu_power_sample *p)
{
    struct nvml_sampler *s = ctx;
    struct sampler_gpu *sg = &s->gpus[gpu];
    unsigned int index = sg->gpu->nvml_index;
    pthread_mutex_lock(&s->lock);
    count_call(&sg->power, p->ts, p->power_end_ns);
    if (p->with_state)
        count_call(&sg->state, p->power_end_ns, p->state_end_ns);
    if (p->instant_ok || p->average_ok)
        put_power(s, index, p->ts, p->instant_ok, p->instant_mw, p->average_ok, p->average_mw);
    if (p->with_state)
        put_state(s, index, p->ts, &p->state);
    pthread_mutex_unlock(&s->lock);
}

static void on_counter(void *ctx, unsigned int gpu, const struct gpu_counter_read *r)
{
    struct nvml_sampler *s = ctx;
    struct sampler_gpu *sg = &s->gpus[gpu];
    pthread_mutex_lock(&s->lock);
    count_call(&sg->energy, r->t0, r->t1);
    if (r->updated)
        put_energy(s, sg->gpu->nvml_index, r->update.ts, r->update.mj, r->update.uncertainty_ns);
    pthread_mutex_unlock(&s->lock);
}

/* After each power round: the chunk goes out every SAMPLER_FLUSH_NS or when half full (the
 * energy threads append to it too). */
static void on_round(void *ctx, uint64_t now)
{
    struct nvml_sampler *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (!s->next_flush)
        s->next_flush = now + SAMPLER_FLUSH_NS;
    if (now >= s->next_flush || s->chunk.len > SAMPLER_BUFFER_BYTES / 2) {
        flush_locked(s);
        s->next_flush = now + SAMPLER_FLUSH_NS;
    }
    pthread_mutex_unlock(&s->lock);
}

/* The sampler's own footprint, one record per GPU (lock held). The power thread's CPU time is
 * shared evenly among the GPUs it reads. */
static void put_footprint(struct nvml_sampler *s, const struct sampler_gpu *sg, uint64_t now)
{
    const struct call_count *kinds[] = {&sg->energy, &sg->power, &sg->state};
    for (int attempt = 0; attempt < 2; attempt++) {
        struct trace_nvml_sampler r = {
            .gpu = sg->gpu->nvml_index,
            .duration_ns = now - s->start_ns,
            .energy_calls = kinds[0]->calls,
            .energy_busy_ns = kinds[0]->busy_ns,
            .energy_max_ns = kinds[0]->max_ns,
            .power_calls = kinds[1]->calls,
            .power_busy_ns = kinds[1]->busy_ns,
            .power_max_ns = kinds[1]->max_ns,
            .state_calls = kinds[2]->calls,
            .state_busy_ns = kinds[2]->busy_ns,
            .state_max_ns = kinds[2]->max_ns,
            .cpu_ns = sg->energy_sampling.cpu_ns + s->power_sampling.cpu_ns / s->gpu_count,
            .counter_mode = sg->energy_started ? (uint64_t)sg->counter.mode + 1 : 0,
            .counter_resets = sg->counter.resets,
        };
        if (trace_put_nvml_sampler(&s->chunk, &r) == 0)
            return;
        flush_locked(s);
    }
}

/* ---- start and stop ------------------------------------------------------------------------ */

static void write_disabled(struct launcher_file *f, const char *why)
{
    uint8_t buf[512];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, nvml_now_ns());
    struct trace_nvml_disabled r = {.reason = trace_cstr(why)};
    if (trace_put_nvml_disabled(&b, &r) == 0) /* a failed write: the caller says it too */
        launcher_file_write(f, buf, trace_chunk_finish(&b));
}

static const struct gpu_sink sampler_sink = {
    .power = on_power, .counter = on_counter, .round = on_round, .wait_until = wait_until};

/* 0, or pthread_create's error, negated. */
static int start_threads(struct nvml_sampler *s, uint64_t period_ns)
{
    int rc;
    struct gpu_sink sink = sampler_sink;
    sink.ctx = s;
    for (unsigned int i = 0; i < s->gpu_count; i++) { /* the counter: when its reader says */
        struct sampler_gpu *sg = &s->gpus[i];
        if (!sg->gpu->has_energy_counter)
            continue;
        struct gpu_sampling *e = &sg->energy_sampling;
        *e = (struct gpu_sampling){.nvml = &s->nvml,
                                   .sink = sink,
                                   .counter_gpu = sg->gpu,
                                   .counter_slot = i,
                                   .reader = &sg->counter};
        if ((rc = pthread_create(&sg->energy_thread, NULL, gpu_sampling_thread, e)) != 0)
            return -rc;
        sg->energy_started = 1;
    }
    /* power at --nvml-rate, always once at the start and once at the stop, so a program
     * shorter than a period (or one that ended before this thread first ran) still has power
     * and state at both ends */
    struct gpu_sampling *w = &s->power_sampling;
    *w = (struct gpu_sampling){.nvml = &s->nvml,
                               .sink = sink,
                               .power_count = s->gpu_count,
                               .power_period_ns = period_ns,
                               .power_read = GPU_POWER_BOTH,
                               .state_period_ns = SAMPLER_STATE_PERIOD_NS,
                               .resume_now = 1,
                               .both_ends = 1};
    for (unsigned int i = 0; i < s->gpu_count; i++) {
        w->power_gpus[i] = s->gpus[i].gpu;
        w->power_slots[i] = i;
    }
    if ((rc = pthread_create(&s->power_thread, NULL, gpu_sampling_thread, w)) != 0)
        return -rc;
    s->power_started = 1;
    return 0;
}

int nvml_sampler_start(struct launcher_file *f, const char *gpus, double rate_hz,
                       struct nvml_sampler **out, char *why, size_t why_len)
{
    *out = NULL;
    int rc = -ENOMEM;
    struct nvml_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->buffer = malloc(SAMPLER_BUFFER_BYTES))) {
        snprintf(why, why_len, "out of memory");
        goto fail;
    }
    s->file = f;
    s->start_ns = nvml_now_ns();
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    if ((rc = nvml_open(&s->nvml)) != 0) {
        snprintf(why, why_len, "%s", s->nvml.disabled_reason);
        goto fail;
    }
    unsigned int chosen[NVML_MAX_GPUS];
    int count = rc = nvml_select(&s->nvml, gpus, chosen, NVML_MAX_GPUS, why, why_len);
    if (count < 0)
        goto fail;
    trace_chunk_begin(&s->chunk, s->buffer, SAMPLER_BUFFER_BYTES, nvml_now_ns());
    for (int i = 0; i < count; i++) {
        s->gpus[i] = (struct sampler_gpu){.gpu = &s->nvml.gpus[chosen[i]]};
        put_gpu(s, s->gpus[i].gpu);
    }
    s->gpu_count = (unsigned int)count;
    uint64_t period_ns = (uint64_t)(1e9 / (rate_hz > 0 ? rate_hz : NVML_SAMPLER_DEFAULT_HZ));
    if ((rc = start_threads(s, period_ns)) != 0) {
        snprintf(why, why_len, "cannot start the sampling threads");
        nvml_sampler_stop(s);
        write_disabled(f, why);
        return rc;
    }
    *out = s;
    return 0;
fail:
    write_disabled(f, why);
    if (s) {
        nvml_close(&s->nvml);
        if (s->buffer) {
            pthread_cond_destroy(&s->wake);
            pthread_mutex_destroy(&s->lock);
        }
        free(s->buffer);
        free(s);
    }
    return rc;
}

void nvml_sampler_stop(struct nvml_sampler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    if (s->power_started)
        pthread_join(s->power_thread, NULL);
    for (unsigned int i = 0; i < s->gpu_count; i++)
        if (s->gpus[i].energy_started)
            pthread_join(s->gpus[i].energy_thread, NULL);
    pthread_mutex_lock(&s->lock);
    uint64_t now = nvml_now_ns();
    for (unsigned int i = 0; i < s->gpu_count; i++)
        put_footprint(s, &s->gpus[i], now);
    flush_locked(s);
    pthread_mutex_unlock(&s->lock);
    nvml_close(&s->nvml);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s->buffer);
    free(s);
}

/* ---- the launcher's row (samplers.h): `lantern profile` samples every GPU at --nvml-rate ---- */

static int sampler_row_start(struct launcher_file *f, const struct launcher_options *o,
                             void **state, char *why, size_t why_len)
{
    struct nvml_sampler *s = NULL;
    int rc = nvml_sampler_start(f, NULL, o->nvml_rate, &s, why, why_len);
    *state = s;
    return rc;
}

static void sampler_row_stop(void *state)
{
    nvml_sampler_stop(state);
}

const struct launcher_sampler launcher_sampler_nvml = {"nvml", "GPU power", sampler_row_start,
                                                       sampler_row_stop};
