/* -t osrt: the OS runtime calls of the program (nsys's OSRT), by interposition. The launcher
 * preloads the agent (LD_PRELOAD), so the definitions below come before libc's; each times the
 * next definition (dlsym RTLD_NEXT, resolved once) with two ticks of the agent's clock and
 * writes an OSRT_CALL event into the calling thread's buffer only when the call lasted at
 * least the threshold (--osrt-threshold, default 1 us), with an OSRT_BACKTRACE event naming
 * its caller when it lasted --osrt-backtrace-threshold (osrt_backtrace.c). Every call is
 * counted; the totals
 * and the settings are written by the writer. The calls of the agent itself (agent_busy) and
 * those made before the source starts or after the process's exit hooks pass through
 * untouched, and errno is what the real call left. trace/osrt.def names the functions;
 * docs/osrt.md says what is wrapped, what it costs and what it cannot see. */
#undef _FORTIFY_SOURCE /* the fortified inline read() etc. would clash with the definitions */
#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/osrt_backtrace.h"
#include "agent/ring.h"
#include "agent/thread_events.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/list.h"
#include "trace/records.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* nsys's default threshold: shorter calls are counted, not written. */
#define OSRT_DEFAULT_THRESHOLD_NS 1000u
/* Threads with counters of their own; later ones share one, with atomic adds. */
#define OSRT_COUNTED_THREADS 4096u

/* The numbers of trace/osrt.def. */
enum osrt_function {
#define OSRT_FUNCTION(ID, number, name) OSRT_FN_##ID = number,
#include "trace/osrt.def"
#undef OSRT_FUNCTION
};

/* Every symbol defined here: the name looked up next (the symbol's own, except for the execl
 * family, which calls execv, execve, execvp with the argv it built), a version where an
 * unversioned lookup would find an old one (glibc's pthread_cond_* of 2.2.5), the function it
 * is recorded as.
 * How each says it failed is its wrapper's: -1 (or MAP_FAILED) with errno, an error number
 * returned (pthread_*, clock_nanosleep: no errno recorded), never (sleep). */
