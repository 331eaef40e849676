/* The GPU metric sampler's child process (gpu_metrics.h): `lantern` re-executed by the launcher
 * in a hidden mode (gpu_metrics_sampler.c), one per GPU, so that a crash or hang of CUPTI,
 * libnvperf_host or NVML costs that GPU's metrics and nothing else. It runs the GPU's backend
 * as the launcher's thread once did (PM sampling, else GPM), and streams the records, in
 * whole trace chunks, down a pipe the launcher copies into launcher.lrt; a socket carries the
 * start-up answer ("started SOURCE" or "failed WHY"), the stop (the launcher's end shut) and,
 * from a fatal signal's handler, a note naming the library that faulted. */
#include "launcher/gpu_metrics.h"
#include "launcher/samplers.h"
#include "nvml/nvml_iface.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define SINK_BUFFER_BYTES GPU_METRICS_CHUNK_MAX
/* The chunk goes down the pipe every SINK_TICK_MS (the child's main thread), or at a put once
 * its first record is SINK_FLUSH_NS old (should that thread be late) or it is half full; so a
 * crash loses the records of the last ~5 ms (PM sampling puts a decode round's ~100 samples
 * at once, every 20 ms). */
#define SINK_TICK_MS 5
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

/* ---- the crash note ---------------------------------------------------------------------- */

/* Everything below runs in a fatal signal's handler: only read, write, open, close and plain
 * arithmetic (async-signal-safe; no dladdr, which takes the loader's lock). */
static char note_maps[8192];

static uintptr_t note_hex(const char **p, const char *end)
{
    uintptr_t v = 0;
    for (; *p < end; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v * 16 + (uintptr_t)d;
    }
    return v;
}

/* The file name of the mapping of /proc/self/maps holding pc, into out; "" when none. */
static void note_library(uintptr_t pc, char *out, size_t size)
{
    out[0] = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, note_maps + have, sizeof note_maps - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        char *line = note_maps, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - note_maps)))) {
            const char *p = line;
            uintptr_t lo = note_hex(&p, nl);
            p++;
            uintptr_t hi = note_hex(&p, nl);
            if (pc >= lo && pc < hi) {
                const char *name = nl;
                while (name > p && name[-1] != ' ' && name[-1] != '/')
                    name--;
                if (name[-1] != '/' && *name != '[')
                    name = nl; /* anonymous memory (JIT code): its inode's "0", no name */
                size_t len = (size_t)(nl - name) < size - 1 ? (size_t)(nl - name) : size - 1;
                memcpy(out, name, len);
                out[len] = 0;
                close(fd);
                return;
            }
            line = nl + 1;
        }
        have -= (size_t)(line - note_maps);
        memmove(note_maps, line, have);
        if (have == sizeof note_maps - 1)
            have = 0; /* a line longer than the buffer: skipped */
    }
    close(fd);
}

static size_t note_put(char *out, size_t at, size_t size, const char *s)
{
    while (*s && at < size)
        out[at++] = *s++;
    return at;
}

static size_t note_put_u(char *out, size_t at, size_t size, uint64_t v)
{
    char digits[24];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n && at < size)
        out[at++] = digits[--n];
    return at;
}

/* "crash SIGNO LIBRARY\n" on the control socket, then the signal's default action. */
static void note_crash(int sig, siginfo_t *info, void *context)
{
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uintptr_t)((ucontext_t *)context)->uc_mcontext.pc;
#else
    (void)context;
#endif
    char library[256], note[320];
    int in_code = info->si_code > 0 && sig != SIGABRT; /* SIGABRT: abort()'s caller unknown */
    note_library(in_code ? pc : 0, library, sizeof library);
    size_t len = note_put(note, 0, sizeof note, "crash ");
    len = note_put_u(note, len, sizeof note, (uint64_t)sig);
    len = note_put(note, len, sizeof note, " ");
    len = note_put(note, len, sizeof note, library);
    len = note_put(note, len, sizeof note - 1, "");
    note[len++] = '\n';
    ssize_t unused = write(GPU_METRICS_CHILD_CONTROL_FD, note, len);
    (void)unused;
    /* SA_RESETHAND made the action the default again: re-raised, it acts when this returns */
    raise(sig);
}

static void note_install(void)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = note_crash;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &sa, NULL);
}

/* ---- one GPU: PM sampling, else (auto) GPM ----------------------------------------------- */

struct sampled_gpu {
    struct gpu_metrics_target target;
    const char *source_option;                 /* auto, pm, gpm */
    const struct gpu_metrics_backend *backend; /* the one running, NULL: none */
    void *handle;
    char why[512]; /* why none runs */
};

