/* The program tests/osrt/test_osrt.py runs under `lantern profile -t osrt`: blocking libc calls
 * whose number and durations it knows, measured with CLOCK_MONOTONIC around each call and
 * printed as "call NAME START_NS DURATION_NS" (the ground truth the database is checked
 * against), and the behaviours the wrappers must keep (errno, cancellation, fork, exec,
 * _exit, a program that closes every descriptor). One mode per argument:
 *
 *   counts    50 nanosleeps of 2 ms, then 30 one-byte reads of a pipe a thread feeds every
 *             3 ms (its waits are direct syscalls: not wrapped), and 200 fast writes
 *   errors    a read of a bad descriptor (EBADF) and a read of a socket that times out
 *             (EAGAIN after 5 ms), errno checked after each; a contended and an uncontended
 *             pthread_mutex_lock
 *   cancel    a thread blocked in read() is cancelled
 *   threads   4 threads of 5 nanosleeps of 1 ms, joined
 *   fork      a child that sleeps 3 times and _exits, a child that execs this program with
 *             `child` (4 sleeps), both waited for
 *   closeall  closes every descriptor, then sleeps 5 times
 *   child     4 nanosleeps of 1 ms (the exec'd child of `fork`, `vfork`, `execl`), then
 *             prints OSRT_MARK from its environment
 *   vfork     a vfork child that writes the parent's memory, reuses the stack below and
 *             _exits; a vfork child whose execl of a missing file fails, then execls `child`;
 *             both waited for, the caller's frame checked intact
 *   execl     execl, execlp and execle of a missing file (ENOENT, errno checked); children
 *             that execl, execlp and execle (OSRT_MARK=execle) `child`
 *   sockets   accept and accept4 of a Unix socket a thread connects to after 3 ms each, and
 *             a connect to a missing path (ENOENT)
 * Exit status 0 when every check of the program itself held. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *self_path;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report(const char *name, uint64_t start, uint64_t end)
{
    printf("call %s %llu %llu\n", name, (unsigned long long)start,
           (unsigned long long)(end - start));
}

static void sleep_ms(const char *tag, long ms)
{
    struct timespec t = {0, ms * 1000000};
    uint64_t start = now_ns();
    nanosleep(&t, NULL);
    report(tag, start, now_ns());
}

/* A wait the wrappers do not see: the system call itself. */
static void raw_sleep_ms(long ms)
{
    struct timespec t = {0, ms * 1000000};
    syscall(SYS_nanosleep, &t, NULL);
}

static int pipe_fds[2];

static void *feeder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 30; i++) {
        raw_sleep_ms(3);
        uint64_t start = now_ns();
        ssize_t n = write(pipe_fds[1], "x", 1);
        report("write", start, now_ns());
        if (n != 1)
            abort();
    }
    return NULL;
}

