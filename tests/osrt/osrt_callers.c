/* The callers of long OS runtime calls, for test_osrt_backtrace.py (built with frame pointers):
 * main -> slow_reader -> read_block -> wait_for_data makes a 2 ms nanosleep and a read that
 * waits 2 ms for a writer thread; quick_call makes short ones (100 us). Modes: "callers" (that
 * once, then the short ones), "fork" (the same in a fork child, then in the parent), "signal"
 * (a SIGALRM handler that sleeps 2 ms, delivered while main blocks in a read, on the thread's
 * stack and then on a signal stack). Prints "done" at its end. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int pipe_fds[2];

/* inlined: the caller of nanosleep is the function that sleeps */
static inline __attribute__((always_inline)) void sleep_ns(long ns)
{
    struct timespec t = {0, ns};
    nanosleep(&t, NULL);
}

static void *late_writer(void *arg)
{
    (void)arg;
    sleep_ns(2000000);
    if (write(pipe_fds[1], "x", 1) != 1)
        abort();
    return NULL;
}

NOINLINE static void wait_for_data(void)
{
    sleep_ns(2000000);
    pthread_t writer;
    pthread_create(&writer, NULL, late_writer, NULL);
    char c;
    if (read(pipe_fds[0], &c, 1) != 1)
        abort();
    pthread_join(writer, NULL);
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
}

NOINLINE static void read_block(void)
{
    wait_for_data();
    __asm__ volatile("" ::: "memory");
}

NOINLINE void slow_reader(void)
{
    read_block();
    __asm__ volatile("" ::: "memory");
}

NOINLINE void quick_call(void)
{
    for (int i = 0; i < 5; i++)
        sleep_ns(100000);
    __asm__ volatile("" ::: "memory");
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    struct timespec t = {0, 2000000};
    nanosleep(&t, NULL); /* async-signal-safe; wrapped */
    alarms++;
}

/* SIGALRM after 1 ms while main blocks in a read (its writer thread ends it 2 ms in), handled
 * by main: the writer thread starts with the signal blocked. Returns once it was handled. */
static void alarm_during_read(void)
{
    struct itimerval once = {{0, 0}, {0, 1000}};
    sigset_t alarm_only, before;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm_only, &before);
    pthread_t writer;
    pthread_create(&writer, NULL, late_writer, NULL);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    sig_atomic_t seen = alarms;
    setitimer(ITIMER_REAL, &once, NULL);
    char c;
    while (read(pipe_fds[0], &c, 1) != 1)
        ; /* EINTR: the handler ran */
    pthread_join(writer, NULL);
    while (alarms == seen) /* a loaded machine may deliver it after the read */
        sleep_ns(100000);
}

static void signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm_during_read();
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    sigaltstack(&ss, NULL);
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGALRM, &sa, NULL);
    alarm_during_read();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "callers";
    if (pipe(pipe_fds) != 0)
        return 1;
    if (strcmp(mode, "signal") == 0) {
        signals();
    } else if (strcmp(mode, "fork") == 0) {
        pid_t child = fork();
        slow_reader();
        if (child == 0)
            _exit(0);
        waitpid(child, NULL, 0);
    } else {
        slow_reader();
        quick_call();
    }
    printf("done\n");
    return 0;
}
