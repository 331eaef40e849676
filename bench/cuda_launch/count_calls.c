/* LD_PRELOAD counter of the system calls (and the libc calls that wake threads) a program
 * makes through libc, printed to stderr at exit as one "count_calls:" line per process.
 * Under the GPU machine's sandbox (gVisor) every system call costs microseconds, so the calls
 * a tracer adds per kernel launch decide its overhead there. Usage:
 *   LD_PRELOAD=build/lib/libcount_calls.so build/bin/cuda_launch 20000 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { C_IOCTL, C_SYSCALL, C_FUTEX, C_GETTID, C_YIELD, C_MMAP, C_MUNMAP, C_MPROTECT, C_POLL,
       C_READ, C_WRITE, C_NANOSLEEP, C_CLOCK, C_COND_SIGNAL, C_COND_WAIT, C_COUNT };
static const char *const names[C_COUNT] = {
    "ioctl", "syscall", "syscall(futex)", "gettid", "sched_yield", "mmap", "munmap", "mprotect",
    "poll", "read", "write", "nanosleep", "clock_gettime", "pthread_cond_signal",
    "pthread_cond_wait"};
static uint64_t counts[C_COUNT];

/* The ioctl request codes seen, with their counts: which driver calls repeat per launch. */
#define REQUESTS 32
static struct { unsigned long request; uint64_t count; } requests[REQUESTS];

#define COUNT(c) __atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED)
#define REAL(ret, name, ...)                                            \
    static ret (*real)(__VA_ARGS__);                                    \
    if (!real)                                                          \
        real = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

static void count_request(unsigned long request)
{
    for (int i = 0; i < REQUESTS; i++) {
        unsigned long seen = __atomic_load_n(&requests[i].request, __ATOMIC_RELAXED);
        if (seen == 0 && __atomic_compare_exchange_n(&requests[i].request, &seen, request, 0,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            seen = request;
        if (seen == request) {
            __atomic_fetch_add(&requests[i].count, 1, __ATOMIC_RELAXED);
            return;
        }
    }
}

int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    COUNT(C_IOCTL);
    count_request(request);
    REAL(int, "ioctl", int, unsigned long, void *);
    return real(fd, request, arg);
}

long syscall(long number, ...)
{
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    COUNT(number == SYS_futex ? C_FUTEX : number == SYS_gettid ? C_GETTID : C_SYSCALL);
    REAL(long, "syscall", long, long, long, long, long, long, long);
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

pid_t gettid(void)
{
    COUNT(C_GETTID);
    REAL(pid_t, "gettid", void);
    return real();
}

int sched_yield(void)
{
    COUNT(C_YIELD);
    REAL(int, "sched_yield", void);
    return real();
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    COUNT(C_MMAP);
    REAL(void *, "mmap", void *, size_t, int, int, int, off_t);
    return real(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
    COUNT(C_MUNMAP);
    REAL(int, "munmap", void *, size_t);
    return real(addr, len);
}

int mprotect(void *addr, size_t len, int prot)
{
    COUNT(C_MPROTECT);
    REAL(int, "mprotect", void *, size_t, int);
    return real(addr, len, prot);
}

struct pollfd;
int poll(struct pollfd *fds, unsigned long n, int timeout)
{
    COUNT(C_POLL);
    REAL(int, "poll", struct pollfd *, unsigned long, int);
    return real(fds, n, timeout);
}

ssize_t read(int fd, void *buf, size_t n)
{
    COUNT(C_READ);
    REAL(ssize_t, "read", int, void *, size_t);
    return real(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    COUNT(C_WRITE);
    REAL(ssize_t, "write", int, const void *, size_t);
    return real(fd, buf, n);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
    COUNT(C_NANOSLEEP);
    REAL(int, "nanosleep", const struct timespec *, struct timespec *);
    return real(req, rem);
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    COUNT(C_CLOCK);
    REAL(int, "clock_gettime", clockid_t, struct timespec *);
    return real(clock, ts);
}

int pthread_cond_signal(pthread_cond_t *cond)
{
    COUNT(C_COND_SIGNAL);
    REAL(int, "pthread_cond_signal", pthread_cond_t *);
    return real(cond);
}

int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    COUNT(C_COND_WAIT);
    REAL(int, "pthread_cond_wait", pthread_cond_t *, pthread_mutex_t *);
    return real(cond, mutex);
}

__attribute__((destructor)) static void count_calls_report(void)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "count_calls: pid %d", (int)getpid());
    for (int c = 0; c < C_COUNT && n < (int)sizeof(line); c++)
        n += snprintf(line + n, sizeof(line) - n, " %s=%llu", names[c],
                      (unsigned long long)counts[c]);
    for (int i = 0; i < REQUESTS && requests[i].request && n < (int)sizeof(line); i++)
        n += snprintf(line + n, sizeof(line) - n, " ioctl[%#lx]=%llu", requests[i].request,
                      (unsigned long long)requests[i].count);
    if (n < (int)sizeof(line) - 1)
        line[n++] = '\n';
    fwrite(line, 1, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line), stderr);
}
