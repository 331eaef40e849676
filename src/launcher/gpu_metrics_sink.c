/* What the GPU metric backends (gpu_metrics_pm.c, gpu_metrics_gpm.c) look down to
 * (gpu_metrics.h): the sink their records go out through, in whole chunks down the child's pipe,
 * their sampling thread, and the test faults the sink strikes. The child (gpu_metrics_child.c)
 * opens the sink and runs the backends; nothing here calls back into it. */
#include "launcher/gpu_metrics.h"
#include "launcher/samplers.h"
#include "nvml/nvml_iface.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SINK_BUFFER_BYTES GPU_METRICS_CHUNK_MAX
/* The chunk goes down the pipe every 5 ms (the child's main thread, gpu_metrics_child.c), or at
 * a put once its first record is SINK_FLUSH_NS old (should that thread be late) or it is half
 * full; so a crash loses the records of the last ~5 ms (PM sampling puts a decode round's ~100
 * samples at once, every 20 ms). */
#define SINK_FLUSH_NS 10000000ull

struct gpu_metrics_sink {
    int fd;
    pthread_mutex_t lock;
    struct trace_chunk_builder chunk;
    uint8_t *buffer;
    uint64_t oldest_ns; /* when the chunk's first record was put; 0: empty */
};

/* ---- a backend's thread ------------------------------------------------------------------ */

/* CLOCK_REALTIME - CLOCK_MONOTONIC, from the closest of a few paired reads. */
int64_t gpu_metrics_realtime_offset(void)
{
    int64_t best = 0;
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        struct timespec a, r, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ma = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
        int64_t mb = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
        int64_t rt = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
        if ((uint64_t)(mb - ma) < best_width) {
            best_width = (uint64_t)(mb - ma);
            best = rt - (ma + mb) / 2;
        }
    }
    return best;
}

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
    int rc = pthread_create(&th->thread, NULL, fn, arg);
    th->started = rc == 0;
    return -rc;
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

/* ---- test faults: LANTERN_TEST_SAMPLER_FAULT=segv|segv-libc|abort|hang[:N] ------------------ */

/* What the child does after its Nth sample reached the launcher (N = 0: as it starts, before
 * any backend), to prove in CI (no GPU) that a crash or hang of a vendor library costs only
 * the metrics. Read only here, in the child. */
enum fault_kind { FAULT_NONE, FAULT_SEGV, FAULT_SEGV_LIBC, FAULT_ABORT, FAULT_HANG };
static enum fault_kind fault_kind;
static uint64_t fault_after, fault_samples;

static void fault_parse(void)
{
    const char *spec = getenv("LANTERN_TEST_SAMPLER_FAULT");
    if (!spec || !*spec)
        return;
    size_t n = strcspn(spec, ":");
    fault_kind = !strncmp(spec, "segv", n) && n == 4        ? FAULT_SEGV
                 : !strncmp(spec, "segv-libc", n) && n == 9 ? FAULT_SEGV_LIBC
                 : !strncmp(spec, "abort", n) && n == 5     ? FAULT_ABORT
                 : !strncmp(spec, "hang", n) && n == 4      ? FAULT_HANG
                                                            : FAULT_NONE;
    fault_after = spec[n] == ':' ? strtoull(spec + n + 1, NULL, 10) : 0;
}

static void fault_strike(void)
{
    switch (fault_kind) {
    case FAULT_SEGV: {
        /* a real invalid access, as a vendor library's would be (not raise()) */
        volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED)
            page[1] = 1;
        abort();
    }
    case FAULT_SEGV_LIBC: {
        /* the same, inside a shared library (libc's strlen), as libnvperf_host's would be */
        const char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        volatile size_t len = page != MAP_FAILED ? strlen(page) : 0; /* strlen is pure */
        (void)len;
        abort();
    }
    case FAULT_ABORT:
        abort();
    case FAULT_HANG:
        for (;;)
            pause();
    case FAULT_NONE:
        break;
    }
}

void gpu_metrics_faults_init(void)
{
    fault_parse();
}

void gpu_metrics_fault_at_start(void)
{
    if (fault_kind != FAULT_NONE && !fault_after)
        fault_strike();
}

/* ---- the sink: records in chunks down the pipe ------------------------------------------- */

static void flush_locked(struct gpu_metrics_sink *s)
{
    launcher_flush_chunk(s->fd, &s->chunk, s->buffer, SINK_BUFFER_BYTES, nvml_now_ns());
    s->oldest_ns = 0;
}

/* Appends one record with put (flushing first when it does not fit), then sends the chunk
 * when it is half full or its first record is SINK_FLUSH_NS old. */
#define SINK_PUT(s, put, record)                                                                   \
    do {                                                                                           \
        pthread_mutex_lock(&(s)->lock);                                                            \
        if (put(&(s)->chunk, record) != 0) {                                                       \
            flush_locked(s);                                                                       \
            put(&(s)->chunk, record); /* a record larger than the chunk is dropped */              \
        }                                                                                          \
        uint64_t now = nvml_now_ns();                                                              \
        if (!(s)->oldest_ns)                                                                       \
            (s)->oldest_ns = now;                                                                  \
        if ((s)->chunk.len > SINK_BUFFER_BYTES / 2 || now - (s)->oldest_ns >= SINK_FLUSH_NS)       \
            flush_locked(s);                                                                       \
        pthread_mutex_unlock(&(s)->lock);                                                          \
    } while (0)

void gpu_metrics_put_set(struct gpu_metrics_sink *s, const struct trace_gpu_metric_set *r)
{
    SINK_PUT(s, trace_put_gpu_metric_set, r);
}

void gpu_metrics_put_sample(struct gpu_metrics_sink *s, const struct trace_gpu_metric_sample *r)
{
    SINK_PUT(s, trace_put_gpu_metric_sample, r);
    if (fault_kind != FAULT_NONE && fault_after && ++fault_samples >= fault_after) {
        pthread_mutex_lock(&s->lock);
        flush_locked(s); /* the samples before the fault are in the launcher's hands */
        pthread_mutex_unlock(&s->lock);
        fault_strike();
    }
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

struct gpu_metrics_sink *gpu_metrics_sink_open(int fd)
{
    struct gpu_metrics_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = fd;
    pthread_mutex_init(&s->lock, NULL);
    if (!(s->buffer = malloc(SINK_BUFFER_BYTES))) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    trace_chunk_begin(&s->chunk, s->buffer, SINK_BUFFER_BYTES, nvml_now_ns());
    return s;
}

void gpu_metrics_sink_flush(struct gpu_metrics_sink *s)
{
    pthread_mutex_lock(&s->lock);
    flush_locked(s);
    pthread_mutex_unlock(&s->lock);
}

void gpu_metrics_sink_tick(struct gpu_metrics_sink *s)
{
    pthread_mutex_lock(&s->lock);
    if (!trace_chunk_empty(&s->chunk))
        flush_locked(s);
    pthread_mutex_unlock(&s->lock);
}

void gpu_metrics_sink_close(struct gpu_metrics_sink *s)
{
    pthread_mutex_destroy(&s->lock);
    free(s->buffer);
    free(s);
}
