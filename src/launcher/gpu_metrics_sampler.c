/* The launcher's GPU metric sampler (`lantern profile --gpu-metrics`, gpu_metrics.h): for each
 * GPU the program can see (or --gpu-metrics-devices), CUPTI PM sampling, or NVML GPM where PM
 * sampling cannot run (--gpu-metrics-source=auto), never both on one GPU (the two together
 * hung CUDA calls in a test process on an H200). The GPUs start in parallel, and the program
 * starts only once every GPU samples (PM sampling's configuration takes 0.2-0.6 s), so its
 * first kernels are covered. Records go through one chunk under a mutex (the launcher is not
 * the profiled program: a lock costs nobody), written out every ~200 ms or when half full. */
#include "launcher/gpu_metrics.h"
#include "launcher/samplers.h"
#include "nvml/nvml_iface.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SINK_BUFFER_BYTES (1u << 20)
#define SINK_FLUSH_NS 200000000ull
/* Half nsys's 10 kHz: CUPTI decodes and evaluates a sample of the 13 metrics in ~120 us of CPU
 * on the H200 host, so one thread cannot keep up with 10 kHz (21 % of the samples lost beside
 * a PyTorch job); at 5 kHz it loses none and takes ~60 % of a core (docs/gpu-metrics.md). */
#define DEFAULT_HZ 5000.0

struct gpu_metrics_sink {
    int fd;
    pthread_mutex_t lock;
    struct trace_chunk_builder chunk;
    uint8_t *buffer;
    uint64_t flushed_ns;
};

/* ---- a backend's thread ------------------------------------------------------------------ */

void gpu_metrics_thread_init(struct gpu_metrics_thread *th)
{
    memset(th, 0, sizeof *th);
    pthread_mutex_init(&th->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&th->wake, &attr);
    pthread_condattr_destroy(&attr);
}

int gpu_metrics_thread_start(struct gpu_metrics_thread *th, void *(*fn)(void *), void *arg)
{
    th->started = pthread_create(&th->thread, NULL, fn, arg) == 0;
    return th->started ? 0 : -1;
}

int gpu_metrics_thread_sleep(struct gpu_metrics_thread *th, uint64_t until)
{
    struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                          .tv_nsec = (long)(until % 1000000000u)};
    pthread_mutex_lock(&th->lock);
    while (!th->stop && nvml_now_ns() < until)
        pthread_cond_timedwait(&th->wake, &th->lock, &ts);
    int stopped = th->stop;
    pthread_mutex_unlock(&th->lock);
    return stopped;
}

void gpu_metrics_thread_stop(struct gpu_metrics_thread *th)
{
    pthread_mutex_lock(&th->lock);
    th->stop = 1;
    pthread_cond_signal(&th->wake);
    pthread_mutex_unlock(&th->lock);
    if (th->started)
        pthread_join(th->thread, NULL);
    th->started = 0;
    pthread_cond_destroy(&th->wake);
    pthread_mutex_destroy(&th->lock);
}

void gpu_metrics_thread_count(struct gpu_metrics_thread *th, uint64_t start, uint64_t end,
                              uint64_t period_ns)
{
    /* whole periods missing between the last sample's end and this one's start */
    if (th->last_end && start > th->last_end && period_ns)
        th->lost += (start - th->last_end + period_ns / 2) / period_ns;
    if (!th->first_start)
        th->first_start = start;
    th->last_end = end;
    th->samples++;
}

void gpu_metrics_thread_finish(struct gpu_metrics_thread *th, const struct gpu_metrics_target *t,
                               unsigned int source, const char *lost_reason)
{
    if (th->lost || lost_reason)
        gpu_metrics_put_status(t->sink, t->uuid, source, TRACE_GPU_METRICS_LOST, th->lost,
                               lost_reason ? lost_reason : "samples missing between others");
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    struct trace_gpu_metric_sampler f = {
        .set_id = t->set_id,
        .duration_ns = th->last_end > th->first_start ? th->last_end - th->first_start : 0,
        .samples = th->samples,
        .lost = th->lost,
        .cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec,
        .reads = th->reads,
        .read_ns = th->read_ns,
    };
    gpu_metrics_put_sampler(t->sink, &f);
}

