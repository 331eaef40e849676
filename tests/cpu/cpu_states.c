/* A program whose threads' states are known, for the thread-state tests (docs/cpu.md, "Thread
 * states"); each mode runs inside an NVTX range "states" and prints what it measured. Each
 * thread first sleeps 150 ms (the agent finds a new thread within 100 ms), then measures from
 * "t0" to "t1" (CLOCK_MONOTONIC ns, the trace's clock), and prints marks along the way
 * ("mark NAME MONO_NS CPU_NS SLEPT_NS": its CPU time and sleeps since t0; before each sleep, or
 * every 10 ms of a spin), where a test can start comparing once the agent watches the thread:
 *   sleep N     a thread "sleeper" sleeps 10 ms (clock_nanosleep) then spins 5 ms of its CPU
 *               time, N times: "tid", "slept_ns" (the sleeps, CLOCK_MONOTONIC around each),
 *               "cpu_ns" (CLOCK_THREAD_CPUTIME_ID over its life), "wall_ns"
 *   preempt MS  two threads "spinA", "spinB" pinned to one CPU (sched_setaffinity) each spin
 *               for MS ms of wall time: per thread "tid", "cpu_ns", "wall_ns"
 *   pingpong N  two threads "ping", "pong" pass a byte through two pipes N times (a context
 *               switch each way: the benchmark's switch-heavy program): "round_trips", ping's
 *               "wall_ns" and "cpu_ns" (user and system: the kernel's switch records included) */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_cpu(long long ns)
{
    long long until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
        ;
}

#define MARKS 256

/* A point of a thread's measure: its CLOCK_MONOTONIC time, its CPU time and sleeps so far
 * (from t0), so that a test can start its comparison where the agent started to watch. */
struct mark {
    long long mono_ns, cpu_ns, slept_ns;
};

struct worker {
    const char *name;
    long arg;
    long long wall_ns, cpu_ns, slept_ns, t0, t1;
    long tid;
    int fds[2]; /* pingpong: read, write */
    struct mark marks[MARKS];
    int nmarks;
};

static void mark(struct worker *w, long long c0)
{
    if (w->nmarks < MARKS)
        w->marks[w->nmarks++] = (struct mark){clock_ns(CLOCK_MONOTONIC),
                                              clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, w->slept_ns};
}

static void *sleeper(void *p)
{
    struct worker *w = p;
    long long w0 = w->t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < w->arg; i++) {
        mark(w, c0);
        long long s = clock_ns(CLOCK_MONOTONIC);
        struct timespec t = {0, 10000000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
        w->slept_ns += clock_ns(CLOCK_MONOTONIC) - s;
        spin_cpu(5000000);
    }
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    w->t1 = clock_ns(CLOCK_MONOTONIC);
    w->wall_ns = w->t1 - w0;
    return NULL;
}

static void *spinner(void *p)
{
    struct worker *w = p;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof one, &one);
    struct timespec warm = {0, 150000000};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &warm, NULL);
    long long w0 = w->t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    long long next = w0;
    while (clock_ns(CLOCK_MONOTONIC) - w0 < w->arg * 1000000LL)
        if (clock_ns(CLOCK_MONOTONIC) >= next) { /* every 10 ms */
            mark(w, c0);
            next += 10000000;
        }
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    w->t1 = clock_ns(CLOCK_MONOTONIC);
    w->wall_ns = w->t1 - w0;
    return NULL;
}

static void *ponger(void *p)
{
    struct worker *w = p;
    char c = 0;
    for (long i = 0; i < w->arg; i++)
        if (read(w->fds[0], &c, 1) != 1 || write(w->fds[1], &c, 1) != 1)
            break;
    return NULL;
}

static void *pinger(void *p)
{
    struct worker *w = p;
    char c = 0;
    long long w0 = w->t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < w->arg; i++)
        if (write(w->fds[1], &c, 1) != 1 || read(w->fds[0], &c, 1) != 1)
            break;
    w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    w->t1 = clock_ns(CLOCK_MONOTONIC);
    w->wall_ns = w->t1 - w0;
    return NULL;
}

static void *start(void *p)
{
    struct worker *w = p;
    w->tid = syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), w->name);
    if (!strcmp(w->name, "sleeper")) {
        struct timespec warm = {0, 150000000};
        clock_nanosleep(CLOCK_MONOTONIC, 0, &warm, NULL);
        return sleeper(w);
    }
    if (!strcmp(w->name, "ping"))
        return pinger(w);
    if (!strcmp(w->name, "pong"))
        return ponger(w);
    return spinner(w);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cpu_states sleep N | preempt MS | pingpong N\n");
        return 2;
    }
    long arg = atol(argv[2]);
    struct worker w[2] = {{.arg = arg}, {.arg = arg}};
    int n = 1;
    if (!strcmp(argv[1], "sleep"))
        w[0].name = "sleeper";
    else if (!strcmp(argv[1], "preempt")) {
        w[0].name = "spinA";
        w[1].name = "spinB";
        n = 2;
    } else {
        int a[2], b[2];
        if (pipe(a) || pipe(b))
            return 1;
        w[0] = (struct worker){.name = "ping", .arg = arg, .fds = {b[0], a[1]}};
        w[1] = (struct worker){.name = "pong", .arg = arg, .fds = {a[0], b[1]}};
        n = 2;
    }
    nvtxRangePushA("states");
    pthread_t t[2];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, start, &w[i]);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    nvtxRangePop();
    for (int i = 0; i < n; i++) {
        printf("%s tid %ld cpu_ns %lld wall_ns %lld slept_ns %lld t0 %lld t1 %lld\n", w[i].name,
               w[i].tid, w[i].cpu_ns, w[i].wall_ns, w[i].slept_ns, w[i].t0, w[i].t1);
        for (int k = 0; k < w[i].nmarks; k++)
            printf("mark %s %lld %lld %lld\n", w[i].name, w[i].marks[k].mono_ns,
                   w[i].marks[k].cpu_ns, w[i].marks[k].slept_ns);
    }
    if (!strcmp(argv[1], "pingpong"))
        printf("round_trips %ld\n", arg);
    return 0;
}
