/* The NVTX program of the process life-cycle suite (test_lifecycle.py): programs that close
 * every descriptor, exit the main thread first, fork, exec, daemonize, nest deeply, hand
 * ranges between threads or end in every way a process can end. One scenario per argv[1]
 * (usage() lists them); each prints what it made, so the test compares the database with the
 * program's own count, and the program's output and status with a run without lantern. */
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Stops the program, saying which step failed (the test then sees exit status 100). */
static void require(int ok, const char *step)
{
    if (ok)
        return;
    fprintf(stderr, "lifecycle_workload: %s failed\n", step);
    _exit(100);
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void ranges(const char *name, int n, long pause_us)
{
    for (int i = 0; i < n; i++) {
        nvtxRangePushA(name);
        if (pause_us)
            sleep_us(pause_us);
        nvtxRangePop();
    }
}

/* Replaces the process image with this program in its "noop" scenario (no NVTX call). */
static void exec_noop(void)
{
    char *argv[] = {"lifecycle_workload", "noop", NULL};
    execv("/proc/self/exe", argv);
    require(0, "execv");
}

/* ---- row 1: the program closes every descriptor, then opens a file of its own ---- */

static int close_fds(const char *how, const char *path)
{
    ranges("before", 50, 0);
    if (!strcmp(how, "range")) {
        require(syscall(SYS_close_range, 3u, ~0u, 0) == 0, "close_range");
    } else {
        struct rlimit lim;
        require(getrlimit(RLIMIT_NOFILE, &lim) == 0, "getrlimit");
        int max = lim.rlim_cur > (1u << 20) ? 1 << 20 : (int)lim.rlim_cur;
        for (int fd = 3; fd < max; fd++)
            close(fd);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    require(fd >= 0, "open");
    require(write(fd, "user-data", 9) == 9, "write");
    ranges("after", 100, 10000); /* ~1 s */
    require(close(fd) == 0, "close");
    printf("before 50 after 100\n");
    return 0;
}

/* ---- row 2: main() calls pthread_exit while a worker goes on ---- */

static void *late_worker(void *arg)
{
    int n = *(int *)arg;
    sleep_us(200000); /* main has exited by now */
    ranges("worker", n, 1000);
    printf("worker %d\n", n);
    fflush(stdout);
    return NULL;
}

static int main_thread_exits(int n)
{
    static int count;
    count = n;
    ranges("main", 10, 0);
    pthread_t t;
    require(pthread_create(&t, NULL, late_worker, &count) == 0, "pthread_create");
    pthread_exit(NULL);
}

/* ---- row 4 and 11: children that end right after their ranges ---- */

/* The threads of this process (/proc/self/task). */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

struct forker {
    int children, child_ranges, own_ranges;
    int use_exit; /* exit() instead of _exit() */
};

static void *fork_children(void *arg)
{
    const struct forker *f = arg;
    for (int i = 0; i < f->children; i++) {
        pid_t pid = fork();
        require(pid >= 0, "fork");
        if (pid == 0) {
            /* the child has its one thread until it calls NVTX (no thread is made in a fork
             * handler: inside a sanitizer's fork that hangs): status 3 says otherwise */
            if (task_count() != 1)
                _exit(3);
            ranges("child", f->child_ranges, 0);
            if (f->use_exit)
                exit(0);
            _exit(0);
        }
        ranges("parent", f->own_ranges, 0);
        int status;
        require(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child's status");
    }
    return NULL;
}

/* children in all, spread over `threads` threads of the parent (1: the main thread alone) */
static int fork_exit(int children, int child_ranges, int threads, const char *how)
{
    require(threads >= 1 && threads <= 16 && children % threads == 0, "arguments");
    ranges("parent", 10, 0);
    struct forker f = {children / threads, child_ranges, 2, !strcmp(how, "exit")};
    pthread_t t[16];
    for (int i = 1; i < threads; i++)
        require(pthread_create(&t[i], NULL, fork_children, &f) == 0, "pthread_create");
    fork_children(&f);
    for (int i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("children %d child %d parent %d\n", children, children * child_ranges,
           10 + 2 * children);
    return 0;
}

/* ---- row 6: exec from a thread that is not main (or from main) ---- */

static void *exec_after_ranges(void *arg)
{
    ranges("pre-exec", *(int *)arg, 0);
    exec_noop();
    return NULL;
}

static int thread_exec(int n, const char *who)
{
    static int count;
    count = n;
    printf("pre-exec %d\n", n);
    fflush(stdout);
    if (!strcmp(who, "main"))
        exec_after_ranges(&count);
    pthread_t t;
    require(pthread_create(&t, NULL, exec_after_ranges, &count) == 0, "pthread_create");
    for (;;)
        pause(); /* the exec ends this thread */
    return 0;    /* not reached */
}

/* ---- row 7: a daemon that makes its first NVTX call after the program has exited ---- */

static int daemonize(int n, const char *pidfile)
{
    pid_t middle = fork();
    require(middle >= 0, "fork");
    if (middle > 0) {
        int status;
        require(waitpid(middle, &status, 0) == middle, "waitpid");
        printf("daemon started\n");
        return 0;
    }
    require(setsid() > 0, "setsid");
    pid_t daemon = fork();
    require(daemon >= 0, "fork (daemon)");
    if (daemon > 0)
        _exit(0);
    int null = open("/dev/null", O_RDWR);
    require(null >= 0, "open /dev/null");
    dup2(null, 0), dup2(null, 1), dup2(null, 2);
    close(null);
    FILE *f = fopen(pidfile, "w");
    require(f != NULL, "fopen pidfile");
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    sleep_us(300000);               /* the program has exited and the launcher has seen it */
    ranges("daemon-work", n, 2500); /* ~1 s for 400 */
    return 0;
}

/* ---- row 8: ranges started on one thread and ended on another ---- */

struct handoff {
    nvtxRangeId_t id;
    long sleep_us;
    int start_here; /* the thread starts the range, main ends it; else the reverse */
};

static void *handoff_thread(void *arg)
{
    struct handoff *h = arg;
    if (h->start_here) {
        h->id = nvtxRangeStartA("handoff");
        sleep_us(h->sleep_us);
    } else {
        sleep_us(h->sleep_us);
        nvtxRangeEnd(h->id);
    }
    return NULL;
}

static int cross_thread(int n, long sleep_ms)
{
    for (int i = 0; i < n; i++) {
        struct handoff h = {0, sleep_ms * 1000, i % 2};
        if (!h.start_here)
            h.id = nvtxRangeStartA("handoff");
        pthread_t t;
        require(pthread_create(&t, NULL, handoff_thread, &h) == 0, "pthread_create");
        pthread_join(t, NULL);
        if (h.start_here)
            nvtxRangeEnd(h.id);
    }
    printf("handoff %d\n", n);
    return 0;
}

/* ---- row 10: nesting deeper than any fixed stack ---- */

static int deep(int depth)
{
    for (int i = 0; i < depth; i++)
        nvtxRangePushA("deep");
    for (int i = 0; i < depth; i++)
        nvtxRangePop();
    printf("deep %d\n", depth);
    return 0;
}

/* ---- row 14: threads x fork x the way the process ends ---- */

static int matrix_ranges;
static pthread_barrier_t matrix_done;

static void *matrix_worker(void *arg)
{
    (void)arg;
    ranges("work", matrix_ranges, 0);
    pthread_barrier_wait(&matrix_done);
    for (;;)
        pause(); /* alive when the process ends */
    return NULL; /* not reached */
}

static void matrix_end(const char *end)
{
    fflush(stdout);
    if (!strcmp(end, "return") || !strcmp(end, "exit"))
        exit(0);
    if (!strcmp(end, "_exit"))
        _exit(0);
    if (!strcmp(end, "exec"))
        exec_noop();
    if (!strcmp(end, "sigkill"))
        raise(SIGKILL);
    if (!strcmp(end, "sigsegv")) {
        int *volatile wild = (int *)(uintptr_t)8; /* a real fault, not raise() */
        *wild = 1;
    }
    if (!strcmp(end, "sigabrt"))
        abort();
    if (!strcmp(end, "sigterm"))
        raise(SIGTERM);
    require(0, "the end named");
}

/* threads threads (main among them) make `n` ranges "work" each, then main ends the process
 * with `end` while the others are alive */
static int matrix_process(int threads, int n, const char *end)
{
    matrix_ranges = n;
    require(threads >= 1 && threads <= 16, "threads");
    pthread_barrier_init(&matrix_done, NULL, (unsigned)threads);
    pthread_t t[16];
    for (int i = 1; i < threads; i++)
        require(pthread_create(&t[i], NULL, matrix_worker, NULL) == 0, "pthread_create");
    ranges("work", n, 0);
    pthread_barrier_wait(&matrix_done);
    printf("%d work ranges, ending: %s\n", threads * n, end);
    if (!strcmp(end, "return"))
        return 0;
    matrix_end(end);
    return 100;
}

/* fork "child": the parent makes its ranges "pre-fork", forks a child that does the
 * scenario, waits for it, then does the scenario itself */
static int matrix(int threads, const char *fork_mode, const char *end, int n)
{
    if (!strcmp(fork_mode, "child")) {
        ranges("pre-fork", n, 0);
        fflush(stdout);
        pid_t pid = fork();
        require(pid >= 0, "fork");
        if (pid == 0)
            return matrix_process(threads, n, end);
        int status;
        require(waitpid(pid, &status, 0) == pid, "waitpid");
        printf("child: %s %d\n", WIFSIGNALED(status) ? "signal" : "status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    return matrix_process(threads, n, end);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: lifecycle_workload SCENARIO ...\n"
            "  noop                              prints 'noop', no NVTX call\n"
            "  named NAME N PAUSE_US             N ranges NAME, each PAUSE_US long\n"
            "  close_fds range|loop FILE         50 ranges, closes fds >= 3, writes 9 bytes\n"
            "                                    to FILE while making 100 ranges over ~1 s\n"
            "  main_thread_exits N               main pthread_exits; a worker makes N ranges\n"
            "  fork_exit CHILDREN N THREADS _exit|exit  children of N ranges each\n"
            "  thread_exec N thread|main         N ranges, then that thread execs noop\n"
            "  daemonize N PIDFILE               a daemon's first NVTX call: N ranges\n"
            "  cross_thread N SLEEP_MS           N start/end ranges ended on another thread\n"
            "  deep DEPTH                        DEPTH nested push, then DEPTH pops\n"
            "  matrix THREADS none|child END N   END: return exit _exit exec sigkill sigsegv\n"
            "                                    sigabrt sigterm\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "noop") && argc == 2)
        return printf("noop\n") < 0;
    if (!strcmp(s, "named") && argc == 5) {
        ranges(argv[2], atoi(argv[3]), atol(argv[4]));
        printf("%s %d\n", argv[2], atoi(argv[3]));
        return 0;
    }
    if (!strcmp(s, "close_fds") && argc == 4)
        return close_fds(argv[2], argv[3]);
    if (!strcmp(s, "main_thread_exits") && argc == 3)
        return main_thread_exits(atoi(argv[2]));
    if (!strcmp(s, "fork_exit") && argc == 6)
        return fork_exit(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (!strcmp(s, "thread_exec") && argc == 4)
        return thread_exec(atoi(argv[2]), argv[3]);
    if (!strcmp(s, "daemonize") && argc == 4)
        return daemonize(atoi(argv[2]), argv[3]);
    if (!strcmp(s, "cross_thread") && argc == 4)
        return cross_thread(atoi(argv[2]), atol(argv[3]));
    if (!strcmp(s, "deep") && argc == 3)
        return deep(atoi(argv[2]));
    if (!strcmp(s, "matrix") && argc == 6)
        return matrix(atoi(argv[2]), argv[3], argv[4], atoi(argv[5]));
    return usage();
}
