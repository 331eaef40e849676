/* Cost of one nvtxRangePushA + nvtxRangePop pair with no tool (NVTX's no-op path) and with
 * liblantern-agent.so, measured in alternating rounds by two worker copies of this program
 * (one per mode) that the parent drives over pipes; then the agent's trace file is read
 * back for drops and on-disk bytes per range. Usage: bench_nvtx [rounds] [pairs per round] */
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Worker: for each "N" line on stdin, times N pairs and answers the ns they took. */
static int bench_worker(void)
{
    nvtxMarkA("warm-up"); /* NVTX loads (or not) the tool on its first call */
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        long pairs = atol(line);
        uint64_t start = mono_ns();
        for (long i = 0; i < pairs; i++) {
            nvtxRangePushA("bench");
            nvtxRangePop();
        }
        uint64_t elapsed = mono_ns() - start;
        printf("%llu\n", (unsigned long long)elapsed);
        fflush(stdout);
    }
    return 0;
}

struct worker {
    pid_t pid;
    FILE *to, *from;
};

static int worker_start(struct worker *w, const char *self, const char *agent, const char *session)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) /* dup2 clears it on 0 and 1 */
        return -1;
    w->pid = fork();
    if (w->pid < 0)
        return -1;
    if (w->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        if (agent) {
            setenv("NVTX_INJECTION64_PATH", agent, 1);
            setenv("LANTERN_SESSION_DIR", session, 1);
        } else {
            unsetenv("NVTX_INJECTION64_PATH");
        }
        execl(self, self, "--worker", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    w->to = fdopen(in[1], "w");
    w->from = fdopen(out[0], "r");
    return 0;
}

static double worker_round(struct worker *w, long pairs)
{
    fprintf(w->to, "%ld\n", pairs);
    fflush(w->to);
    unsigned long long ns = 0;
    if (fscanf(w->from, "%llu", &ns) != 1)
        return -1;
    return (double)ns / (double)pairs;
}

static void worker_stop(struct worker *w)
{
    fclose(w->to);
    fclose(w->from);
    waitpid(w->pid, NULL, 0);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(*v), compare_doubles);
    return v[(int)(p * (n - 1) + 0.5)];
}

/* Pushes, pops and drops in the agent's trace file, and its size; then removes the file. */
static int read_trace(const char *session, uint64_t *pushes, uint64_t *pops, uint64_t *dropped,
                      uint64_t *bytes)
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
    while (trace_reader_next(&r, &type, &f) == 1) {
        *pushes += type == TRACE_PUSH;
        *pops += type == TRACE_POP;
        struct trace_dropped d;
        if (type == TRACE_DROPPED && trace_get_dropped(&f, &d) == 0)
            *dropped += d.count;
    }
    trace_reader_close(&r);
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return bench_worker();
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    /* 2000 pairs are ~190 KB of ring records: under half of the default 1 MiB ring, so a
     * round never wakes the writer early nor drops; the pause after it lets the writer drain. */
    long pairs = argc > 2 ? atol(argv[2]) : 2000;
    char session[] = "/tmp/lantern-bench-XXXXXX";
    if (!mkdtemp(session))
        return 1;
    struct worker plain, traced;
    if (worker_start(&plain, "/proc/self/exe", NULL, NULL) ||
        worker_start(&traced, "/proc/self/exe", LANTERN_AGENT_PATH, session))
        return 1;
    double *none = calloc((size_t)rounds, sizeof(double));
    double *agent = calloc((size_t)rounds, sizeof(double));
    struct timespec pause = {0, 15000000}; /* > the writer's 10 ms drain period */
    for (int i = 0; i < rounds; i++) {
        none[i] = worker_round(&plain, pairs);
        agent[i] = worker_round(&traced, pairs);
        nanosleep(&pause, NULL);
    }
    worker_stop(&plain);
    worker_stop(&traced);

    uint64_t pushes = 0, pops = 0, dropped = 0, bytes = 0;
    if (read_trace(session, &pushes, &pops, &dropped, &bytes) < 0) {
        fprintf(stderr, "bench_nvtx: no trace file in %s\n", session);
        return 1;
    }
    rmdir(session);
    double none_median = percentile(none, rounds, 0.5),
           agent_median = percentile(agent, rounds, 0.5);
    printf("bench_nvtx: %d alternating rounds x %ld nvtxRangePushA+nvtxRangePop pairs\n", rounds,
           pairs);
    printf("  no tool : median %6.1f ns/pair  (p10 %.1f, p90 %.1f)\n", none_median,
           percentile(none, rounds, 0.1), percentile(none, rounds, 0.9));
    printf("  lantern : median %6.1f ns/pair  (p10 %.1f, p90 %.1f)\n", agent_median,
           percentile(agent, rounds, 0.1), percentile(agent, rounds, 0.9));
    printf("  recorded: %llu pushes, %llu pops, %llu dropped; trace file %llu bytes = %.1f "
           "bytes/range\n",
           (unsigned long long)pushes, (unsigned long long)pops, (unsigned long long)dropped,
           (unsigned long long)bytes, pushes ? (double)bytes / (double)pushes : 0.0);
    return dropped != 0 || pushes != (uint64_t)rounds * (uint64_t)pairs;
}
