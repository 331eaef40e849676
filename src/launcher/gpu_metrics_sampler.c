/* The launcher's GPU metric sampler (`lantern profile --gpu-metrics`, gpu_metrics.h): for each
 * GPU the program can see (or --gpu-metrics-devices), CUPTI PM sampling, or NVML GPM where PM
 * sampling cannot run (--gpu-metrics-source=auto), never both on one GPU (the two together
 * hung CUDA calls in a test process on an H200). Each GPU is sampled by a child process of its
 * own (gpu_metrics_child.c: `lantern` re-executed, before the launcher or it has touched CUDA),
 * because CUPTI's host evaluation (libnvperf_host) crashed the launcher, and with it the run,
 * on an H200 host: a vendor library's crash or hang must cost only its GPU's metrics. The GPUs
 * start in parallel, and the program starts only once every GPU samples or said why not (PM
 * sampling's configuration takes 0.2-0.6 s), so its first kernels are covered.
 *
 * A relay thread per child copies its chunks into launcher.lrt whole, checked (a chunk cut
 * short at the pipe's end, or damaged, is discarded and counted), and watches it: its death
 * (the signal, and the library the child's handler found at the faulting instruction), a
 * start or stop that does not come within a deadline (then SIGKILL) become a status record
 * (TRACE_GPU_METRICS_CRASHED, _HUNG) and one `lantern:` line; the program runs on. When a
 * child ends, its cost (CPU, memory, the delay of its samples) is a TRACE_GPU_METRIC_RELAY. */
#include "launcher/gpu_metrics.h"
#include "launcher/launcher_internal.h"
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Half nsys's 10 kHz: CUPTI decodes and evaluates a sample of the 13 metrics in ~120 us of CPU
 * on the H200 host, so one thread cannot keep up with 10 kHz (21 % of the samples lost beside
 * a PyTorch job); at 5 kHz it loses none and takes ~60 % of a core (docs/gpu-metrics.md). */
#define DEFAULT_HZ 5000.0
/* cuInit and PM sampling's configuration take 0.2-0.6 s per GPU (H200), more with many GPUs */
#define START_DEADLINE_NS 60000000000ull
/* The last decode and cuptiPmSamplingStop take well under a second (H200) */
#define STOP_DEADLINE_NS 5000000000ull
#define POLL_MS 50
extern char **environ;

enum child_state { CHILD_STARTING, CHILD_SAMPLING, CHILD_NOT_SAMPLING };
enum child_killed { KILLED_NONE, KILLED_AT_START, KILLED_AT_STOP };

struct gpu_metrics_sampler;

/* One GPU's sampler child, and the launcher's relay of it. */
struct sampler_child {
    struct gpu_metrics_sampler *s;
    int cuda_index;
    char uuid[96], name[96];
    uint64_t set_id;
    pid_t pid;
    int records_fd, control_fd; /* under s->lock: the relay closes them */
    pthread_t relay;
    int relay_running;
    uint64_t spawned_ns, started_ns;
    /* under s->lock */
    enum child_state state;
    int stop_asked;
    uint64_t stop_deadline_ns;
    enum child_killed killed;
    unsigned int source; /* TRACE_GPU_METRICS_* of the backend running */
    char why[512];       /* why it does not sample */
    /* the relay's own */
    uint8_t *chunk; /* GPU_METRICS_CHUNK_MAX bytes: the chunk being read */
    size_t have;
    char line[1024];
    size_t line_len;
    int crash_signal;   /* the child's crash note, 0: none */
    char library[256];  /* where it faulted, "": unknown */
    int damaged;        /* a chunk that was not one: the rest of the pipe is discarded */
    uint64_t discarded; /* bytes: damage, and a chunk cut short at the end */
    struct trace_gpu_metric_relay cost;
};

struct gpu_metrics_sampler {
    struct launcher_file *file; /* launcher.lrt */
    pthread_mutex_t lock;       /* the children's state; the relays' renumbering and writes */
    pthread_cond_t changed;
    struct sampler_child children[NVML_MAX_GPUS];
    unsigned int count;
};

/* ---- writing into launcher.lrt ----------------------------------------------------------- */

/* One chunk of the launcher's own: a status line (code 0: none) and the relay's cost (NULL:
 * none). */
