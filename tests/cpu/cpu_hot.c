/* A program with a known hot function for CPU sampling's tests: hot_loop takes a set share of
 * its thread's CPU time (HOT_SHARE, percent; 70 by default) and warm_loop the rest, measured
 * with CLOCK_THREAD_CPUTIME_ID around each call. Prints "hot_share PCT" (the measured share),
 * "cpu_ns NS" and "wall_ns NS" (the main thread's CPU and wall time in the range "work").
 * Runs inside an NVTX range "work" (for --filter-nvtx) after a short range
 * "setup" that does only warm_loop. Built with frame pointers (docs/cpu.md). Optional: a
 * second thread doing the same (CPU_HOT_THREADS=2), or a fork child doing the same alongside
 * (CPU_HOT_FORK=1: the agent's fork path); or halfway through, its own handler for SIGRTMAX
 * (CPU_HOT_TAKE_SIGNAL=1: the signal the CPU-time timers use), raised once, then the second
 * half: prints "own_signal_at NS" (CLOCK_MONOTONIC), "own_signals N" (its raise() seen by
 * the handler) and "stray_timer_signals N" (timer signals that reached it). CPU_HOT_ALTSTACK=1:
 * each worker runs signal handlers on an alternate stack (sigaltstack); CPU_HOT_BLOCK=1: each
 * worker blocks every signal for the first half of its time; CPU_HOT_BLOCK=2: the second worker
 * (CPU_HOT_THREADS=2) blocks every signal all its life. Prints "thread_cpu_ns TID NS" for each
 * worker: its CPU time since it began, as it ends (the main thread's includes the setup). */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static long long clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long thread_cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Each loop is its own: the samples' leaf (self time) is the function itself. */
__attribute__((noinline)) void hot_loop(long iterations)
{
    double s = 0;
    for (long i = 0; i < iterations; i++)
        s += (double)i * 0.5;
    sink += s;
}

__attribute__((noinline)) void warm_loop(long iterations)
{
    double s = 0;
    for (long i = 0; i < iterations; i++)
        s += (double)i * 0.25;
    sink += s;
}

struct work {
    double seconds;
    int share; /* percent */
    long long hot_ns, total_ns;
    unsigned seed;
    double iterations; /* work done: the overhead bench's rate */
    long tid;
    long long life_ns; /* the thread's CPU time since it began, at the end of run() */
};

static void use_alternate_signal_stack(void)
{
    stack_t alt = {.ss_sp = malloc(SIGSTKSZ), .ss_size = SIGSTKSZ};
    if (alt.ss_sp)
        sigaltstack(&alt, NULL);
}

/* Alternates short calls so that each takes its share of the thread's time, adjusting the
 * iteration counts to the time each actually took. */
static void *run(void *arg)
{
    struct work *w = arg;
    long hot_iter = 200000, warm_iter = 200000;
    long long start = thread_cpu_ns(), end = start + (long long)(w->seconds * 1e9);
    if (getenv("CPU_HOT_ALTSTACK"))
        use_alternate_signal_stack();
    sigset_t all, before;
    const char *block_text = getenv("CPU_HOT_BLOCK");
    int block = block_text ? atoi(block_text) : 0;
    int blocked = block == 1 || (block == 2 && w->seed == 2); /* seed 2: the second worker */
    sigfillset(&all);
    if (blocked)
        pthread_sigmask(SIG_BLOCK, &all, &before);
    while (thread_cpu_ns() < end) {
        if (blocked && block == 1 && thread_cpu_ns() >= start + (end - start) / 2) {
            pthread_sigmask(SIG_SETMASK, &before, NULL);
            blocked = 0;
        }
        long long t0 = thread_cpu_ns();
        hot_loop(hot_iter);
        long long t1 = thread_cpu_ns();
        warm_loop(warm_iter);
        long long t2 = thread_cpu_ns();
        w->iterations += (double)hot_iter + (double)warm_iter;
        w->hot_ns += t1 - t0;
        w->total_ns += t2 - t0;
        /* aim: hot / (hot + warm) = share, over a cycle of random length (1-9 ms): a
         * period in step with the sampler's would bias the samples */
        double ns_per_hot = (double)(t1 - t0) / hot_iter,
               ns_per_warm = (double)(t2 - t1) / warm_iter;
        double cycle_ns = 1e6 + (double)(rand_r(&w->seed) % 8000) * 1e3;
        if (ns_per_hot > 0 && ns_per_warm > 0) {
            hot_iter = (long)(cycle_ns * w->share / 100 / ns_per_hot) + 1;
            warm_iter = (long)(cycle_ns * (100 - w->share) / 100 / ns_per_warm) + 1;
        }
    }
    w->tid = syscall(SYS_gettid);
    w->life_ns = thread_cpu_ns();
    return NULL;
}

static volatile sig_atomic_t own_signals, stray_timer_signals;

static void own_handler(int signo, siginfo_t *info, void *context)
{
    (void)signo, (void)context;
    if (info->si_code == SI_TIMER)
        stray_timer_signals++;
    else
        own_signals++;
}

/* The program takes SIGRTMAX for itself and raises it. */
static void take_signal(void)
{
    struct sigaction sa = {.sa_sigaction = own_handler, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGRTMAX, &sa, NULL);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("own_signal_at %lld\n", now.tv_sec * 1000000000LL + now.tv_nsec);
    raise(SIGRTMAX);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const char *share_text = getenv("HOT_SHARE"), *threads_text = getenv("CPU_HOT_THREADS");
    int threads = threads_text ? atoi(threads_text) : 1;
    struct work w[2] = {{seconds, share_text ? atoi(share_text) : 70, 0, 0, 1, 0, 0, 0},
                        {seconds, share_text ? atoi(share_text) : 70, 0, 0, 2, 0, 0, 0}};
    nvtxRangePushA("setup");
    warm_loop(2000000);
    nvtxRangePop();
    const char *fork_text = getenv("CPU_HOT_FORK");
    pid_t child = fork_text && atoi(fork_text) ? fork() : -1;
    nvtxRangePushA("work");
    long long t0 = thread_cpu_ns(), wall0 = clock_ns(CLOCK_MONOTONIC);
    pthread_t other;
    if (threads > 1)
        pthread_create(&other, NULL, run, &w[1]);
    const char *take_text = getenv("CPU_HOT_TAKE_SIGNAL");
    if (take_text && atoi(take_text)) { /* two halves, the signal taken between them */
        w[0].seconds /= 2;
        run(&w[0]);
        take_signal();
    }
    run(&w[0]);
    if (threads > 1)
        pthread_join(other, NULL);
    long long cpu = thread_cpu_ns() - t0, wall = clock_ns(CLOCK_MONOTONIC) - wall0;
    nvtxRangePop();
    if (child == 0) { /* the fork child: its share on one line of its own */
        printf("child_hot_share %.2f\n", 100.0 * (double)w[0].hot_ns / (double)cpu);
        return 0;
    }
    if (child > 0)
        waitpid(child, NULL, 0);
    if (take_text && atoi(take_text))
        printf("own_signals %d\nstray_timer_signals %d\n", (int)own_signals,
               (int)stray_timer_signals);
    for (int i = 0; i < threads && i < 2; i++)
        printf("thread_cpu_ns %ld %lld\n", w[i].tid, w[i].life_ns);
    printf("hot_share %.2f\ncpu_ns %lld\nwall_ns %lld\niterations_per_cpu_s %.0f\n",
           100.0 * (double)w[0].hot_ns / (double)cpu, cpu, wall,
           w[0].iterations * 1e9 / (double)cpu);
    return 0;
}