#define OSRT_SYMBOLS(X)                                                                            \
    X(NANOSLEEP, "nanosleep", NULL, NANOSLEEP)                                         \
    X(CLOCK_NANOSLEEP, "clock_nanosleep", NULL, CLOCK_NANOSLEEP)                        \
    X(USLEEP, "usleep", NULL, USLEEP)                                                  \
    X(SLEEP, "sleep", NULL, SLEEP)                                                     \
    X(READ, "read", NULL, READ)                                                        \
    X(READ_CHK, "__read_chk", NULL, READ)                                              \
    X(WRITE, "write", NULL, WRITE)                                                     \
    X(PREAD, "pread", NULL, PREAD)                                                     \
    X(PREAD64, "pread64", NULL, PREAD)                                                 \
    X(PREAD_CHK, "__pread_chk", NULL, PREAD)                                           \
    X(PREAD64_CHK, "__pread64_chk", NULL, PREAD)                                       \
    X(PWRITE, "pwrite", NULL, PWRITE)                                                  \
    X(PWRITE64, "pwrite64", NULL, PWRITE)                                              \
    X(READV, "readv", NULL, READV)                                                     \
    X(WRITEV, "writev", NULL, WRITEV)                                                  \
    X(RECV, "recv", NULL, RECV)                                                        \
    X(RECV_CHK, "__recv_chk", NULL, RECV)                                              \
    X(RECVFROM, "recvfrom", NULL, RECVFROM)                                            \
    X(RECVFROM_CHK, "__recvfrom_chk", NULL, RECVFROM)                                  \
    X(RECVMSG, "recvmsg", NULL, RECVMSG)                                               \
    X(SEND, "send", NULL, SEND)                                                        \
    X(SENDTO, "sendto", NULL, SENDTO)                                                  \
    X(SENDMSG, "sendmsg", NULL, SENDMSG)                                               \
    X(POLL, "poll", NULL, POLL)                                                        \
    X(POLL_CHK, "__poll_chk", NULL, POLL)                                              \
    X(PPOLL, "ppoll", NULL, PPOLL)                                                     \
    X(EPOLL_WAIT, "epoll_wait", NULL, EPOLL_WAIT)                                      \
    X(EPOLL_PWAIT, "epoll_pwait", NULL, EPOLL_PWAIT)                                   \
    X(SELECT, "select", NULL, SELECT)                                                  \
    X(PSELECT, "pselect", NULL, PSELECT)                                               \
    X(MUTEX_LOCK, "pthread_mutex_lock", NULL, MUTEX_LOCK)                               \
    X(COND_WAIT, "pthread_cond_wait", "GLIBC_2.3.2", COND_WAIT)                         \
    X(COND_TIMEDWAIT, "pthread_cond_timedwait", "GLIBC_2.3.2", COND_TIMEDWAIT)          \
    X(SEM_WAIT, "sem_wait", NULL, SEM_WAIT)                                            \
    X(SEM_TIMEDWAIT, "sem_timedwait", NULL, SEM_TIMEDWAIT)                             \
    X(JOIN, "pthread_join", NULL, JOIN)                                                 \
    X(OPEN, "open", NULL, OPEN)                                                        \
    X(OPEN64, "open64", NULL, OPEN)                                                    \
    X(OPENAT, "openat", NULL, OPENAT)                                                  \
    X(OPENAT64, "openat64", NULL, OPENAT)                                              \
    X(CLOSE, "close", NULL, CLOSE)                                                     \
    X(MMAP, "mmap", NULL, MMAP)                                                        \
    X(MMAP64, "mmap64", NULL, MMAP)                                                    \
    X(MUNMAP, "munmap", NULL, MUNMAP)                                                  \
    X(IOCTL, "ioctl", NULL, IOCTL)                                                     \
    X(FORK, "fork", NULL, FORK)                                                        \
    X(EXECVE, "execve", NULL, EXECVE)                                                  \
    X(EXECV, "execv", NULL, EXECV)                                                     \
    X(EXECVP, "execvp", NULL, EXECVP)                                                  \
    X(EXECVPE, "execvpe", NULL, EXECVPE)                                               \
    X(SYSTEM, "system", NULL, SYSTEM)                                                  \
    X(WAITPID, "waitpid", NULL, WAITPID)                                               \
    X(WAIT4, "wait4", NULL, WAIT4)                                                     \
    X(WAIT, "wait", NULL, WAIT)                                                        \
    X(EXECL, "execv", NULL, EXECL)                                                     \
    X(EXECLE, "execve", NULL, EXECLE)                                                  \
    X(EXECLP, "execvp", NULL, EXECLP)                                                  \
    X(VFORK, "vfork", NULL, VFORK)                                                     \
    X(ACCEPT, "accept", NULL, ACCEPT)                                                  \
    X(ACCEPT4, "accept4", NULL, ACCEPT4)                                               \
    X(CONNECT, "connect", NULL, CONNECT)

enum osrt_symbol {
#define X(SYM, name, version, function) OSRT_SYM_##SYM,
    OSRT_SYMBOLS(X)
#undef X
    OSRT_SYMBOL_COUNT
};

static const struct {
    const char *name, *version;
    uint8_t function;
} osrt_symbols[OSRT_SYMBOL_COUNT] = {
#define X(SYM, name, version, function) {name, version, OSRT_FN_##function},
    OSRT_SYMBOLS(X)
#undef X
};

static void *osrt_next_fn[OSRT_SYMBOL_COUNT]; /* the next definitions, resolved once */

/* One thread's counts (written by it alone; the writer sums them at the end). */
struct osrt_counts {
    uint64_t seen, kept, lost;
};

static struct {
    _Atomic int on;          /* the source runs: calls are timed */
    uint64_t threshold_ns;   /* --osrt-threshold */
    uint64_t threshold_ticks;
    uint64_t backtrace_ns;    /* --osrt-backtrace-threshold */
    uint64_t backtrace_ticks; /* UINT64_MAX: no backtraces */
    unsigned backtrace_depth; /* --osrt-backtrace-depth (0: none) */
    int settings_pending; /* TRACE_OSRT_SETTINGS at the next drain (the start, a fork child) */
    _Atomic uint32_t counted; /* osrt_counts slots handed out */
} osrt;

static struct osrt_counts osrt_counts[OSRT_COUNTED_THREADS + 1]; /* the last one is shared */
static __thread struct osrt_counts *osrt_mine __attribute__((tls_model("initial-exec")));

/* ---- the next definitions ---- */

static void *osrt_resolve(unsigned sym)
{
    void *fn = osrt_symbols[sym].version
                   ? dlvsym(RTLD_NEXT, osrt_symbols[sym].name, osrt_symbols[sym].version)
                   : NULL;
    if (!fn)
        fn = dlsym(RTLD_NEXT, osrt_symbols[sym].name);
    __atomic_store_n(&osrt_next_fn[sym], fn, __ATOMIC_RELEASE);
    return fn;
}

