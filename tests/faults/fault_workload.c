/* The NVTX program of the fault matrix (test_faults.py), one scenario per argv[1]:
 *   pushes N STATUS   N push/pop pairs named "step" on one thread, then exit(STATUS)
 *   no_message        events whose attributes carry no message (NULL, length 0)
 *   big_name BYTES    one range whose name is BYTES bytes ("é" repeated, then "x")
 *   wait              a range open until SIGTERM, SIGINT or SIGHUP arrives; prints "ready",
 *                     exits 40 + the number of signals received (one expected)
 *   fill FILE STATUS  one range, then fills the disk of FILE with zeros, exit(STATUS)
 *   daemon STATUS PAIRS MS END CODE
 *                     a daemon made before any NVTX call (fork, setsid, fork again), then
 *                     exit(STATUS) at once; the daemon prints its pid, leaves the standard
 *                     streams, sleeps MS ms, makes PAIRS push/pop pairs, and ends as END says:
 *                     exit (exit(CODE)), _exit (_exit(CODE): no exit hooks) or signal
 *                     (raise(CODE)) */
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t signals_received;

static void on_signal(int sig)
{
    (void)sig;
    signals_received++;
}

static int pushes(long n, int status)
{
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("step");
        nvtxRangePop();
    }
    return status;
}

static int no_message(void)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF00FF00u;
    nvtxRangePushEx(&a);
    nvtxRangePop();
    nvtxMarkEx(&a);
    nvtxRangeEnd(nvtxRangeStartEx(&a));
    return 0;
}

static int big_name(size_t bytes)
{
    char *name = malloc(bytes + 1);
    if (!name)
        return 1;
    size_t i = 0;
    for (; i + 2 <= bytes - 1; i += 2)
        memcpy(name + i, "\xc3\xa9", 2); /* é: cutting must not split it */
    memset(name + i, 'x', bytes - i);
    name[bytes] = 0;
    nvtxRangePushA(name);
    nvtxRangePop();
    nvtxRangePushA("after");
    nvtxRangePop();
    free(name);
    return 0;
}

static int wait_for_signal(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    nvtxRangePushA("waiting");
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 3000 && !signals_received; i++) /* at most 30 s */
        usleep(10000);
    usleep(300000); /* a duplicate would arrive meanwhile */
    nvtxRangePop();
    return signals_received ? 40 + signals_received : 1;
}

static int fill(const char *path, int status)
{
    nvtxRangePushA("filling");
    nvtxRangePop();
    static char zeros[65536];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (size_t n = sizeof zeros; n;)
        if (write(fd, zeros, n) < 0)
            n /= 2; /* the disk is full down to the last byte */
    close(fd);
    return status;
}

/* The daemon's life after the double fork (see the top of the file). */
static void daemon_run(long pairs, long ms, const char *end, int code)
{
    printf("%ld\n", (long)getpid());
    fflush(stdout);
    int null_fd = open("/dev/null", O_RDWR);
    for (int fd = 0; fd <= 2; fd++)
        dup2(null_fd, fd); /* the test reading our output sees its end */
    usleep((useconds_t)ms * 1000);
    pushes(pairs, 0);
    if (!strcmp(end, "_exit"))
        _exit(code);
    if (!strcmp(end, "signal"))
        raise(code);
    exit(code);
}

static int daemonize(int status, long pairs, long ms, const char *end, int code)
{
    pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() == 0)
            daemon_run(pairs, ms, end, code);
        _exit(0);
    }
    if (child > 0)
        waitpid(child, NULL, 0);
    return status;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "pushes"))
        return pushes(atol(argv[2]), atoi(argv[3]));
    if (argc >= 2 && !strcmp(argv[1], "no_message"))
        return no_message();
    if (argc >= 3 && !strcmp(argv[1], "big_name"))
        return big_name((size_t)atol(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "wait"))
        return wait_for_signal();
    if (argc >= 4 && !strcmp(argv[1], "fill"))
        return fill(argv[2], atoi(argv[3]));
    if (argc >= 7 && !strcmp(argv[1], "daemon"))
        return daemonize(atoi(argv[2]), atol(argv[3]), atol(argv[4]), argv[5], atoi(argv[6]));
    fprintf(stderr, "usage: fault_workload pushes N STATUS | no_message | big_name BYTES | wait | "
                    "fill FILE STATUS | daemon STATUS PAIRS MS END CODE\n");
    return 2;
}