static int run_counts(void)
{
    for (int i = 0; i < 50; i++)
        sleep_ms("nanosleep", 2);
    if (pipe(pipe_fds) != 0)
        return 1;
    pthread_t thread;
    pthread_create(&thread, NULL, feeder, NULL);
    for (int i = 0; i < 30; i++) {
        char c;
        uint64_t start = now_ns();
        ssize_t n = read(pipe_fds[0], &c, 1);
        report("read", start, now_ns());
        if (n != 1)
            return 1;
    }
    uint64_t start = now_ns();
    pthread_join(thread, NULL);
    report("pthread_join", start, now_ns());
    int null = open("/dev/null", O_WRONLY);
    for (int i = 0; i < 200; i++) {
        start = now_ns();
        ssize_t n = write(null, "y", 1);
        report("write", start, now_ns());
        if (n != 1)
            return 1;
    }
    return 0;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *holder(void *arg)
{
    pthread_mutex_lock(&held);
    __atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
    raw_sleep_ms(5);
    pthread_mutex_unlock(&held);
    return NULL;
}

static int run_errors(void)
{
    char c;
    errno = 0;
    ssize_t n = read(-1, &c, 1);
    if (n != -1 || errno != EBADF) {
        fprintf(stderr, "read(-1): %zd, errno %d\n", n, errno);
        return 1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 1;
    struct timeval timeout = {0, 5000};
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    errno = 0;
    uint64_t start = now_ns();
    n = read(sv[0], &c, 1);
    int err = errno;
    report("read", start, now_ns());
    if (n != -1 || (err != EAGAIN && err != EWOULDBLOCK)) {
        fprintf(stderr, "read of a timed-out socket: %zd, errno %d\n", n, err);
        return 1;
    }
    /* contended: the holder keeps the lock 5 ms */
    int locked = 0;
    pthread_t thread;
    pthread_create(&thread, NULL, holder, &locked);
    while (!__atomic_load_n(&locked, __ATOMIC_ACQUIRE))
        raw_sleep_ms(1);
    start = now_ns();
    int rc = pthread_mutex_lock(&held);
    report("pthread_mutex_lock", start, now_ns());
    pthread_mutex_unlock(&held);
    pthread_join(thread, NULL);
    /* uncontended: taken at once, never timed */
    rc |= pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
    printf("errno_ok\n");
    return rc;
}

static void *blocked_reader(void *arg)
{
    char c;
    (void)arg;
    read(pipe_fds[0], &c, 1); /* a cancellation point: never returns */
    return (void *)1;
}

static int run_cancel(void)
{
    if (pipe(pipe_fds) != 0)
        return 1;
    pthread_t thread;
    pthread_create(&thread, NULL, blocked_reader, NULL);
    raw_sleep_ms(20);
    pthread_cancel(thread);
    void *result = NULL;
    pthread_join(thread, &result);
    if (result != PTHREAD_CANCELED) {
        fprintf(stderr, "the reader was not cancelled\n");
        return 1;
    }
    printf("cancelled\n");
    return 0;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        sleep_ms("nanosleep", 1);
    return NULL;
}

static int run_threads(void)
{
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, sleeper, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    return 0;
}

static int run_child(void)
{
    for (int i = 0; i < 4; i++)
        sleep_ms("nanosleep", 1);
    const char *mark = getenv("OSRT_MARK");
    printf("child-env %d %s\n", (int)getpid(), mark ? mark : "-");
    return 0;
}

static volatile int vfork_shared;

/* Writes a page of the stack below its caller: in a vfork child, where a wrapper's frame
 * would have been. */
static __attribute__((noinline)) void clobber_stack(void)
{
    volatile char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)0x5a;
}

static int run_vfork(void)
{
    volatile long canary = 0x1234abcdL;
    fflush(stdout);
    uint64_t start = now_ns();
    pid_t quick = vfork();
    if (quick == 0) {
        vfork_shared = 42; /* the parent's memory */
        clobber_stack();
        _exit(3);
    }
    report("vfork", start, now_ns());
    start = now_ns();
    pid_t execed = vfork();
    if (execed == 0) {
        execl("/nonexistent/lantern", "lantern", (char *)NULL); /* fails: returns */
        execl(self_path, self_path, "child", (char *)NULL);
        _exit(127);
    }
    report("vfork", start, now_ns());
    int status[2] = {-1, -1};
    waitpid(quick, &status[0], 0);
    waitpid(execed, &status[1], 0);
    printf("vforked %d %d %d %d %d %d\n", (int)quick, (int)execed, WEXITSTATUS(status[0]),
           WEXITSTATUS(status[1]), vfork_shared, canary == 0x1234abcdL);
    return !(WEXITSTATUS(status[0]) == 3 && status[1] == 0 && vfork_shared == 42 &&
             canary == 0x1234abcdL);
}

extern char **environ;

static int exec_fails(const char *name, int rc)
{
    int err = errno;
    printf("%s %d %d\n", name, rc, err);
    return !(rc == -1 && err == ENOENT);
}

/* A child running `child` through one of the execl family (which 0 execl, 1 execlp, 2 execle
 * with OSRT_MARK=execle); its pid. */
static pid_t spawn_execl(int which)
{
    static char mark[] = "OSRT_MARK=execle";
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return -1;
    memcpy(env, environ, n * sizeof *env);
    env[n] = mark;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (which == 0)
            execl(self_path, self_path, "child", (char *)NULL);
        else if (which == 1)
            execlp(self_path, self_path, "child", (char *)NULL);
        else
            execle(self_path, self_path, "child", (char *)NULL, env);
        _exit(127);
    }
    free(env);
    return pid;
}

