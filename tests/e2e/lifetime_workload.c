/* NVTX programs whose processes end in ways that lose events unless Lantern takes care: a
 * daemon grandchild that records after the program has exited, and a program killed with
 * SIGKILL while it records. One scenario per argv[1]; what only the program knows (the
 * times it measured) goes to the file argv[2]. Run by test_lifetime.py under lantern. */
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Stops the program, saying which step failed (the test then sees exit status 1). */
static void require(int ok, const char *step)
{
    if (ok)
        return;
    fprintf(stderr, "lifetime_workload: %s failed\n", step);
    _exit(1);
}

static uint64_t mono_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The threads of this process (/proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* The program loads the agent (a mark), then starts a daemon the classic way (fork, setsid,
 * fork; the middle process exits and the program reaps it) and exits once the daemon has
 * started. The daemon waits
 * for the program's end, then does `pairs` push/pop pairs 2.5 ms apart (~1 s for 400).
 * The middle process and the daemon each have one thread as their fork returns: the agent
 * starts a fork child's writer thread later, never inside fork (a thread made in an atfork
 * handler can hang: a sanitizer's lock held in the parent at fork is held for good in the child). */
static void scenario_daemon(int pairs)
{
    nvtxMarkA("program");
    int ready[2], gone[2];
    require(pipe(ready) == 0 && pipe(gone) == 0, "pipe");
    pid_t middle = fork();
    require(middle >= 0, "fork");
    if (middle == 0) {
        require(thread_count() == 1, "one thread in the middle process after fork");
        require(setsid() > 0, "setsid");
        pid_t daemon = fork();
        require(daemon >= 0, "fork (daemon)");
        if (daemon > 0)
            _exit(0);
        require(thread_count() == 1, "one thread in the daemon after fork");
        close(ready[0]);
        close(gone[1]);
        /* its raw file exists now: the agent made it at fork */
        require(write(ready[1], "r", 1) == 1, "write (ready)");
        close(ready[1]);
        char c;
        while (read(gone[0], &c, 1) > 0) /* EOF: the program has exited */
            ;
        for (int i = 0; i < pairs; i++) {
            nvtxRangePushA("daemon-work");
            nvtxRangePop();
            usleep(2500);
        }
        exit(0);
    }
    close(ready[1]);
    close(gone[0]);
    char c;
    require(read(ready[0], &c, 1) == 1, "read (ready)");
    require(waitpid(middle, NULL, 0) == middle, "waitpid (middle)"); /* as daemon(3) users do */
    exit(0); /* gone[1] closes with it */
}

/* Run-queue delay (ns) of the process's threads but the calling one, from
 * /proc/self/task/<tid>/schedstat's second field: the time the agent's writer thread was
 * ready to run but had no CPU. */
static uint64_t other_threads_run_delay(void)
{
    DIR *d = opendir("/proc/self/task");
    uint64_t total = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || atol(e->d_name) == (long)getpid())
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long run, wait;
        if (f && fscanf(f, "%llu %llu", &run, &wait) == 2)
            total += wait;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return total;
}

/* A push/pop pair every 1 ms for 1 s, each pair's end time written to argv[2] ("end NS"),
 * then the time of the kill and how long the writer waited for a CPU meanwhile ("kill NS
 * WAIT_NS"), then SIGKILL: no exit handler runs. */
static void scenario_ticks_then_kill(const char *out_path)
{
    FILE *out = fopen(out_path, "w");
    require(out != NULL, "fopen");
    nvtxMarkA("start"); /* loads the agent and starts its writer thread */
    uint64_t delay_before = other_threads_run_delay();
    for (int i = 0; i < 1000; i++) {
        nvtxRangePushA("tick");
        nvtxRangePop();
        fprintf(out, "end %llu\n", (unsigned long long)mono_ns());
        usleep(1000);
    }
    uint64_t delay = other_threads_run_delay() - delay_before;
    fprintf(out, "kill %llu %llu\n", (unsigned long long)mono_ns(), (unsigned long long)delay);
    require(fclose(out) == 0, "fclose");
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "daemon"))
        scenario_daemon(atoi(argv[2]));
    else if (argc == 3 && !strcmp(argv[1], "ticks_then_kill"))
        scenario_ticks_then_kill(argv[2]);
    fprintf(stderr, "usage: lifetime_workload daemon PAIRS | ticks_then_kill OUT\n");
    return 2;
}