/* ---- the sink ---------------------------------------------------------------------------- */

static void flush_locked(struct gpu_metrics_sink *s)
{
    s->flushed_ns = nvml_now_ns();
    launcher_flush_chunk(s->fd, &s->chunk, s->buffer, SINK_BUFFER_BYTES, s->flushed_ns);
}

/* Appends one record with put (flushing first when the chunk is half full or old). */
#define SINK_PUT(s, put, record)                                                                   \
    do {                                                                                           \
        pthread_mutex_lock(&(s)->lock);                                                            \
        if ((s)->chunk.len > SINK_BUFFER_BYTES / 2 ||                                              \
            nvml_now_ns() - (s)->flushed_ns > SINK_FLUSH_NS)                                       \
            flush_locked(s);                                                                       \
        if (put(&(s)->chunk, record) != 0) {                                                       \
            flush_locked(s);                                                                       \
            put(&(s)->chunk, record); /* a record larger than the chunk is dropped */              \
        }                                                                                          \
        pthread_mutex_unlock(&(s)->lock);                                                          \
    } while (0)

void gpu_metrics_put_set(struct gpu_metrics_sink *s, const struct trace_gpu_metric_set *r)
{
    SINK_PUT(s, trace_put_gpu_metric_set, r);
}

void gpu_metrics_put_sample(struct gpu_metrics_sink *s, const struct trace_gpu_metric_sample *r)
{
    SINK_PUT(s, trace_put_gpu_metric_sample, r);
}

void gpu_metrics_put_sampler(struct gpu_metrics_sink *s, const struct trace_gpu_metric_sampler *r)
{
    SINK_PUT(s, trace_put_gpu_metric_sampler, r);
}

void gpu_metrics_put_status(struct gpu_metrics_sink *s, const char *uuid, unsigned int source,
                            unsigned int code, uint64_t count, const char *reason)
{
    struct trace_gpu_metric_status r = {.gpu_uuid = trace_cstr(uuid ? uuid : ""),
                                        .source = source,
                                        .code = code,
                                        .count = count,
                                        .reason = trace_cstr(reason)};
    SINK_PUT(s, trace_put_gpu_metric_status, &r);
}

/* ---- one GPU: PM sampling, else (auto) GPM ----------------------------------------------- */

struct sampled_gpu {
    struct gpu_metrics_target target;
    const char *source_option; /* auto, pm, gpm */
    pthread_t starter;
    int starter_running;
    const struct gpu_metrics_backend *backend; /* the one running, NULL: none */
    void *handle;
    char why[512]; /* why none runs */
};

/* Starts the first backend the source option allows that can run; records why the others
 * could not. Runs on a thread of its own, so the GPUs start together. */
static void *start_gpu(void *arg)
{
    struct sampled_gpu *g = arg;
    const struct gpu_metrics_backend *const order[] = {&gpu_metrics_pm_backend,
                                                       &gpu_metrics_gpm_backend};
    size_t len = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const struct gpu_metrics_backend *b = order[i];
        int wanted = !strcmp(g->source_option, "auto") || !strcmp(g->source_option, b->option);
        unsigned int code = 0;
        char why[256];
        if (!wanted)
            continue;
        g->handle = b->start(&g->target, &code, why, sizeof why);
        if (g->handle) {
            g->backend = b;
            return NULL;
        }
        gpu_metrics_put_status(g->target.sink, g->target.uuid, b->source, code, 0, why);
        len += (size_t)snprintf(g->why + len, len < sizeof g->why ? sizeof g->why - len : 0,
                                "%s%s: %s", len ? "; " : "", b->name, why);
        /* another profiler holding the counters would hold GPM's too */
        if (code == TRACE_GPU_METRICS_BUSY)
            break;
    }
    return NULL;
}

/* ---- the launcher's row ------------------------------------------------------------------ */

struct gpu_metrics_sampler {
    struct gpu_metrics_sink sink;
    struct nvml nvml;
    struct sampled_gpu gpus[NVML_MAX_GPUS];
    unsigned int count;
};

