/* The NVTX hot path in a tight loop, the hard case: THREADS threads each doing
 * nvtxRangePushA + nvtxRangePop as fast as they can for SECONDS, with liblantern-agent.so and
 * with no tool (NVTX's no-op path), in two worker copies of this program. Each thread times
 * blocks of BLOCK pairs; the figures are the median and p99 over all blocks of ns per pair.
 * Then the agent's trace file is read back: ranges recorded against ranges made, drops,
 * bytes per range, and the worker's peak RSS.
 * Usage: [BENCH_AGENT=other/liblantern-agent.so] bench_nvtx [seconds (10)] [threads (1)]
 *        [baseline seconds (2)] [pairs per thread] [mode (plain)]
 * With pairs per thread (0: none), each thread makes exactly that many (all threads started
 * together) instead of running for the seconds. The mode is the pair (bench_modes below):
 * plain (nvtxRangePushA), ex (nvtxDomainRangePushEx of a registered string, as NCCL pushes)
 * or payload (the same with a 24-byte extended payload of a registered schema, as NCCL's
 * ncclAllReduce: its copy is the cost measured against ex).
 * BENCH_PAUSED=1: the session is paused (lantern profile --start-paused, trace/control.h: a
 * control file that says so), so the agent is loaded and records nothing: the pair's cost is
 * that of the paused check, and the trace must hold no range.
 * BENCH_RING=SEC: the agent keeps only the last SEC seconds (lantern profile --ring): the
 * segment rotation's cost, on the writer thread, paired with a run without it. */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <dirent.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/codec.h"
#include "trace/control.h"
#include "trace/events.h"
#include "trace/format.h"
#include "trace/records.h"

#define BLOCK 10000u

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The pairs of each mode; the domain, string and schema are made before the threads start. */
static nvtxDomainHandle_t bench_domain;
static nvtxStringHandle_t bench_name;
#define BENCH_SCHEMA (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5)

struct bench_payload { /* NCCL's ncclAllReduce payload: communicator, bytes, op */
    uint64_t comm;
    size_t bytes;
    int op;
};

static void pairs_plain(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        nvtxRangePushA("bench");
        nvtxRangePop();
    }
}

static nvtxEventAttributes_t bench_attributes(void)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = bench_name;
    return a;
}

static void pairs_ex(unsigned n)
{
    nvtxEventAttributes_t a = bench_attributes();
    for (unsigned i = 0; i < n; i++) {
        nvtxDomainRangePushEx(bench_domain, &a);
        nvtxDomainRangePop(bench_domain);
    }
}

static void pairs_payload(unsigned n)
{
    struct bench_payload p = {0x1234abcd5678ef01ull, 0, 0};
    nvtxPayloadData_t data = {BENCH_SCHEMA, sizeof p, &p};
    nvtxEventAttributes_t a = bench_attributes();
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = (uint64_t)(uintptr_t)&data;
    for (unsigned i = 0; i < n; i++) {
        p.bytes = i; /* a new size each call, as a training loop's buckets */
        nvtxDomainRangePushEx(bench_domain, &a);
        nvtxDomainRangePop(bench_domain);
    }
}

static const struct bench_mode {
    const char *name;
    void (*pairs)(unsigned n);
} bench_modes[] = {
    {"plain", pairs_plain},
    {"ex", pairs_ex},
    {"payload", pairs_payload},
};

static const struct bench_mode *bench_mode_named(const char *name)
{
    for (size_t i = 0; i < sizeof bench_modes / sizeof bench_modes[0]; i++)
        if (!strcmp(bench_modes[i].name, name))
            return &bench_modes[i];
    return NULL;
}

/* The domain, its registered name and NCCL's AllReduce schema (the payload mode's). */
static void bench_register(void)
{
    bench_domain = nvtxDomainCreateA("NCCL");
    bench_name = nvtxDomainRegisterStringA(bench_domain, "ncclAllReduce");
    static const nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0,
         offsetof(struct bench_payload, comm), NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
         offsetof(struct bench_payload, bytes), NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Reduction operation", NULL, 0,
         offsetof(struct bench_payload, op), NULL, NULL},
    };
    nvtxPayloadSchemaAttr_t attr = {
        .fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
        .type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
        .entries = entries,
        .numEntries = 3,
        .payloadStaticSize = sizeof(struct bench_payload),
        .schemaId = BENCH_SCHEMA};
    nvtxPayloadSchemaRegister(bench_domain, &attr);
}

struct worker_thread {
    pthread_t thread;
    uint64_t deadline;
    uint64_t pairs; /* 0: until the deadline */
    const struct bench_mode *mode;
    float *block_ns; /* ns per pair of each block */
    size_t blocks, cap;
};

