/* Where a program's main thread spends its CPU time, by shared object: an LD_PRELOAD library
 * that samples the main thread's instruction pointer on SIGPROF and, at exit, writes how many
 * samples fell in each executable mapping to $SAMPLER_OUT (default stderr). For the GPU
 * machine, which has no perf: docs/benchmark-history.md, "Fourth session".
 *   gcc -O2 -shared -fPIC -o libsampler.so sampler.c */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_SAMPLES (1u << 21)
#define MAX_MAPPINGS 4096
#define PERIOD_US 200

static unsigned long samples[MAX_SAMPLES];
static unsigned long sample_count;
static pid_t main_thread;

static void on_sigprof(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    if ((pid_t)syscall(SYS_gettid) != main_thread)
        return;
    unsigned long i = __atomic_fetch_add(&sample_count, 1, __ATOMIC_RELAXED);
    if (i < MAX_SAMPLES)
        samples[i] = (unsigned long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
}

__attribute__((constructor)) static void sampler_start(void)
{
    main_thread = getpid();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigprof;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &action, NULL);
    struct itimerval every = {{0, PERIOD_US}, {0, PERIOD_US}};
    setitimer(ITIMER_PROF, &every, NULL);
}

struct mapping {
    unsigned long low, high, count;
    char name[256];
};

__attribute__((destructor)) static void sampler_report(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    static struct mapping maps[MAX_MAPPINGS];
    int n = 0;
    char line[512];
    FILE *in = fopen("/proc/self/maps", "r");
    while (in && n < MAX_MAPPINGS && fgets(line, sizeof line, in)) {
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &maps[n].low, &maps[n].high, perms,
                   path) >= 3 &&
            strchr(perms, 'x')) {
            const char *base = strrchr(path, '/');
            snprintf(maps[n].name, sizeof maps[n].name, "%s",
                     base ? base + 1 : path[0] ? path : "[anonymous]");
            maps[n++].count = 0;
        }
    }
    if (in)
        fclose(in);
    unsigned long total = sample_count < MAX_SAMPLES ? sample_count : MAX_SAMPLES, unmapped = 0;
    for (unsigned long i = 0; i < total; i++) {
        int j = 0;
        while (j < n && !(samples[i] >= maps[j].low && samples[i] < maps[j].high))
            j++;
        if (j < n)
            maps[j].count++;
        else
            unmapped++;
    }
    const char *path = getenv("SAMPLER_OUT");
    FILE *out = path ? fopen(path, "w") : stderr;
    if (!out)
        return;
    fprintf(out, "%lu samples, %lu outside any mapping\n", total, unmapped);
    for (int j = 0; j < n; j++)
        if (maps[j].count)
            fprintf(out, "%8lu %5.1f%% %s\n", maps[j].count, 100.0 * maps[j].count / total,
                    maps[j].name);
    if (out != stderr)
        fclose(out);
}
