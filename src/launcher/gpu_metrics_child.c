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
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

/* The sink goes down the pipe every SINK_TICK_MS at least (gpu_metrics_sink.c says why). */
#define SINK_TICK_MS 5

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
        gpu_metrics_sink_tick(s);
    }
}

int gpu_metrics_child_main(int argc, char **argv)
{
    /* argv: uuid, mask, period_ns, set_id, source option (gpu_metrics_sampler.c) */
    if (argc != 6) {
        fprintf(stderr, "lantern: %s is the GPU metric sampler's own mode\n", argv[0]);
        return 2;
    }
    static struct nvml nvml;
    static struct sampled_gpu g;
    note_install();
    gpu_metrics_faults_init();
    struct gpu_metrics_sink *sink = gpu_metrics_sink_open(GPU_METRICS_CHILD_RECORDS_FD);
    if (!sink) {
        control_say("failed %s%s", "out of memory", "");
        return 1;
    }

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
            .sink = sink,
        };
        g.source_option = argv[5];
        gpu_metrics_fault_at_start();
        start_gpu(&g);
        gpu_metrics_sink_flush(sink); /* the set, or why not, before the answer */
        if (g.backend) {
            control_say("started %s%s", g.backend->option, "");
            wait_for_stop(sink);
            g.backend->stop(g.handle);
        } else {
            control_say("failed %s%s", g.why, "");
        }
    }
    gpu_metrics_sink_flush(sink);
    nvml_close(&nvml);
    gpu_metrics_sink_close(sink);
    return 0;
}