static void *worker_loop(void *arg)
{
    struct worker_thread *w = arg;
    for (uint64_t made = 0;;) {
        unsigned block = w->pairs && w->pairs - made < BLOCK ? (unsigned)(w->pairs - made) : BLOCK;
        uint64_t start = mono_ns();
        w->mode->pairs(block);
        uint64_t end = mono_ns();
        if (w->blocks == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->block_ns = realloc(w->block_ns, w->cap * sizeof(*w->block_ns));
        }
        w->block_ns[w->blocks++] = (float)(end - start) / (float)block;
        made += block;
        if (w->pairs ? made >= w->pairs : end >= w->deadline)
            return NULL;
    }
}

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Worker: runs the threads, then prints "pairs median p99 maxrss_kb" and exits (the agent
 * ends its file at exit). */
static int bench_worker(double seconds, int threads, uint64_t pairs, const struct bench_mode *mode)
{
    nvtxMarkA("warm-up"); /* NVTX loads (or not) the tool on its first call */
    bench_register();
    struct worker_thread *w = calloc((size_t)threads, sizeof(*w));
    uint64_t deadline = mono_ns() + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < threads; i++) {
        w[i].deadline = deadline;
        w[i].pairs = pairs;
        w[i].mode = mode;
        pthread_create(&w[i].thread, NULL, worker_loop, &w[i]);
    }
    size_t total = 0;
    uint64_t made = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].thread, NULL);
        total += w[i].blocks;
        made += pairs ? pairs : (uint64_t)w[i].blocks * BLOCK;
    }
    float *all = malloc(total * sizeof(*all));
    size_t n = 0;
    for (int i = 0; i < threads; i++) {
        memcpy(all + n, w[i].block_ns, w[i].blocks * sizeof(*all));
        n += w[i].blocks;
    }
    qsort(all, n, sizeof(*all), compare_floats);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%llu %.2f %.2f %ld\n", (unsigned long long)made, all[n / 2],
           all[(size_t)(0.99 * (double)(n - 1))], ru.ru_maxrss);
    return 0;
}

struct result {
    unsigned long long pairs;
    double median, p99;
    long rss_kb;
};