static inline void *osrt_next(unsigned sym)
{
    void *fn = __atomic_load_n(&osrt_next_fn[sym], __ATOMIC_ACQUIRE);
    return __builtin_expect(fn != NULL, 1) ? fn : osrt_resolve(sym);
}

/* Every symbol at load, so that a program's first calls do not run dlsym (which may itself
 * call functions defined here); only where -t osrt preloaded the agent. Loaded by NVTX or
 * CUDA alone, the agent is no preload, its definitions stand behind libc's and no wrapper
 * runs: the 50-odd lookups would be wasted (a wrapper that does run resolves its own). */
__attribute__((constructor(101))) static void osrt_resolve_all(void)
{
    const char *trace = getenv(trace_env_name(TRACE_ENV_TRACE));
    if (!trace || !trace_list_has(trace, "osrt"))
        return;
    for (unsigned sym = 0; sym < OSRT_SYMBOL_COUNT; sym++)
        osrt_next(sym);
}

/* ---- the hot path ---- */

/* Whether this call is timed: the source on, not the agent's own call, and the session not
 * paused (lantern stop: a paused call costs the next definition's call and two loads). */
static inline int osrt_timing(void)
{
    return __atomic_load_n(&osrt.on, __ATOMIC_RELAXED) && !agent_busy && !agent_paused();
}

static struct osrt_counts *osrt_claim_counts(void)
{
    uint32_t i = __atomic_fetch_add(&osrt.counted, 1, __ATOMIC_RELAXED);
    osrt_mine = &osrt_counts[i < OSRT_COUNTED_THREADS ? i : OSRT_COUNTED_THREADS];
    return osrt_mine;
}