/* Starts the first backend the source option allows that can run; records why the others
 * could not. */
static void start_gpu(struct sampled_gpu *g)
{
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
            return;
        }
        gpu_metrics_put_status(g->target.sink, g->target.uuid, b->source, code, 0, why);
        len += (size_t)snprintf(g->why + len, len < sizeof g->why ? sizeof g->why - len : 0,
                                "%s%s: %s", len ? "; " : "", b->name, why);
        /* another profiler holding the counters would hold GPM's too */
        if (code == TRACE_GPU_METRICS_BUSY)
            break;
    }
}

/* ---- the child's main -------------------------------------------------------------------- */

static void control_say(const char *fmt, const char *a, const char *b)
{
    char line[1024];
    int n = snprintf(line, sizeof line - 1, fmt, a, b);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[len++] = '\n';
    ssize_t unused = write(GPU_METRICS_CHILD_CONTROL_FD, line, len);
    (void)unused;
}

/* Until the launcher shuts its end of the control socket (or dies), sends what the sink holds
 * every SINK_TICK_MS: a sample reaches the launcher within ~5 ms of its put whatever the rate,
 * and a crash loses no more. */
static void wait_for_stop(struct gpu_metrics_sink *s)
{
    for (;;) {
        struct pollfd p = {GPU_METRICS_CHILD_CONTROL_FD, POLLIN, 0};
        int n = poll(&p, 1, SINK_TICK_MS);
        char byte;
        if (n > 0 && read(GPU_METRICS_CHILD_CONTROL_FD, &byte, 1) <= 0 && errno != EINTR)
            return;
        if (n < 0 && errno != EINTR)
            return;
        pthread_mutex_lock(&s->lock);
        if (!trace_chunk_empty(&s->chunk))
            flush_locked(s);
        pthread_mutex_unlock(&s->lock);
    }
}

int gpu_metrics_child_main(int argc, char **argv)
{
    /* argv: uuid, mask, period_ns, set_id, source option (gpu_metrics_sampler.c) */
    if (argc != 6) {
        fprintf(stderr, "lantern: %s is the GPU metric sampler's own mode\n", argv[0]);
        return 2;
    }
    static struct gpu_metrics_sink sink;
    static struct nvml nvml;
    static struct sampled_gpu g;
    note_install();
    fault_parse();
    sink.fd = GPU_METRICS_CHILD_RECORDS_FD;
    pthread_mutex_init(&sink.lock, NULL);
    if (!(sink.buffer = malloc(SINK_BUFFER_BYTES))) {
        control_say("failed %s%s", "out of memory", "");
        return 1;
    }
    trace_chunk_begin(&sink.chunk, sink.buffer, SINK_BUFFER_BYTES, nvml_now_ns());

    unsigned int chosen;
    char why[512];
    int count = -1;
    if (nvml_open(&nvml) != 0)
        snprintf(why, sizeof why, "%s", nvml.disabled_reason);
    else
        count = nvml_select(&nvml, argv[1], &chosen, 1, why, sizeof why);
    if (count != 1) {
        control_say("failed %s%s", count == 0 ? "the GPU is gone" : why, "");
    } else {
        const struct nvml_gpu *gpu = &nvml.gpus[chosen];
        g.target = (struct gpu_metrics_target){
            .cuda_index = gpu->cuda_index,
            .uuid = gpu->uuid,
            .name = gpu->name,
            .nvml = &nvml,
            .gpu = gpu,
            .mask = (uint32_t)strtoul(argv[2], NULL, 10),
            .period_ns = strtoull(argv[3], NULL, 10),
            .set_id = strtoull(argv[4], NULL, 10),
            .sink = &sink,
        };
        g.source_option = argv[5];
        if (fault_kind != FAULT_NONE && !fault_after)
            fault_strike();
        start_gpu(&g);
        pthread_mutex_lock(&sink.lock);
        flush_locked(&sink); /* the set, or why not, before the answer */
        pthread_mutex_unlock(&sink.lock);
        if (g.backend) {
            control_say("started %s%s", g.backend->option, "");
            wait_for_stop(&sink);
            g.backend->stop(g.handle);
        } else {
            control_say("failed %s%s", g.why, "");
        }
    }
    pthread_mutex_lock(&sink.lock);
    flush_locked(&sink);
    pthread_mutex_unlock(&sink.lock);
    nvml_close(&nvml);
    pthread_mutex_destroy(&sink.lock);
    free(sink.buffer);
    return 0;
}
