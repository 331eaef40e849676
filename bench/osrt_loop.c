/* The hard case of -t osrt (bench/bench_osrt.py): a tight loop of calls the agent wraps that
 * never block, so the wrapper's cost is all there is to see. Prints its own rate in calls per
 * second of its thread's CPU time (as tests/cpu/cpu_hot.c does: immune to the machine's other
 * load). Modes:
 *   io     read 1 byte from /dev/zero, write 1 byte to /dev/null (two calls a round, ~0.5 us)
 *   mutex  pthread_mutex_lock/unlock of an uncontended mutex (~20 ns: only the lock is wrapped)
 * The program has an idle second thread, as every CUDA or Python-threaded program has, unless
 * `single` is given: a single-threaded program that the agent makes multithreaded (its writer
 * thread) also pays the kernel's dearer system calls of a shared file table (fdget_pos).
 * Usage: osrt_loop io|mutex SECONDS [single] */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || (strcmp(argv[1], "io") && strcmp(argv[1], "mutex")) ||
        (argc == 4 && strcmp(argv[3], "single"))) {
        fprintf(stderr, "usage: osrt_loop io|mutex SECONDS [single]\n");
        return 2;
    }
    pthread_t other;
    if (argc == 3)
        pthread_create(&other, NULL, idle, NULL);
    int io = !strcmp(argv[1], "io");
    double seconds = atof(argv[2]);
    int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    char byte;
    uint64_t calls = 0;
    double start = cpu_seconds(), now = start;
    while (now - start < seconds) {
        for (int i = 0; i < 1000; i++) {
            if (io) {
                if (read(zero, &byte, 1) != 1 || write(null, &byte, 1) != 1)
                    return 1;
            } else {
                pthread_mutex_lock(&mutex);
                pthread_mutex_unlock(&mutex);
            }
        }
        calls += io ? 2000 : 1000;
        now = cpu_seconds();
    }
    printf("calls_per_cpu_s %.1f\n", (double)calls / (now - start));
    return 0;
}