static void write_own(struct gpu_metrics_sampler *s, const char *uuid, unsigned int source,
                      unsigned int code, const char *reason,
                      const struct trace_gpu_metric_relay *cost)
{
    uint8_t buffer[4096];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buffer, sizeof buffer, nvml_now_ns());
    if (code) {
        struct trace_gpu_metric_status r = {.gpu_uuid = trace_cstr(uuid ? uuid : ""),
                                            .source = source,
                                            .code = code,
                                            .reason = trace_cstr(reason)};
        trace_put_gpu_metric_status(&b, &r);
    }
    if (cost)
        trace_put_gpu_metric_relay(&b, cost);
    if (trace_chunk_empty(&b))
        return;
    launcher_file_write(s->file, buffer, trace_chunk_finish(&b)); /* a full disk loses it */
}

/* ---- the relay: chunks from the child into the file -------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A whole chunk from the child: checked as the importer will check it, its samples' delay
 * (from their end to now) counted, then numbered as the launcher's own and written. */
static void relay_chunk(struct sampler_child *c, uint8_t *chunk, size_t len)
{
    struct trace_reader r;
    memset(&r, 0, sizeof r);
    r.data = chunk;
    r.size = len;
    r.fd = -1;
    r.version = TRACE_FORMAT_VERSION;
    uint64_t now = nvml_now_ns(), samples = 0, delay_sum = 0, delay_max = 0;
    unsigned int type;
    struct trace_fields f;
    int rc;
    while ((rc = trace_reader_next(&r, &type, &f)) == 1) {
        if (type != TRACE_GPU_METRIC_SAMPLE)
            continue;
        struct trace_gpu_metric_sample sample;
        trace_get_gpu_metric_sample(&f, &sample);
        uint64_t delay = now > sample.end ? now - sample.end : 0;
        samples++;
        delay_sum += delay;
        delay_max = delay > delay_max ? delay : delay_max;
    }
    if (rc < 0) {
        c->discarded += len;
        return;
    }
    c->cost.chunks++;
    c->cost.bytes += len;
    c->cost.samples += samples;
    c->cost.delay_sum_ns += delay_sum;
    if (delay_max > c->cost.delay_max_ns)
        c->cost.delay_max_ns = delay_max;
    pthread_mutex_lock(&c->s->lock);
    trace_chunk_renumber(chunk);
    launcher_file_write(c->s->file, chunk, len); /* a full disk loses it: the program goes on */
    pthread_mutex_unlock(&c->s->lock);
}

/* Reads what the records pipe holds and relays each whole chunk; 0 at its end. */
static int relay_records(struct sampler_child *c)
{
    ssize_t n = read(c->records_fd, c->chunk + c->have, GPU_METRICS_CHUNK_MAX - c->have);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN;
    if (n == 0)
        return 0;
    if (c->damaged) {
        c->discarded += (size_t)n;
        return 1;
    }
    c->have += (size_t)n;
    while (c->have >= TRACE_CHUNK_HEADER_SIZE) {
        uint64_t len = TRACE_CHUNK_HEADER_SIZE + (uint64_t)le32(c->chunk + 4);
        if (le32(c->chunk) != TRACE_CHUNK_MAGIC || len > GPU_METRICS_CHUNK_MAX) {
            c->damaged = 1; /* framing lost: nothing after it can be trusted */
            c->discarded += c->have;
            c->have = 0;
            break;
        }
        if (c->have < len)
            break;
        relay_chunk(c, c->chunk, (size_t)len);
        memmove(c->chunk, c->chunk + len, c->have - (size_t)len);
        c->have -= (size_t)len;
    }
    return 1;
}

