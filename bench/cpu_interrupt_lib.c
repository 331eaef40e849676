/* What a 1 kHz interruption costs a thread, whatever the sampler (docs/benchmarks.md, "CPU
 * sampling's cost, paired"): a small library that bench/cpu_interrupt_cost.py loads into a
 * PyTorch program with ctypes, to switch one source of interruptions of the calling thread on
 * and off between timed blocks of its own work. No Lantern code runs: the kinds are
 *   1  perf cpu-clock, TID|TIME only, ring mapped: the kernel's sample interrupt, bare;
 *   2  perf cpu-clock with the user callchain: what the agent opens (src/agent/cpu_sampling.c);
 *   3  2 plus context_switch records (PERF_RECORD_SWITCH): thread state;
 *   4  a POSIX timer on the thread's CPU clock, SIGEV_THREAD_ID, an empty signal handler:
 *      what a CPU-time-timer sampler costs before it reads a stack;
 *   5  a POSIX timer on CLOCK_MONOTONIC with the same handler (a wall-clock hrtimer, as
 *      perf's cpu-clock is, but with a signal);
 *   6  no interruption: a second thread that wakes every period, reads the thread's CPU clock
 *      and 16 cache lines of its stack with process_vm_readv (what the agent's Python sampler,
 *      src/agent/cpu_python.c, does to a Python thread from another CPU);
 *   7  that thread's wake-ups alone (no clock, no reads);
 *   8  2 and 6 together: the agent's two samplers;
 *  10  2 on every thread of the process (listed at ci_open): what sampling every thread at
 *      the rate costs the program, whichever thread its time depends on.
 * ci_samples() says how many interruptions the last enabled block took, from the ring's
 * records or the handler's count, so that a block's extra time reads per interruption. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include <dirent.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CI_RING_PAGES 64u
#define CI_MAX_EVENTS 256

static struct {
    int kind, fd; /* fd: the first event's (-1: none) */
    unsigned hz;
    int events;
    int fds[CI_MAX_EVENTS];
    struct perf_event_mmap_page *pages[CI_MAX_EVENTS];
    timer_t timer;
    long samples;
    pthread_t reader;
    clockid_t target_clock;
    const char *target_stack;
} ci = {.fd = -1};

static volatile int ci_reader_state; /* 0 idle, 1 looking, 2 ending */
static volatile long ci_looks;

static volatile long ci_signals;

static void ci_handler(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)info, (void)context;
    ci_signals++;
}