static void sampler_free(struct gpu_metrics_sampler *s)
{
    for (unsigned int i = 0; i < s->count; i++)
        if (s->gpus[i].backend)
            s->gpus[i].backend->stop(s->gpus[i].handle);
    pthread_mutex_lock(&s->sink.lock);
    flush_locked(&s->sink);
    pthread_mutex_unlock(&s->sink.lock);
    nvml_close(&s->nvml);
    pthread_mutex_destroy(&s->sink.lock);
    free(s->sink.buffer);
    free(s);
}

static int sampler_row_start(int fd, const struct launcher_options *o, void **state, char *why,
                             size_t why_len)
{
    *state = NULL;
    struct gpu_metrics_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->sink.buffer = malloc(SINK_BUFFER_BYTES))) {
        free(s);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    s->sink.fd = fd;
    pthread_mutex_init(&s->sink.lock, NULL);
    s->sink.flushed_ns = nvml_now_ns();
    trace_chunk_begin(&s->sink.chunk, s->sink.buffer, SINK_BUFFER_BYTES, s->sink.flushed_ns);

    double hz = o->gpu_metrics_hz > 0 ? o->gpu_metrics_hz : DEFAULT_HZ;
    struct gpu_metrics_target template = {
        .sink = &s->sink,
        .nvml = &s->nvml,
        .mask = o->gpu_metrics ? o->gpu_metrics : (1u << GPU_METRIC_COUNT) - 1,
        .period_ns = (uint64_t)(1e9 / hz + 0.5),
    };
    unsigned int chosen[NVML_MAX_GPUS];
    int count = -1;
    if (nvml_open(&s->nvml) != 0)
        snprintf(why, why_len, "%s", s->nvml.disabled_reason);
    else
        count = nvml_select(&s->nvml, o->gpu_metrics_devices, chosen, NVML_MAX_GPUS, why, why_len);
    if (count <= 0) {
        if (count == 0)
            snprintf(why, why_len, "no GPU to sample");
        gpu_metrics_put_status(&s->sink, NULL, 0, TRACE_GPU_METRICS_UNAVAILABLE, 0, why);
        sampler_free(s);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        struct sampled_gpu *g = &s->gpus[i];
        const struct nvml_gpu *gpu = &s->nvml.gpus[chosen[i]];
        g->target = template;
        g->target.cuda_index = gpu->cuda_index;
        g->target.uuid = gpu->uuid;
        g->target.name = gpu->name;
        g->target.gpu = gpu;
        g->target.set_id = (uint64_t)i + 1;
        g->source_option = o->gpu_metrics_source ? o->gpu_metrics_source : "auto";
    }
    s->count = (unsigned int)count;
    for (unsigned int i = 0; i < s->count; i++)
        if (pthread_create(&s->gpus[i].starter, NULL, start_gpu, &s->gpus[i]) == 0)
            s->gpus[i].starter_running = 1;
        else
            start_gpu(&s->gpus[i]);
    for (unsigned int i = 0; i < s->count; i++)
        if (s->gpus[i].starter_running)
            pthread_join(s->gpus[i].starter, NULL);

    /* Any GPU without metrics is said; the others sample on. */
    size_t len = 0;
    unsigned int running = 0;
    why[0] = 0;
    for (unsigned int i = 0; i < s->count; i++) {
        const struct sampled_gpu *g = &s->gpus[i];
        if (g->backend) {
            running++;
            continue;
        }
        len += (size_t)snprintf(why + len, len < why_len ? why_len - len : 0, "%sGPU %d (%s): %s",
                                len ? "; " : "", g->target.cuda_index, g->target.name, g->why);
    }
    if (!running) {
        sampler_free(s);
        return -1;
    }
    *state = s;
    return why[0] ? -1 : 0; /* -1: said, though sampling runs on the other GPUs */
}

static void sampler_row_stop(void *state)
{
    if (state)
        sampler_free(state);
}

const struct launcher_sampler launcher_sampler_gpu_metrics = {"gpu_metrics", "GPU metrics",
                                                              sampler_row_start, sampler_row_stop};