static inline void osrt_count(uint64_t *counter, struct osrt_counts *c)
{
    if (__builtin_expect(c != &osrt_counts[OSRT_COUNTED_THREADS], 1))
        __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* A backtrace's key in the thread's cache of strings: 64 bits of its bytes (two texts
 * colliding among a thread's 64 cached ones: ~1e-16). */
static uint64_t osrt_hash(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15u ^ len, word;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&word, s + i, 8);
        h = (h ^ word) * 0xC2B2AE3D27D4EB4Fu;
        h ^= h >> 31;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001B3u;
    return h ^ (h >> 29);
}

/* A kept call's OSRT_CALL event, and after it, where stack_len is not 0, the OSRT_BACKTRACE
 * of its caller (the text defined first as the thread's STRING when it is new to the thread). */
static void osrt_put(unsigned sym, uint64_t start, uint64_t end, int64_t ret, int error,
                     const char *stack, size_t stack_len)
{
    struct osrt_counts *c = osrt_mine;
    osrt_count(&c->kept, c);
    struct agent_thread *t = ring_self(start);
    struct thread_message m = {0};
    if (t && stack_len) {
        m = (struct thread_message){.bytes = stack, .len = stack_len};
        thread_message_resolve_hashed(t, &m, osrt_hash(stack, stack_len));
    }
    uint8_t *p = t ? thread_event_begin_extra(t, TRACE_EV_OSRT_CALL, start, &m,
                                              stack_len ? TRACE_EV_MAX_FIXED : 0)
                   : NULL;
    if (!p) {
        osrt_count(&c->lost, c);
        return;
    }
    p = trace_ev_put_osrt_call(p, (struct trace_ev_osrt_call){end - start,
                                                              osrt_symbols[sym].function, ret,
                                                              (uint64_t)error});
    if (stack_len)
        p = trace_ev_put_osrt_backtrace(p, (struct trace_ev_osrt_backtrace){m.id});
    ring_commit(t, p, end);
}

/* A call at least the backtrace threshold long: its caller's stack, read here (the text's
 * room is on the stack only on this path); caller is the wrapper's return address. */
static __attribute__((noinline)) void osrt_put_with_backtrace(unsigned sym, uint64_t start,
                                                              uint64_t end, int64_t ret,
                                                              int error, const void *caller)
{
    char text[OSRT_BACKTRACE_TEXT];
    size_t len = osrt_backtrace_capture(text, sizeof text, osrt.backtrace_depth, caller);
    osrt_put(sym, start, end, ret, error, text, len);
}

/* A call at least the threshold long: its events (out of line, errno kept), unless lantern
 * stop has paused the session (docs/long-runs.md: then it is only counted as seen). */
static __attribute__((noinline)) void osrt_record(unsigned sym, uint64_t start, uint64_t end,
                                                  int64_t ret, int error, const void *caller)
{
    int saved_errno = errno;
    agent_busy++;
    if (!agent_paused()) {
        if (end - start >= osrt.backtrace_ticks)
            osrt_put_with_backtrace(sym, start, end, ret, error, caller);
        else
            osrt_put(sym, start, end, ret, error, NULL, 0);
    }
    agent_busy--;
    errno = saved_errno;
}

/* After the real call: counted; 1 when it is long enough to be written (osrt_record, by the
 * wrapper: OSRT_RECORD). */
static inline int osrt_done(uint64_t start, uint64_t end)
{
    struct osrt_counts *c = osrt_mine;
    if (__builtin_expect(!c, 0))
        c = osrt_claim_counts();
    osrt_count(&c->seen, c);
    return __builtin_expect((int64_t)(end - start) >= (int64_t)osrt.threshold_ticks, 0);
}

/* A kept call's events, from the wrapper itself: its return address is the caller's frame of
 * a backtrace. The barrier keeps that read on this path (the compiler would otherwise load it
 * before the test, on every call). error is errno where the call failed by its convention,
 * else 0. */
#define OSRT_RECORD(sym, start, end, ret, error)                                                   \
    do {                                                                                           \
        __asm__ volatile("" ::: "memory");                                                         \
        osrt_record(sym, start, end, ret, error, __builtin_return_address(0));                     \
    } while (0)

/* The body of a wrapper: the next definition, timed when the source runs. `failed` tells
 * from ret_ whether errno holds the call's error (read before anything else can change it);
 * `fail` is returned, with ENOSYS, in the one case where the next definition cannot be
 * found. */
#define OSRT_CALL(SYM, fn, args, failed, fail)                                                     \
    do {                                                                                           \
        __typeof__(&fn) real_ = (__typeof__(&fn))osrt_next(OSRT_SYM_##SYM);                        \
        if (__builtin_expect(!real_, 0)) {                                                         \
            errno = ENOSYS;                                                                        \
            return fail;                                                                           \
        }                                                                                          \
        if (!osrt_timing())                                                                        \
            return real_ args;                                                                     \
        uint64_t start_ = clock_ticks();                                                           \
        __typeof__(real_ args) ret_ = real_ args;                                                  \
        int error_ = (failed) ? errno : 0;                                                         \
        uint64_t end_ = clock_ticks();                                                             \
        if (osrt_done(start_, end_))                                                               \
            OSRT_RECORD(OSRT_SYM_##SYM, start_, end_, (int64_t)(intptr_t)ret_, error_);            \
        return ret_;                                                                               \
    } while (0)

#define OSRT_MINUS_ONE (ret_ == -1)

/* ---- the wrappers ---- */

#define EXPORT __attribute__((visibility("default")))

/* glibc's fortified entry points (-D_FORTIFY_SOURCE, the default of distributions' compilers):
 * declared here, as their headers are not included. */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t nbytes, off_t offset, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t nbytes, off64_t offset, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
                       struct sockaddr *addr, socklen_t *addrlen);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    OSRT_CALL(NANOSLEEP, nanosleep, (req, rem), OSRT_MINUS_ONE, -1);
}

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                           struct timespec *rem)
{
    OSRT_CALL(CLOCK_NANOSLEEP, clock_nanosleep, (clock, flags, req, rem), 0, ENOSYS);
}

EXPORT int usleep(useconds_t usec)
{
    OSRT_CALL(USLEEP, usleep, (usec), OSRT_MINUS_ONE, -1);
}

