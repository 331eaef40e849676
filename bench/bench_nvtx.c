/* The NVTX hot path in a tight loop, the hard case: THREADS threads each doing
 * nvtxRangePushA + nvtxRangePop as fast as they can for SECONDS, with liblantern-agent.so and
 * with no tool (NVTX's no-op path), in two worker copies of this program. Each thread times
 * blocks of BLOCK pairs; the figures are the median and p99 over all blocks of ns per pair.
 * Then the agent's trace file is read back: ranges recorded against ranges made, drops,
 * bytes per range, and the worker's peak RSS.
 * Usage: bench_nvtx [seconds (10)] [threads (1)] [baseline seconds (2)] [pairs per thread]
 * With pairs per thread, each thread makes exactly that many (all threads started together)
 * instead of running for the seconds. */
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
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

struct worker_thread {
    pthread_t thread;
    uint64_t deadline;
    uint64_t pairs; /* 0: until the deadline */
    float *block_ns; /* ns per pair of each block */
    size_t blocks, cap;
};

static void *worker_loop(void *arg)
{
    struct worker_thread *w = arg;
    for (uint64_t made = 0;;) {
        unsigned block = w->pairs && w->pairs - made < BLOCK ? (unsigned)(w->pairs - made) : BLOCK;
        uint64_t start = mono_ns();
        for (unsigned i = 0; i < block; i++) {
            nvtxRangePushA("bench");
            nvtxRangePop();
        }
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
static int bench_worker(double seconds, int threads, uint64_t pairs)
{
    nvtxMarkA("warm-up"); /* NVTX loads (or not) the tool on its first call */
    struct worker_thread *w = calloc((size_t)threads, sizeof(*w));
    uint64_t deadline = mono_ns() + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < threads; i++) {
        w[i].deadline = deadline;
        w[i].pairs = pairs;
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
                      int threads, uint64_t pairs, struct result *out)
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
        execl(self, self, "--worker", s, t, n, (char *)NULL);
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

/* Ranges, drops and bytes in the agent's trace file; then removes the file. */
static int read_trace(const char *session, uint64_t *pushes, uint64_t *dropped, uint64_t *bytes)
{
    DIR *d = opendir(session);
    if (!d)
        return -1;
    char path[1024] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".lrt"))
            snprintf(path, sizeof(path), "%s/%s", session, e->d_name);
    closedir(d);
    struct stat st;
    struct trace_reader r;
    if (!path[0] || stat(path, &st) || trace_reader_open(&r, path) < 0)
        return -1;
    *bytes = (uint64_t)st.st_size;
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
        while (trace_events_next(&events, &event, &ef) == 1)
            *pushes += event == TRACE_PUSH;
    }
    trace_reader_close(&r);
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 3 && strcmp(argv[1], "--worker") == 0)
        return bench_worker(atof(argv[2]), atoi(argv[3]),
                            argc > 4 ? strtoull(argv[4], NULL, 10) : 0);
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    double base_seconds = argc > 3 ? atof(argv[3]) : 2;
    uint64_t pairs = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
    char session[] = "/tmp/lantern-bench-XXXXXX";
    if (!mkdtemp(session))
        return 1;
    struct result none_before, none_after, agent;
    if (run_worker("/proc/self/exe", NULL, NULL, base_seconds, threads, pairs, &none_before) ||
        run_worker("/proc/self/exe", LANTERN_AGENT_PATH, session, seconds, threads, pairs,
                   &agent) ||
        run_worker("/proc/self/exe", NULL, NULL, base_seconds, threads, pairs, &none_after)) {
        fprintf(stderr, "bench_nvtx: a worker failed\n");
        return 1;
    }
    uint64_t pushes = 0, dropped = 0, bytes = 0;
    if (read_trace(session, &pushes, &dropped, &bytes) < 0) {
        fprintf(stderr, "bench_nvtx: no trace file in %s\n", session);
        return 1;
    }
    rmdir(session);
    printf("bench_nvtx: %d thread(s), nvtxRangePushA+nvtxRangePop as fast as they go, "
           "blocks of %u pairs%s\n",
           threads, BLOCK, pairs ? ", a fixed number of pairs per thread" : "");
    printf("  no tool : median %6.1f ns/pair, p99 %6.1f  (%.0f s before), median %6.1f, p99 "
           "%6.1f (after)\n",
           none_before.median, none_before.p99, base_seconds, none_after.median, none_after.p99);
    printf("  lantern : median %6.1f ns/pair, p99 %6.1f; peak RSS %ld MiB (no tool %ld MiB)\n",
           agent.median, agent.p99, agent.rss_kb / 1024, none_before.rss_kb / 1024);
    printf("  recorded: %llu of %llu ranges, %llu dropped; trace file %llu bytes = %.2f "
           "bytes/range\n",
           (unsigned long long)pushes, agent.pairs, (unsigned long long)dropped,
           (unsigned long long)bytes, pushes ? (double)bytes / (double)pushes : 0.0);
    return dropped != 0 || pushes != agent.pairs;
}