static long ci_ring_count(struct perf_event_mmap_page *pg)
{
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
    const unsigned char *data = (const unsigned char *)pg + pg->data_offset;
    long n = 0;
    while (tail < head) {
        struct perf_event_header h;
        uint64_t at = tail % pg->data_size;
        for (size_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = data[(at + i) % pg->data_size];
        n += h.type == PERF_RECORD_SAMPLE;
        if (!h.size)
            break;
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
    return n;
}

/* Kinds 6 and 7: every period, while looking, read the target thread's CPU clock and 16
 * cache lines of its stack, as the Python sampler reads a frame chain (kind 6), or just wake. */
static void *ci_reader(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    char buffer[16][64];
    while (ci_reader_state != 2) {
        next.tv_nsec += 1000000000l / (long)ci.hz;
        if (next.tv_nsec >= 1000000000l)
            next.tv_sec++, next.tv_nsec -= 1000000000l;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (ci_reader_state != 1)
            continue;
        ci_looks++;
        if (ci.kind == 7)
            continue;
        struct timespec cpu;
        clock_gettime(ci.target_clock, &cpu);
        for (int i = 0; i < 16; i++) {
            struct iovec local = {buffer[i], 64};
            struct iovec remote = {(void *)(ci.target_stack - 4096 + 256 * i), 64};
            process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        }
    }
    return NULL;
}

int ci_open(int kind, unsigned hz)
{
    ci.kind = kind;
    ci.hz = hz;
    if (kind >= 6 && kind <= 8) {
        char here;
        ci.target_stack = &here;
        pthread_getcpuclockid(pthread_self(), &ci.target_clock);
        ci_reader_state = 0;
        if (pthread_create(&ci.reader, NULL, ci_reader, NULL))
            return -6;
        if (kind != 8)
            return 0;
    }
    if ((kind >= 1 && kind <= 3) || kind == 8 || kind == 10) {
        struct perf_event_attr attr = {
            .size = sizeof attr,
            .type = PERF_TYPE_SOFTWARE,
            .config = PERF_COUNT_SW_CPU_CLOCK,
            .sample_period = 1000000000u / hz,
            .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                           (kind != 1 ? PERF_SAMPLE_CALLCHAIN : 0),
            .disabled = 1,
            .exclude_kernel = 1,
            .exclude_hv = 1,
            .exclude_callchain_kernel = 1,
            .use_clockid = 1,
            .clockid = CLOCK_MONOTONIC,
            .sample_id_all = 1,
            .context_switch = kind == 3,
            .wakeup_events = 1u << 30,
        };
        pid_t tids[CI_MAX_EVENTS];
        int n = 0;
        if (kind == 10) {
            DIR *dir = opendir("/proc/self/task");
            struct dirent *e;
            while (dir && (e = readdir(dir)) && n < CI_MAX_EVENTS)
                if (e->d_name[0] != '.')
                    tids[n++] = (pid_t)atoi(e->d_name);
            if (dir)
                closedir(dir);
        } else {
            tids[n++] = 0;
        }
        for (int i = 0; i < n; i++) {
            int fd = (int)syscall(SYS_perf_event_open, &attr, tids[i], -1, -1, 0);
            if (fd < 0)
                continue; /* it ended meanwhile */
            void *map = mmap(NULL, (CI_RING_PAGES + 1) * (size_t)getpagesize(),
                             PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (map == MAP_FAILED) {
                close(fd);
                return -2;
            }
            ci.fds[ci.events] = fd;
            ci.pages[ci.events++] = map;
        }
        if (!ci.events)
            return -1;
        ci.fd = ci.fds[0];
        return 0;
    }
    if (kind == 4 || kind == 5) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = ci_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGRTMAX - 3, &sa, NULL))
            return -3;
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGRTMAX - 3;
        ev._sigev_un._tid = (int)syscall(SYS_gettid);
        return timer_create(kind == 4 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ev,
                            &ci.timer) ? -4 : 0;
    }
    return kind == 0 || kind == 6 || kind == 7 ? 0 : -5;
}

static void ci_arm(int on)
{
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (on) {
        its.it_interval.tv_nsec = 1000000000l / ci.hz;
        its.it_value = its.it_interval;
    }
    timer_settime(ci.timer, 0, &its, NULL);
}

void ci_on(void)
{
    ci_signals = 0;
    ci_looks = 0;
    if (ci.kind >= 6 && ci.kind <= 8)
        ci_reader_state = 1;
    if (ci.fd >= 0)
        for (int i = 0; i < ci.events; i++)
            ioctl(ci.fds[i], PERF_EVENT_IOC_ENABLE, 0);
    else if (ci.kind == 4 || ci.kind == 5)
        ci_arm(1);
}

void ci_off(void)
{
    if (ci.kind >= 6 && ci.kind <= 8)
        ci_reader_state = 0;
    if (ci.fd >= 0) {
        ci.samples = 0;
        for (int i = 0; i < ci.events; i++)
            ioctl(ci.fds[i], PERF_EVENT_IOC_DISABLE, 0);
        for (int i = 0; i < ci.events; i++)
            ci.samples += ci_ring_count(ci.pages[i]);
    } else if (ci.kind == 4 || ci.kind == 5) {
        ci_arm(0);
        ci.samples = ci_signals;
    } else if (ci.kind >= 6 && ci.kind <= 8) {
        ci.samples = ci_looks;
    }
}

long ci_samples(void)
{
    return ci.samples;
}

void ci_close(void)
{
    for (int i = 0; i < ci.events; i++) {
        munmap(ci.pages[i], (CI_RING_PAGES + 1) * (size_t)getpagesize());
        close(ci.fds[i]);
    }
    if (ci.kind == 4 || ci.kind == 5)
        timer_delete(ci.timer);
    if (ci.kind >= 6 && ci.kind <= 8) {
        ci_reader_state = 2;
        pthread_join(ci.reader, NULL);
    }
    memset(&ci, 0, sizeof ci);
    ci.fd = -1;
}