/* One line of the control socket: "started pm|gpm", "failed WHY", "crash SIGNO LIBRARY". */
static void control_line(struct sampler_child *c, char *line)
{
    struct gpu_metrics_sampler *s = c->s;
    if (!strncmp(line, "crash ", 6)) {
        char *library = NULL;
        c->crash_signal = (int)strtol(line + 6, &library, 10);
        snprintf(c->library, sizeof c->library, "%s", *library == ' ' ? library + 1 : "");
        return;
    }
    pthread_mutex_lock(&s->lock);
    if (c->state == CHILD_STARTING && !strncmp(line, "started ", 8)) {
        c->state = CHILD_SAMPLING;
        c->started_ns = nvml_now_ns();
        c->source = !strcmp(line + 8, "pm") ? TRACE_GPU_METRICS_PM_SAMPLING : TRACE_GPU_METRICS_GPM;
    } else if (c->state == CHILD_STARTING && !strncmp(line, "failed ", 7)) {
        c->state = CHILD_NOT_SAMPLING;
        snprintf(c->why, sizeof c->why, "%s", line + 7);
    }
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* Reads the control socket, acting on each whole line; 0 at its end. */
static int relay_control(struct sampler_child *c)
{
    char buffer[512];
    ssize_t n = read(c->control_fd, buffer, sizeof buffer);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN;
    for (ssize_t i = 0; i < n; i++) {
        if (buffer[i] != '\n') {
            if (c->line_len < sizeof c->line - 1)
                c->line[c->line_len++] = buffer[i];
            continue;
        }
        c->line[c->line_len] = 0;
        control_line(c, c->line);
        c->line_len = 0;
    }
    return n > 0;
}

/* SIGKILL for a child that did not start, or stop, in time. */
static void relay_deadlines(struct sampler_child *c)
{
    struct gpu_metrics_sampler *s = c->s;
    uint64_t now = nvml_now_ns();
    pthread_mutex_lock(&s->lock);
    enum child_killed kill_now = KILLED_NONE;
    if (c->killed == KILLED_NONE && c->state == CHILD_STARTING &&
        now - c->spawned_ns > START_DEADLINE_NS)
        kill_now = KILLED_AT_START;
    else if (c->killed == KILLED_NONE && c->stop_asked && now > c->stop_deadline_ns)
        kill_now = KILLED_AT_STOP;
    if (kill_now) {
        c->killed = kill_now;
        kill(c->pid, SIGKILL);
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- the child's end --------------------------------------------------------------------- */

static const char *signal_name(int sig, char *buffer, size_t size)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},
                 {SIGFPE, "SIGFPE"},   {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buffer, size, "signal %d", sig);
    return buffer;
}

/* Waits for the child (SIGKILL when it lingers a second after closing its pipe), or takes its
 * end from the launcher's reaper of descendants (child.c); its status in *status, its
 * resources in *ru; 0, or wait4's -errno when it is not ours to wait for any more. */
static int reap(struct sampler_child *c, int *status, struct rusage *ru)
{
    struct timespec moment = {0, 1000000};
    for (int tries = 0, handed = 0;; tries++) {
        pid_t w = wait4(c->pid, status, tries < 100 ? WNOHANG : 0, ru);
        if (w == c->pid) {
            child_helper_forget(c->pid);
            return 0;
        }
        /* the reaper took it: its status and resources follow, under the reaper's lock, a
         * moment after its wait4 returned (a loaded ASan run read 0 ns of CPU without this
         * wait); never a signal to the pid then, which may be another process's by now */
        if (w < 0 && errno == ECHILD) {
            if (child_helper_reaped(c->pid, status, ru))
                return 0;
            if (++handed < 1000) {
                nanosleep(&moment, NULL);
                continue;
            }
            child_helper_forget(c->pid);
            return -ECHILD;
        }
        if (w < 0 && errno != EINTR)
            return -errno;
        if (tries == 100)
            kill(c->pid, SIGKILL);
        if (w == 0) {
            struct timespec pause = {0, 10000000};
            nanosleep(&pause, NULL);
        }
    }
}

/* What ended the child, in words ("" when it ended as asked), and its status code. */
static unsigned int child_outcome(struct sampler_child *c, int reaped, int status, char *what,
                                  size_t size)
{
    uint64_t from = c->started_ns ? c->started_ns : c->spawned_ns;
    double after = (double)(nvml_now_ns() - from) / 1e9;
    char when[64], sig_buffer[32];
    if (c->started_ns)
        snprintf(when, sizeof when, "after %.1f s; metrics until then kept", after);
    else
        snprintf(when, sizeof when, "while starting");
    what[0] = 0;
    if (c->killed == KILLED_AT_STOP) {
        snprintf(what, size,
                 "the metric sampler did not stop within %.0f s: killed; metrics "
                 "until then kept",
                 STOP_DEADLINE_NS / 1e9);
        return TRACE_GPU_METRICS_HUNG;
    }
    if (c->killed == KILLED_AT_START) {
        snprintf(what, size, "the metric sampler did not start within %.0f s: killed",
                 START_DEADLINE_NS / 1e9);
        return TRACE_GPU_METRICS_HUNG;
    }
    int sig = reaped && WIFSIGNALED(status) ? WTERMSIG(status) : c->crash_signal;
    if (sig) {
        const char *name = signal_name(sig, sig_buffer, sizeof sig_buffer);
        int core = reaped && WIFSIGNALED(status) && WCOREDUMP(status);
        snprintf(what, size, "the metric sampler crashed (%s%s%s%s) %s", name,
                 c->library[0] ? " in " : "", c->library, core ? ", core dumped" : "", when);
        return TRACE_GPU_METRICS_CRASHED;
    }
    int asked = c->stop_asked || c->state == CHILD_NOT_SAMPLING;
    if (reaped && WIFEXITED(status) && (WEXITSTATUS(status) != 0 || !asked)) {
        snprintf(what, size, "the metric sampler exited with status %d %s", WEXITSTATUS(status),
                 when);
        return TRACE_GPU_METRICS_CRASHED;
    }
    if (!reaped && !asked) {
        snprintf(what, size, "the metric sampler ended %s", when);
        return TRACE_GPU_METRICS_CRASHED;
    }
    return 0;
}

static void child_ended(struct sampler_child *c)
{
    struct gpu_metrics_sampler *s = c->s;
    /* the crash note was written before the child died: read it to the socket's end */
    for (int i = 0; i < 20 && c->control_fd >= 0; i++) {
        struct pollfd p = {c->control_fd, POLLIN, 0};
        if (poll(&p, 1, POLL_MS) > 0 && !relay_control(c))
            break;
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int reaped = reap(c, &status, &ru) == 0;
    c->discarded += c->have; /* a chunk cut short by the child's end */
    c->have = 0;
    char what[600];
    unsigned int code = child_outcome(c, reaped, status, what, sizeof what);
    if (c->discarded) {
        size_t len = strlen(what);
        snprintf(what + len, sizeof what - len,
                 "%sa partial chunk of %llu bytes at its end "
                 "discarded",
                 len ? "; " : "the metric sampler ended: ", (unsigned long long)c->discarded);
        code = code ? code : TRACE_GPU_METRICS_FAILED;
    }
    c->cost.set_id = c->set_id;
    c->cost.gpu_uuid = trace_cstr(c->uuid);
    c->cost.cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                     (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
    c->cost.max_rss_kib = (uint64_t)ru.ru_maxrss;
    c->cost.discarded_bytes = c->discarded;
    struct timespec relay_cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &relay_cpu);
    c->cost.relay_cpu_ns = (uint64_t)relay_cpu.tv_sec * 1000000000u + (uint64_t)relay_cpu.tv_nsec;
    write_own(s, c->uuid, c->source, code, what, c->started_ns ? &c->cost : NULL);

    pthread_mutex_lock(&s->lock);
    int was_starting = c->state == CHILD_STARTING;
    if (was_starting) {
        c->state = CHILD_NOT_SAMPLING;
        snprintf(c->why, sizeof c->why, "%.*s", (int)sizeof c->why - 1, /* cut to fit */
                 code ? what : "the metric sampler ended");
    }
    close(c->records_fd);
    if (c->control_fd >= 0)
        close(c->control_fd);
    c->records_fd = c->control_fd = -1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    /* one line when it happens; a start's failure is in the line of GPUs not sampled */
    if (code && !was_starting)
        fprintf(stderr, "lantern: GPU %d (%s): %s\n", c->cuda_index, c->name, what);
}

static void *relay_main(void *arg)
{
    struct sampler_child *c = arg;
    int control_open = 1;
    for (;;) {
        struct pollfd p[2] = {{c->records_fd, POLLIN, 0},
                              {control_open ? c->control_fd : -1, POLLIN, 0}};
        int n = poll(p, 2, POLL_MS);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && p[1].revents)
            control_open = relay_control(c);
        if (n > 0 && p[0].revents && !relay_records(c))
            break;
        relay_deadlines(c);
    }
    child_ended(c);
    return NULL;
}

/* ---- starting a child -------------------------------------------------------------------- */

/* The environment without what would load the agent into the child (it must never trace
 * itself), malloc'd; the strings are environ's. */
static char **child_environment(void)
{
    static const char *const dropped[] = {
        "NVTX_INJECTION64_PATH=", "CUDA_INJECTION64_PATH=", "LANTERN_SESSION_DIR="};
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int drop = 0;
        for (size_t d = 0; d < sizeof dropped / sizeof dropped[0]; d++)
            drop |= !strncmp(environ[i], dropped[d], strlen(dropped[d]));
        if (!drop)
            env[kept++] = environ[i];
    }
    return env;
}