static int run_execl(void)
{
    int bad = 0;
    errno = 0;
    bad |= exec_fails("execl", execl("/nonexistent/lantern", "lantern", "a", (char *)NULL));
    errno = 0;
    bad |= exec_fails("execlp", execlp("lantern-no-such-program", "x", (char *)NULL));
    errno = 0;
    bad |= exec_fails("execle", execle("/nonexistent/lantern", "lantern", (char *)NULL, environ));
    for (int which = 0; which < 3; which++) {
        int status = -1;
        pid_t pid = spawn_execl(which);
        waitpid(pid, &status, 0);
        printf("execl-child %d %d %d\n", which, (int)pid, status);
        bad |= status != 0;
    }
    return bad;
}

static char socket_path[108];

static void *connector(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        raw_sleep_ms(3);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        memcpy(addr.sun_path, socket_path, sizeof addr.sun_path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
            abort();
        close(fd);
    }
    return NULL;
}

static int run_sockets(void)
{
    snprintf(socket_path, sizeof socket_path, "/tmp/lantern-osrt-%d.sock", (int)getpid());
    unlink(socket_path);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, socket_path, sizeof addr.sun_path);
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(listener, 4) != 0)
        return 1;
    pthread_t thread;
    pthread_create(&thread, NULL, connector, NULL);
    uint64_t start = now_ns();
    int a = accept(listener, NULL, NULL);
    report("accept", start, now_ns());
    start = now_ns();
    int b = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    report("accept4", start, now_ns());
    pthread_join(thread, NULL);
    close(a);
    close(b);
    close(listener);
    unlink(socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    errno = 0;
    int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr); /* the path is gone */
    int err = errno;
    close(fd);
    printf("sockets %d %d %d %d\n", a >= 0, b >= 0, rc, err);
    return !(a >= 0 && b >= 0 && rc == -1 && err == ENOENT);
}

static int run_fork(void)
{
    fflush(stdout);
    pid_t quick = fork();
    if (quick == 0) {
        for (int i = 0; i < 3; i++)
            sleep_ms("nanosleep", 1);
        fflush(stdout);
        _exit(0);
    }
    pid_t execed = fork();
    if (execed == 0) {
        char *argv[] = {(char *)self_path, "child", NULL};
        execv(self_path, argv);
        _exit(127);
    }
    int status[2] = {-1, -1};
    waitpid(quick, &status[0], 0);
    waitpid(execed, &status[1], 0);
    printf("children %d %d %d %d\n", (int)quick, (int)execed, status[0], status[1]);
    return status[0] != 0 || status[1] != 0;
}

static int run_closeall(void)
{
    fflush(stdout);
    for (int fd = 0; fd < 4096; fd++)
        close(fd);
    for (int i = 0; i < 5; i++) {
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
    return 0;
}

static const struct {
    const char *name;
    int (*run)(void);
} modes[] = {
    {"counts", run_counts}, {"errors", run_errors},   {"cancel", run_cancel},
    {"threads", run_threads}, {"fork", run_fork},     {"closeall", run_closeall},
    {"child", run_child},   {"vfork", run_vfork},     {"execl", run_execl},
    {"sockets", run_sockets},
};

int main(int argc, char **argv)
{
    self_path = argv[0];
    for (size_t i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(argv[1], modes[i].name))
            return modes[i].run();
    fprintf(stderr, "usage: osrt_workload counts|errors|cancel|threads|fork|closeall|child|vfork|"
                    "execl|sockets\n");
    return 2;
}