EXPORT unsigned int sleep(unsigned int seconds)
{
    OSRT_CALL(SLEEP, sleep, (seconds), 0, seconds);
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    OSRT_CALL(READ, read, (fd, buf, count), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen)
{
    OSRT_CALL(READ_CHK, __read_chk, (fd, buf, nbytes, buflen), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    OSRT_CALL(WRITE, write, (fd, buf, count), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
    OSRT_CALL(PREAD, pread, (fd, buf, count, offset), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t offset)
{
    OSRT_CALL(PREAD64, pread64, (fd, buf, count, offset), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t nbytes, off_t offset, size_t buflen)
{
    OSRT_CALL(PREAD_CHK, __pread_chk, (fd, buf, nbytes, offset, buflen), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t nbytes, off64_t offset, size_t buflen)
{
    OSRT_CALL(PREAD64_CHK, __pread64_chk, (fd, buf, nbytes, offset, buflen), OSRT_MINUS_ONE,
              -1);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    OSRT_CALL(PWRITE, pwrite, (fd, buf, count, offset), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset)
{
    OSRT_CALL(PWRITE64, pwrite64, (fd, buf, count, offset), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int count)
{
    OSRT_CALL(READV, readv, (fd, iov, count), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int count)
{
    OSRT_CALL(WRITEV, writev, (fd, iov, count), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    OSRT_CALL(RECV, recv, (fd, buf, len, flags), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
    OSRT_CALL(RECV_CHK, __recv_chk, (fd, buf, len, buflen, flags), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
                        socklen_t *addrlen)
{
    OSRT_CALL(RECVFROM, recvfrom, (fd, buf, len, flags, addr, addrlen), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
                              struct sockaddr *addr, socklen_t *addrlen)
{
    OSRT_CALL(RECVFROM_CHK, __recvfrom_chk, (fd, buf, len, buflen, flags, addr, addrlen),
              OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    OSRT_CALL(RECVMSG, recvmsg, (fd, msg, flags), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    OSRT_CALL(SEND, send, (fd, buf, len, flags), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                      const struct sockaddr *addr, socklen_t addrlen)
{
    OSRT_CALL(SENDTO, sendto, (fd, buf, len, flags, addr, addrlen), OSRT_MINUS_ONE, -1);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    OSRT_CALL(SENDMSG, sendmsg, (fd, msg, flags), OSRT_MINUS_ONE, -1);
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
    OSRT_CALL(ACCEPT, accept, (fd, addr, addrlen), OSRT_MINUS_ONE, -1);
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    OSRT_CALL(ACCEPT4, accept4, (fd, addr, addrlen, flags), OSRT_MINUS_ONE, -1);
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
    OSRT_CALL(CONNECT, connect, (fd, addr, addrlen), OSRT_MINUS_ONE, -1);
}

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    OSRT_CALL(POLL, poll, (fds, nfds, timeout), OSRT_MINUS_ONE, -1);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
    OSRT_CALL(POLL_CHK, __poll_chk, (fds, nfds, timeout, fdslen), OSRT_MINUS_ONE, -1);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                 const sigset_t *sigmask)
{
    OSRT_CALL(PPOLL, ppoll, (fds, nfds, timeout, sigmask), OSRT_MINUS_ONE, -1);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    OSRT_CALL(EPOLL_WAIT, epoll_wait, (epfd, events, maxevents, timeout), OSRT_MINUS_ONE, -1);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                       const sigset_t *sigmask)
{
    OSRT_CALL(EPOLL_PWAIT, epoll_pwait, (epfd, events, maxevents, timeout, sigmask),
              OSRT_MINUS_ONE, -1);
}

EXPORT int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                  struct timeval *timeout)
{
    OSRT_CALL(SELECT, select, (nfds, readfds, writefds, exceptfds, timeout), OSRT_MINUS_ONE, -1);
}

EXPORT int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                   const struct timespec *timeout, const sigset_t *sigmask)
{
    OSRT_CALL(PSELECT, pselect, (nfds, readfds, writefds, exceptfds, timeout, sigmask),
              OSRT_MINUS_ONE, -1);
}

/* Only the wait is timed, as nsys records only blocking calls: an uncontended lock (~20 ns)
 * is taken by pthread_mutex_trylock and never reaches the clock; EBUSY (held, or an
 * error-checking mutex the caller holds) goes on to the real lock, which then blocks or
 * returns its own error; any other answer of trylock is the lock's (0, EOWNERDEAD, EINVAL). */
EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex)
{
    if (osrt_timing()) {
        int rc = pthread_mutex_trylock(mutex);
        if (rc != EBUSY)
            return rc;
    }
    OSRT_CALL(MUTEX_LOCK, pthread_mutex_lock, (mutex), 0, ENOSYS);
}

EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    OSRT_CALL(COND_WAIT, pthread_cond_wait, (cond, mutex), 0, ENOSYS);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                  const struct timespec *abstime)
{
    OSRT_CALL(COND_TIMEDWAIT, pthread_cond_timedwait, (cond, mutex, abstime), 0, ENOSYS);
}

EXPORT int sem_wait(sem_t *sem)
{
    OSRT_CALL(SEM_WAIT, sem_wait, (sem), OSRT_MINUS_ONE, -1);
}

EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
    OSRT_CALL(SEM_TIMEDWAIT, sem_timedwait, (sem, abstime), OSRT_MINUS_ONE, -1);
}

EXPORT int pthread_join(pthread_t thread, void **retval)
{
    OSRT_CALL(JOIN, pthread_join, (thread, retval), 0, ENOSYS);
}

/* open and openat take a mode only with O_CREAT or O_TMPFILE (open(2)). */
static mode_t osrt_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = osrt_mode(flags, ap);
    va_end(ap);
    OSRT_CALL(OPEN, open, (path, flags, mode), OSRT_MINUS_ONE, -1);
}

EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = osrt_mode(flags, ap);
    va_end(ap);
    OSRT_CALL(OPEN64, open64, (path, flags, mode), OSRT_MINUS_ONE, -1);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = osrt_mode(flags, ap);
    va_end(ap);
    OSRT_CALL(OPENAT, openat, (dirfd, path, flags, mode), OSRT_MINUS_ONE, -1);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = osrt_mode(flags, ap);
    va_end(ap);
    OSRT_CALL(OPENAT64, openat64, (dirfd, path, flags, mode), OSRT_MINUS_ONE, -1);
}

EXPORT int close(int fd)
{
    OSRT_CALL(CLOSE, close, (fd), OSRT_MINUS_ONE, -1);
}

EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    OSRT_CALL(MMAP, mmap, (addr, length, prot, flags, fd, offset), ret_ == MAP_FAILED,
              MAP_FAILED);
}

EXPORT void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off64_t offset)
{
    OSRT_CALL(MMAP64, mmap64, (addr, length, prot, flags, fd, offset), ret_ == MAP_FAILED,
              MAP_FAILED);
}

EXPORT int munmap(void *addr, size_t length)
{
    OSRT_CALL(MUNMAP, munmap, (addr, length), OSRT_MINUS_ONE, -1);
}

/* ioctl's third argument is one word (a pointer or an integer) where the request has one. */
EXPORT int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    OSRT_CALL(IOCTL, ioctl, (fd, request, arg), OSRT_MINUS_ONE, -1);
}

/* The child returns at once: its state starts over (the agent's fork handlers), and its
 * fork did not take the parent's time. */
EXPORT pid_t fork(void)
{
    __typeof__(&fork) real = (__typeof__(&fork))osrt_next(OSRT_SYM_FORK);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!osrt_timing())
        return real();
    uint64_t start = clock_ticks();
    pid_t pid = real();
    if (pid == 0)
        return 0;
    int error = pid < 0 ? errno : 0;
    uint64_t end = clock_ticks();
    if (osrt_done(start, end))
        OSRT_RECORD(OSRT_SYM_FORK, start, end, pid, error);
    return pid;
}

/* vfork: its child runs on the parent's stack until it execs or exits, so a wrapper that
 * called the next vfork and returned through its own frame would return into a frame the child
 * reused. The wrapper (x86-64 only, below) keeps nothing on the stack across the call, as
 * glibc's own vfork: it asks osrt_vfork_begin for the next vfork and the start tick (C, before
 * the call), pops its caller's return address into r8 and the tick into r9 (registers vfork
 * and the system call keep), calls the next vfork, pushes the return address back; the child
 * returns 0 at once; the parent jumps to osrt_vfork_end, which records the call, timed from
 * before the child existed until the parent resumed (the child's exec or exit), and returns
 * the pid to the caller. While the child runs on the parent's thread, agent_busy is raised:
 * its calls (dup2, close, execve, _exit) pass through unrecorded, as they would otherwise be
 * written into the parent thread's buffer. */
struct osrt_vfork_plan {
    pid_t (*next)(void);
    uint64_t start; /* 0: not timed */
};

static pid_t osrt_vfork_missing(void)
{
    errno = ENOSYS;
    return -1;
}

__attribute__((visibility("hidden"), used)) struct osrt_vfork_plan osrt_vfork_begin(void)
{
    struct osrt_vfork_plan plan = {(pid_t(*)(void))osrt_next(OSRT_SYM_VFORK), 0};
    if (!plan.next)
        plan.next = osrt_vfork_missing;
    else if (osrt_timing()) {
        agent_busy++;
        plan.start = clock_ticks() | 1; /* never 0 */
    }
    return plan;
}

/* The child's frames left AddressSanitizer's shadow of the shared stack poisoned (it exec'd or
 * exited without returning from them); ASan's own vfork interceptor clears it, but only after
 * its real vfork, this wrapper, has returned: the agent's ASan build clears it first. */
#if defined(__SANITIZE_ADDRESS__)
void __asan_handle_vfork(void *sp);
#define OSRT_VFORK_UNPOISON() __asan_handle_vfork(__builtin_frame_address(0))
#else
#define OSRT_VFORK_UNPOISON() ((void)0)
#endif

__attribute__((visibility("hidden"), used)) pid_t osrt_vfork_end(uint64_t start, pid_t pid)
{
    if (!start)
        return pid;
    uint64_t end = clock_ticks();
    int error = pid < 0 ? errno : 0;
    OSRT_VFORK_UNPOISON();
    agent_busy--;
    if (osrt_done(start, end)) /* reached by a jump: its return address is vfork's caller's */
        OSRT_RECORD(OSRT_SYM_VFORK, start, end, pid, error); /* errno as the call left it */
    return pid;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "    sub $8, %rsp\n"              /* aligned for the call */
        "    call osrt_vfork_begin\n"     /* rax: the next vfork, rdx: the start tick */
        "    add $8, %rsp\n"
        "    pop %r8\n"                   /* the caller's return address, off the stack */
        "    mov %rdx, %r9\n"
        "    call *%rax\n"                /* returns twice: in the child, then the parent */
        "    push %r8\n"
        "    test %eax, %eax\n"
        "    jnz 1f\n"
        "    ret\n"                       /* the child */
        "1:  mov %r9, %rdi\n"
        "    mov %eax, %esi\n"
        "    jmp osrt_vfork_end\n"        /* returns the pid to the caller */
        ".size vfork, .-vfork\n");
#endif

/* The exec family returns only when it failed: a successful exec ends the process's image,
 * its events so far are in the buffer file (the salvage writes them). */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    OSRT_CALL(EXECVE, execve, (path, argv, envp), OSRT_MINUS_ONE, -1);
}

EXPORT int execv(const char *path, char *const argv[])
{
    OSRT_CALL(EXECV, execv, (path, argv), OSRT_MINUS_ONE, -1);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    OSRT_CALL(EXECVP, execvp, (file, argv), OSRT_MINUS_ONE, -1);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    OSRT_CALL(EXECVPE, execvpe, (file, argv, envp), OSRT_MINUS_ONE, -1);
}

/* The execl family: the arguments up to the NULL gathered into an argv on the stack (no
 * allocation: a vfork child may call it), as glibc's own execl does, then the next execv,
 * execve or execvp, timed and recorded as execl, execle or execlp. */
#define OSRT_ARGV(argv, arg0, ap)                                                                  \
    size_t argc_ = 1;                                                                              \
    va_start(ap, arg0);                                                                            \
    while (va_arg(ap, const char *))                                                               \
        argc_++;                                                                                   \
    va_end(ap);                                                                                    \
    char *argv[argc_ + 1];                                                                         \
    argv[0] = (char *)(arg0);                                                                      \
    va_start(ap, arg0);                                                                            \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                         \
        argv[i_] = va_arg(ap, char *)

EXPORT int execl(const char *path, const char *arg0, ...)
{
    va_list ap;
    OSRT_ARGV(argv, arg0, ap);
    va_end(ap);
    OSRT_CALL(EXECL, execv, (path, argv), OSRT_MINUS_ONE, -1);
}

EXPORT int execlp(const char *file, const char *arg0, ...)
{
    va_list ap;
    OSRT_ARGV(argv, arg0, ap);
    va_end(ap);
    OSRT_CALL(EXECLP, execvp, (file, argv), OSRT_MINUS_ONE, -1);
}

/* execle's environment follows the NULL that ends the arguments. */
EXPORT int execle(const char *path, const char *arg0, ...)
{
    va_list ap;
    OSRT_ARGV(argv, arg0, ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    OSRT_CALL(EXECLE, execve, (path, argv, envp), OSRT_MINUS_ONE, -1);
}

EXPORT int system(const char *command)
{
    OSRT_CALL(SYSTEM, system, (command), OSRT_MINUS_ONE, -1);
}

EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
    OSRT_CALL(WAITPID, waitpid, (pid, status, options), OSRT_MINUS_ONE, -1);
}

EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
    OSRT_CALL(WAIT4, wait4, (pid, status, options, usage), OSRT_MINUS_ONE, -1);
}

EXPORT pid_t wait(int *status)
{
    OSRT_CALL(WAIT, wait, (status), OSRT_MINUS_ONE, -1);
}

/* ---- the source ---- */

/* TSC ticks per ns, measured over 200 us of CLOCK_MONOTONIC (the threshold's conversion: its
 * error, ~0.05 %, only moves which calls of about the threshold's length are kept). */
static double osrt_ticks_per_ns(void)
{
    if (!clock_ticks_are_tsc)
        return 1.0;
    uint64_t ns0 = clock_mono_ns(), ticks0 = clock_ticks(), ns1, ticks1;
    do {
        ns1 = clock_mono_ns();
        ticks1 = clock_ticks();
    } while (ns1 - ns0 < 200000);
    return (double)(ticks1 - ticks0) / (double)(ns1 - ns0);
}

static int osrt_init(void)
{
    const char *threshold = getenv(trace_env_name(TRACE_ENV_OSRT_THRESHOLD_NS));
    char *end = NULL;
    unsigned long long ns = threshold && *threshold ? strtoull(threshold, &end, 10) : 0;
    osrt.threshold_ns = end && !*end ? ns : OSRT_DEFAULT_THRESHOLD_NS;
    double ticks_per_ns = osrt_ticks_per_ns();
    osrt.threshold_ticks = (uint64_t)((double)osrt.threshold_ns * ticks_per_ns);
    osrt_backtrace_init(&osrt.backtrace_ns, &osrt.backtrace_depth);
    osrt.backtrace_ticks = osrt.backtrace_depth
                               ? (uint64_t)((double)osrt.backtrace_ns * ticks_per_ns)
                               : UINT64_MAX;
    osrt.settings_pending = 1;
    __atomic_store_n(&osrt.on, 1, __ATOMIC_RELEASE);
    return 0;
}

/* The child's file starts over, and so do its counts: the surviving thread's slot is kept. */
/* The counters in use: the threads' own, and the shared one once they are all taken. */
static uint32_t osrt_counts_used(void)
{
    uint32_t used = __atomic_load_n(&osrt.counted, __ATOMIC_RELAXED);
    return used <= OSRT_COUNTED_THREADS ? used : OSRT_COUNTED_THREADS + 1;
}

static void osrt_at_fork_child(void)
{
    memset(osrt_counts, 0, osrt_counts_used() * sizeof osrt_counts[0]);
    osrt.settings_pending = 1;
}

/* Calls after the exit hooks (later destructors) are not timed: the file is ending. */
static void osrt_at_exit(void)
{
    __atomic_store_n(&osrt.on, 0, __ATOMIC_RELEASE);
}

static void osrt_drain(int final)
{
    struct trace_chunk_builder *b = writer_chunk_locked();
    if (osrt.settings_pending) {
        osrt.settings_pending = 0;
        writer_reserve_locked(32);
        struct trace_osrt_settings settings = {.threshold_ns = osrt.threshold_ns,
                                               .backtrace_threshold_ns = osrt.backtrace_ns,
                                               .backtrace_depth = osrt.backtrace_depth};
        trace_put_osrt_settings(b, &settings);
    }
    if (!final)
        return;
    struct trace_osrt_totals totals = {0};
    for (uint32_t i = 0, used = osrt_counts_used(); i < used; i++) {
        const struct osrt_counts *c = &osrt_counts[i];
        totals.seen += __atomic_load_n(&c->seen, __ATOMIC_RELAXED);
        totals.kept += __atomic_load_n(&c->kept, __ATOMIC_RELAXED);
        totals.lost += __atomic_load_n(&c->lost, __ATOMIC_RELAXED);
    }
    writer_reserve_locked(64);
    trace_put_osrt_totals(b, &totals);
}

/* The LD_PRELOAD entry point: the launcher preloads the agent for -t osrt, so every process
 * of the run (shells, exec'd children, Python) starts it at load, not at its first NVTX call. */
__attribute__((constructor(102))) static void osrt_preload_start(void)
{
    const char *trace = getenv(trace_env_name(TRACE_ENV_TRACE));
    if (trace && trace_list_has(trace, "osrt") && getenv(trace_env_name(TRACE_ENV_SESSION_DIR)))
        agent_init(TRACE_FLAG_OSRT);
}

AGENT_SOURCE(osrt_source) = {
    .name = "osrt",
    .trace_flag = TRACE_FLAG_OSRT,
    .init = osrt_init,
    .at_fork_child = osrt_at_fork_child,
    .at_exit = osrt_at_exit,
    .drain = osrt_drain,
};
