/* A server that is never restarted, for the start/stop tests (test_long_runs.py): it makes
 * one NVTX range "step" (its payload the step's number) with a range "work" inside it about
 * every millisecond, from the main thread and a second thread ("side", payload likewise),
 * until the file argv[1] exists (or it made STEPS steps); then it exits 0. With "fork" the
 * "side" ranges come from a child process (fork, after the main thread's first range: a
 * worker of a server) instead of a thread. With SERVER_WORKLOAD_SPIN=1 in the environment each
 * wait is spent on the CPU, for CPU sampling's samples, instead of asleep.
 * Usage: server_workload STOP_FILE [PERIOD_US [STEPS [fork]]] */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *stop_file;
static long period_us = 1000;
static uint64_t steps; /* 0: until the stop file */
static _Atomic int done;
static int spin; /* SERVER_WORKLOAD_SPIN: waits on the CPU */

static void push_numbered(const char *name, uint64_t n)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = n;
    nvtxRangePushEx(&a);
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pause_us(long us)
{
    if (spin) {
        for (long long until = now_ns() + us * 1000LL; now_ns() < until;)
            ;
        return;
    }
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static void *side(void *arg)
{
    (void)arg;
    for (uint64_t n = 1; !done && access(stop_file, F_OK) != 0; n++) {
        push_numbered("side", n);
        pause_us(period_us);
        nvtxRangePop();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: server_workload STOP_FILE [period_us]\n");
        return 2;
    }
    stop_file = argv[1];
    spin = getenv("SERVER_WORKLOAD_SPIN") != NULL;
    if (argc > 2)
        period_us = atol(argv[2]);
    if (argc > 3)
        steps = strtoull(argv[3], NULL, 10);
    int fork_side = argc > 4 && !strcmp(argv[4], "fork");
    pthread_t t;
    pid_t child = -1;
    nvtxMarkA("started"); /* loads the agent before the fork */
    if (fork_side && (child = fork()) == 0) {
        side(NULL);
        _exit(0);
    }
    if (!fork_side)
        pthread_create(&t, NULL, side, NULL);
    for (uint64_t n = 1; (!steps || n <= steps) && access(stop_file, F_OK) != 0; n++) {
        push_numbered("step", n);
        nvtxRangePushA("work");
        pause_us(period_us);
        nvtxRangePop();
        nvtxRangePop();
    }
    done = 1;
    if (fork_side)
        waitpid(child, NULL, 0);
    else
        pthread_join(t, NULL);
    return 0;
}