static int run_worker(const char *self, const char *agent, const char *session, double seconds,
                      int threads, uint64_t pairs, const char *mode, struct result *out)
{
    int pipefd[2];
    if (pipe(pipefd) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        if (agent) {
            setenv("NVTX_INJECTION64_PATH", agent, 1);
            setenv("LANTERN_SESSION_DIR", session, 1);
        } else {
            unsetenv("NVTX_INJECTION64_PATH");
        }
        char s[32], t[16], n[32];
        snprintf(s, sizeof s, "%g", seconds);
        snprintf(t, sizeof t, "%d", threads);
        snprintf(n, sizeof n, "%llu", (unsigned long long)pairs);
        execl(self, self, "--worker", s, t, n, mode, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    FILE *from = fdopen(pipefd[0], "r");
    int got = fscanf(from, "%llu %lf %lf %ld", &out->pairs, &out->median, &out->p99,
                     &out->rss_kb);
    fclose(from);
    int status;
    waitpid(pid, &status, 0);
    return got == 4 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Ranges, their payloads, drops and bytes in one raw file, then removes it. */
static int read_raw_file(const char *path, uint64_t *pushes, uint64_t *payloads,
                         uint64_t *dropped, uint64_t *bytes)
{
    struct stat st;
    struct trace_reader r;
    if (stat(path, &st) || trace_reader_open(&r, path) < 0)
        return -1;
    *bytes += (uint64_t)st.st_size;
    unsigned type;
    struct trace_fields f;
    static struct trace_events_reader events;
    static uint64_t ticks[4096];
    while (trace_reader_next(&r, &type, &f) == 1) {
        struct trace_dropped dr;
        struct trace_thread_events te;
        if (type == TRACE_DROPPED && trace_get_dropped(&f, &dr) == 0)
            *dropped += dr.count;
        if (type != TRACE_THREAD_EVENTS || trace_get_thread_events(&f, &te) < 0)
            continue;
        trace_events_begin(&events, te.events.bytes, te.events.len, te.thread_idx,
                           &ticks[te.thread_idx % 4096], NULL);
        unsigned event;
        struct trace_fields ef;
        while (trace_events_next(&events, &event, &ef) == 1) {
            *pushes += event == TRACE_PUSH;
            *payloads += event == TRACE_PAYLOAD;
        }
    }
    trace_reader_close(&r);
    unlink(path);
    return 0;
}

/* Ranges, their payloads, drops and bytes in the agent's trace file (and, with BENCH_RING, the
 * segments left: trace/segments.h); then removes them and the agent's buffer file. */
static int read_trace(const char *session, uint64_t *pushes, uint64_t *payloads, uint64_t *dropped,
                      uint64_t *bytes)
{
    DIR *d = opendir(session);
    if (!d)
        return -1;
    char path[1024];
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        snprintf(path, sizeof(path), "%s/%s", session, e->d_name);
        if (strstr(e->d_name, ".lrt") || strstr(e->d_name, ".lrs"))
            files += read_raw_file(path, pushes, payloads, dropped, bytes) == 0;
        else if (strstr(e->d_name, ".lrb"))
            unlink(path);
    }
    closedir(d);
    return files ? 0 : -1;
}

/* A paused session's control file in session (BENCH_PAUSED), as the launcher makes it. */
static int make_paused_control(const char *session)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/" TRACE_CONTROL_FILE, session);
    static struct trace_control c;
    static uint8_t page[TRACE_CONTROL_BYTES];
    memcpy(c.magic, TRACE_CONTROL_MAGIC, 8);
    c.version = 1;
    c.bytes = TRACE_CONTROL_BYTES;
    memcpy(page, &c, sizeof c);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(page, sizeof page, 1, f) == 1;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc > 5 && strcmp(argv[1], "--worker") == 0)
        return bench_worker(atof(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10),
                            bench_mode_named(argv[5]));
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    double base_seconds = argc > 3 ? atof(argv[3]) : 2;
    uint64_t pairs = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
    const char *mode = argc > 5 ? argv[5] : "plain";
    if (!bench_mode_named(mode)) {
        fprintf(stderr, "bench_nvtx: no mode '%s' (plain, ex, payload)\n", mode);
        return 2;
    }
    /* BENCH_AGENT: another build's agent, for a before/after pair */
    const char *agent_path = getenv("BENCH_AGENT") ? getenv("BENCH_AGENT") : LANTERN_AGENT_PATH;
    /* the session folder under $TMPDIR (default /tmp): the agent's files go to its disk */
    char session[512];
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(session, sizeof session, "%s/lantern-bench-XXXXXX", tmp);
    if (!mkdtemp(session))
        return 1;
    int paused = getenv("BENCH_PAUSED") && !strcmp(getenv("BENCH_PAUSED"), "1");
    /* BENCH_RING=SEC: the agent keeps only the last SEC seconds (lantern profile --ring) */
    double ring_s = getenv("BENCH_RING") ? atof(getenv("BENCH_RING")) : 0;
    char ring_ns[32];
    snprintf(ring_ns, sizeof ring_ns, "%.0f", ring_s * 1e9);
    if (ring_s > 0)
        setenv("LANTERN_RING_NS", ring_ns, 1);
    if (paused && make_paused_control(session) < 0)
        return 1;
    struct result none_before, none_after, agent;
    if (run_worker("/proc/self/exe", NULL, NULL, base_seconds, threads, pairs, mode,
                   &none_before) ||
        run_worker("/proc/self/exe", agent_path, session, seconds, threads, pairs, mode, &agent) ||
        run_worker("/proc/self/exe", NULL, NULL, base_seconds, threads, pairs, mode, &none_after)) {
        fprintf(stderr, "bench_nvtx: a worker failed\n");
        return 1;
    }
    uint64_t pushes = 0, payloads = 0, dropped = 0, bytes = 0;
    if (read_trace(session, &pushes, &payloads, &dropped, &bytes) < 0) {
        fprintf(stderr, "bench_nvtx: no trace file in %s\n", session);
        return 1;
    }
    if (paused) {
        char path[1024];
        snprintf(path, sizeof path, "%s/" TRACE_CONTROL_FILE, session);
        unlink(path);
    }
    rmdir(session);
    printf("bench_nvtx: %d thread(s), %s push+pop as fast as they go, blocks of %u pairs%s\n",
           threads, mode, BLOCK, pairs ? ", a fixed number of pairs per thread" : "");
    printf("  no tool : median %6.1f ns/pair, p99 %6.1f  (%.0f s before), median %6.1f, p99 "
           "%6.1f (after)\n",
           none_before.median, none_before.p99, base_seconds, none_after.median, none_after.p99);
    if (ring_s > 0)
        printf("  ring of %g s: the ranges and bytes below are those of the segments kept\n",
               ring_s);
    printf("  lantern %s: median %6.1f ns/pair, p99 %6.1f; peak RSS %ld MiB (no tool %ld MiB)\n",
           paused ? "(paused)" : "", agent.median, agent.p99, agent.rss_kb / 1024,
           none_before.rss_kb / 1024);
    printf("  recorded: %llu of %llu ranges, %llu payloads, %llu dropped; trace file %llu bytes"
           " = %.2f bytes/range\n",
           (unsigned long long)pushes, agent.pairs, (unsigned long long)payloads,
           (unsigned long long)dropped, (unsigned long long)bytes,
           pushes ? (double)bytes / (double)pushes : 0.0);
    uint64_t want_payloads = strcmp(mode, "payload") == 0 ? pushes : 0;
    if (paused)
        return pushes != 0 || payloads != 0;
    if (ring_s > 0)
        return dropped != 0 || pushes > agent.pairs;
    return dropped != 0 || pushes != agent.pairs || payloads != want_payloads;
}