/* In the child between fork and exec (async-signal-safe calls only): the pipe and socket on
 * their fixed descriptors, Ctrl-C and hang-ups left to the launcher (the child stops when the
 * launcher shuts the socket or dies), then `lantern` itself in the sampler's mode. */
static void exec_child(int records, int control, char **argv, char **env)
{
    int r = fcntl(records, F_DUPFD, 10), k = fcntl(control, F_DUPFD, 10);
    if (r < 0 || k < 0 || dup2(r, GPU_METRICS_CHILD_RECORDS_FD) < 0 ||
        dup2(k, GPU_METRICS_CHILD_CONTROL_FD) < 0)
        _exit(127);
    close(r);
    close(k);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve("/proc/self/exe", argv, env);
    _exit(127);
}

/* Forks and executes c's child; 0, or the failed call's -errno (-ENOMEM, pthread_create's)
 * with c->why set. */
static int spawn(struct sampler_child *c, char **argv, char **env)
{
    int records[2] = {-1, -1}, control[2] = {-1, -1}, rc;
    if (pipe2(records, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) < 0)
        goto fail;
    argv[2] = c->uuid;
    c->spawned_ns = nvml_now_ns();
    if ((c->pid = fork()) < 0)
        goto fail;
    if (c->pid == 0)
        exec_child(records[1], control[1], argv, env);
    child_helper_add(c->pid);
    close(records[1]);
    close(control[1]);
    c->records_fd = records[0];
    c->control_fd = control[0];
    rc = !(c->chunk = malloc(GPU_METRICS_CHUNK_MAX))
             ? ENOMEM
             : pthread_create(&c->relay, NULL, relay_main, c);
    if (rc == 0) {
        c->relay_running = 1;
        return 0;
    }
    kill(c->pid, SIGKILL);
    int status;
    struct rusage ru;
    if (wait4(c->pid, &status, 0, &ru) == c->pid)
        child_helper_forget(c->pid);
    else
        reap(c, &status, &ru);
    close(c->records_fd);
    close(c->control_fd);
    c->records_fd = c->control_fd = -1;
    snprintf(c->why, sizeof c->why, "cannot start the metric sampler's relay");
    return -rc;
fail:
    rc = errno;
    snprintf(c->why, sizeof c->why, "cannot start the metric sampler: %s", strerror(rc));
    for (int i = 0; i < 2; i++) {
        if (records[i] >= 0)
            close(records[i]);
        if (control[i] >= 0)
            close(control[i]);
    }
    c->records_fd = c->control_fd = -1;
    return -rc;
}

/* ---- the launcher's row ------------------------------------------------------------------ */

/* Stops every child (its socket shut: it writes its last samples and footprint and exits; one
 * that does not within STOP_DEADLINE_NS is killed), waits for the relays, frees s. */
static void sampler_free(struct gpu_metrics_sampler *s)
{
    pthread_mutex_lock(&s->lock);
    for (unsigned int i = 0; i < s->count; i++) {
        struct sampler_child *c = &s->children[i];
        c->stop_asked = 1;
        c->stop_deadline_ns = nvml_now_ns() + STOP_DEADLINE_NS;
        if (c->control_fd >= 0)
            shutdown(c->control_fd, SHUT_WR);
    }
    pthread_mutex_unlock(&s->lock);
    for (unsigned int i = 0; i < s->count; i++) {
        if (s->children[i].relay_running)
            pthread_join(s->children[i].relay, NULL);
        free(s->children[i].chunk);
    }
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The GPUs to sample (uuid, name, CUDA index) into s->children; their count, or nvml_open's or
 * nvml_select's error with why. */
static int choose_gpus(struct gpu_metrics_sampler *s, const char *devices, char *why,
                       size_t why_len)
{
    static struct nvml nvml; /* 100 KB: not on the stack */
    unsigned int chosen[NVML_MAX_GPUS];
    int count = nvml_open(&nvml);
    if (count != 0)
        snprintf(why, why_len, "%s", nvml.disabled_reason);
    else
        count = nvml_select(&nvml, devices, chosen, NVML_MAX_GPUS, why, why_len);
    if (count == 0)
        snprintf(why, why_len, "no GPU to sample");
    for (int i = 0; i < count; i++) {
        struct sampler_child *c = &s->children[i];
        const struct nvml_gpu *gpu = &nvml.gpus[chosen[i]];
        c->s = s;
        c->cuda_index = gpu->cuda_index;
        snprintf(c->uuid, sizeof c->uuid, "%s", gpu->uuid);
        snprintf(c->name, sizeof c->name, "%s", gpu->name);
        c->set_id = (uint64_t)i + 1;
        c->records_fd = c->control_fd = -1;
    }
    nvml_close(&nvml);
    return count;
}

static int sampler_row_start(struct launcher_file *f, const struct launcher_options *o,
                             void **state, char *why, size_t why_len)
{
    *state = NULL;
    struct gpu_metrics_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    s->file = f;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    int count = choose_gpus(s, o->gpu_metrics_devices, why, why_len);
    if (count <= 0) {
        write_own(s, NULL, 0, TRACE_GPU_METRICS_UNAVAILABLE, why, NULL);
        sampler_free(s);
        return count < 0 ? count : -ENODEV;
    }
    s->count = (unsigned int)count;

    double hz = o->gpu_metrics_hz > 0 ? o->gpu_metrics_hz : DEFAULT_HZ;
    char mask[16], period[24], set_id[24];
    snprintf(mask, sizeof mask, "%u",
             o->gpu_metrics ? o->gpu_metrics : (1u << GPU_METRIC_COUNT) - 1);
    snprintf(period, sizeof period, "%llu", (unsigned long long)(1e9 / hz + 0.5));
    char *argv[] = {"lantern",
                    GPU_METRICS_CHILD_COMMAND,
                    NULL /* uuid */,
                    mask,
                    period,
                    set_id,
                    (char *)(o->gpu_metrics_source ? o->gpu_metrics_source : "auto"),
                    NULL};
    char **env = child_environment();
    for (unsigned int i = 0; i < s->count; i++) {
        struct sampler_child *c = &s->children[i];
        snprintf(set_id, sizeof set_id, "%llu", (unsigned long long)c->set_id);
        if (!env || spawn(c, argv, env) < 0) {
            c->state = CHILD_NOT_SAMPLING;
            if (!env)
                snprintf(c->why, sizeof c->why, "out of memory");
        }
    }
    free(env);

    /* The program starts once every GPU samples, or said why not, or its child ended. */
    pthread_mutex_lock(&s->lock);
    for (;;) {
        unsigned int starting = 0;
        for (unsigned int i = 0; i < s->count; i++)
            starting += s->children[i].state == CHILD_STARTING;
        if (!starting)
            break;
        pthread_cond_wait(&s->changed, &s->lock);
    }
    size_t len = 0;
    unsigned int running = 0;
    why[0] = 0;
    for (unsigned int i = 0; i < s->count; i++) {
        const struct sampler_child *c = &s->children[i];
        if (c->state == CHILD_SAMPLING) {
            running++;
            continue;
        }
        len += (size_t)snprintf(why + len, len < why_len ? why_len - len : 0, "%sGPU %d (%s): %s",
                                len ? "; " : "", c->cuda_index, c->name, c->why);
    }
    pthread_mutex_unlock(&s->lock);
    if (!running) {
        sampler_free(s);
        return -EIO;
    }
    *state = s;
    return why[0] ? -EIO : 0; /* -EIO: said, though sampling runs on the other GPUs */
}

static void sampler_row_stop(void *state)
{
    if (state)
        sampler_free(state);
}

const struct launcher_sampler launcher_sampler_gpu_metrics = {"gpu_metrics", "GPU metrics",
                                                              sampler_row_start, sampler_row_stop};
