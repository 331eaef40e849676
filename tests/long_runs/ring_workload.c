/* A program for the flight-recorder tests (test_ring.py): it makes one NVTX range "step" (its
 * payload the step's number) every PERIOD_US microseconds and logs each step's number and its
 * CLOCK_MONOTONIC start to LOG (the ground truth the dumps are checked against), until the file
 * STOP exists. MODE: "steps" (only that), "spin" (each step busy on the CPU in spin_step
 * instead of asleep: CPU samples; each log line also gets the thread's CPU time at the step's
 * start, CLOCK_THREAD_CPUTIME_ID: what the samples must account for), "mark:K" (an NVTX mark "slow" at step K, a
 * --ring-trigger), "crash:K" (a SIGSEGV at step K), "rotation-crash:K:D" (from step K on, it
 * watches its segment files: a SIGSEGV D steps after the writer began a new one),
 * "names:N" (N ranges, each named by a new
 * nvtxDomainRegisterString, no pause; LOG gets the process's RssAnon in KiB after 40 % of them
 * and at the end: the agent's tables must stop growing at their cap), "named" (steps, after
 * naming its thread "ring-main", the CUDA stream 0x5000 "copy-stream" and an NVTX resource at
 * its start: a dump long after must still have the names), "streams:N" (N CUDA stream
 * handles 1..N each named "stream I", then exit: the table of names is capped), or
 * "threads:N" (N threads one after the other, each naming itself "request I" and ending: a
 * server's thread per request, named past the cap).
 * Usage: ring_workload LOG STOP PERIOD_US MODE */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static long rss_anon_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "RssAnon:", 8))
            kib = atol(line + 8);
    if (f)
        fclose(f);
    return kib;
}

/* The number of this process's newest segment file (--ring: "<pid>-<start_ns>.<n>.lrs" in
 * $LANTERN_SESSION_DIR), 0 when none. */
static long newest_segment(void)
{
    const char *dir = getenv("LANTERN_SESSION_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    char prefix[32];
    int prefix_len = snprintf(prefix, sizeof prefix, "%d-", (int)getpid());
    long newest = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        const char *dot = strchr(e->d_name, '.');
        if (!strncmp(e->d_name, prefix, (size_t)prefix_len) && dot && len > 4 &&
            !strcmp(e->d_name + len - 4, ".lrs") && atol(dot + 1) > newest)
            newest = atol(dot + 1);
    }
    if (d)
        closedir(d);
    return newest;
}

/* "rotation-crash:K:D": the step to crash at, once a segment newer than the one of step K
 * exists (-1 until then). */
struct rotation_crash {
    long watch_from, delay, segment, crash_at;
};

static void rotation_crash_step(struct rotation_crash *r, long n)
{
    if (r->watch_from < 0 || r->crash_at >= 0 || n < r->watch_from)
        return;
    long newest = newest_segment();
    if (n == r->watch_from)
        r->segment = newest;
    else if (newest > r->segment)
        r->crash_at = n + r->delay;
}

static volatile double spin_sink;

/* The CPU samples' leaf in "spin" mode (test_ring.py looks for its name): arithmetic, the
 * clock read (vDSO) only every ~10 us. */
__attribute__((noinline)) void spin_step(long period_us)
{
    uint64_t until = now_ns() + (uint64_t)period_us * 1000u;
    while (now_ns() < until)
        for (int i = 0; i < 10000; i++)
            spin_sink += i * 0.5;
}

static void names(FILE *log, long n)
{
    nvtxDomainHandle_t domain = nvtxDomainCreateA("ring");
    for (long i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "range number %ld of this run", i);
        nvtxEventAttributes_t a = {0};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = nvtxDomainRegisterStringA(domain, name);
        nvtxDomainRangePushEx(domain, &a);
        nvtxDomainRangePop(domain);
        if (i == n * 2 / 5)
            fprintf(log, "rss %ld\n", rss_anon_kib());
    }
    fprintf(log, "rss %ld\n", rss_anon_kib());
}

static void name_things(void)
{
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "ring-main");
    nvtxNameCudaStreamA((cudaStream_t)(uintptr_t)0x5000, "copy-stream");
    nvtxResourceAttributes_t r = {0};
    r.version = NVTX_VERSION;
    r.size = NVTX_RESOURCE_ATTRIB_STRUCT_SIZE;
    r.identifierType = NVTX_RESOURCE_TYPE_GENERIC_HANDLE;
    r.identifier.ullValue = 77;
    r.messageType = NVTX_MESSAGE_TYPE_ASCII;
    r.message.ascii = "pool-77";
    nvtxDomainResourceCreate(nvtxDomainCreateA("ring"), &r);
}

static void name_streams(long n)
{
    for (long i = 1; i <= n; i++) {
        char name[64];
        snprintf(name, sizeof name, "stream %ld", i);
        nvtxNameCudaStreamA((cudaStream_t)(uintptr_t)i, name);
    }
}

static void *request_thread(void *arg)
{
    char name[64];
    snprintf(name, sizeof name, "request %ld", (long)(intptr_t)arg);
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
    return NULL;
}

static int name_threads(long n)
{
    for (long i = 1; i <= n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, request_thread, (void *)(intptr_t)i) != 0 ||
            pthread_join(t, NULL) != 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ring_workload LOG STOP PERIOD_US MODE\n");
        return 2;
    }
    FILE *log = fopen(argv[1], "w");
    if (!log)
        return 1;
    setvbuf(log, NULL, _IOLBF, 0);
    long period_us = atol(argv[3]);
    const char *mode = argv[4];
    long mark_at = !strncmp(mode, "mark:", 5) ? atol(mode + 5) : -1;
    long crash_at = !strncmp(mode, "crash:", 6) ? atol(mode + 6) : -1;
    struct rotation_crash rotation = {-1, 0, 0, -1};
    if (!strncmp(mode, "rotation-crash:", 15)) {
        char *end;
        rotation.watch_from = strtol(mode + 15, &end, 10);
        rotation.delay = *end == ':' ? atol(end + 1) : 0;
    }
    int spin = !strcmp(mode, "spin");
    if (!strncmp(mode, "names:", 6)) {
        names(log, atol(mode + 6));
        return 0;
    }
    if (!strncmp(mode, "streams:", 8)) {
        name_streams(atol(mode + 8));
        fprintf(log, "done\n");
        return 0;
    }
    if (!strncmp(mode, "threads:", 8)) {
        int rc = name_threads(atol(mode + 8));
        fprintf(log, "done\n");
        return rc;
    }
    if (!strcmp(mode, "named"))
        name_things();
    struct timespec pause = {period_us / 1000000, (period_us % 1000000) * 1000};
    for (uint64_t n = 1; access(argv[2], F_OK) != 0; n++) {
        uint64_t start_ns = now_ns();
        if (spin)
            fprintf(log, "%llu %llu %llu\n", (unsigned long long)n, (unsigned long long)start_ns,
                    (unsigned long long)clock_ns(CLOCK_THREAD_CPUTIME_ID));
        else
            fprintf(log, "%llu %llu\n", (unsigned long long)n, (unsigned long long)start_ns);
        nvtxEventAttributes_t a = {0};
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "step";
        a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        a.payload.ullValue = n;
        nvtxRangePushEx(&a);
        if ((long)n == mark_at)
            nvtxMarkA("slow");
        rotation_crash_step(&rotation, (long)n);
        /* a store into a page it may not write: SIGSEGV */
        if ((long)n == crash_at || (long)n == rotation.crash_at) {
            volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            *page = 1;
        }
        if (spin)
            spin_step(period_us);
        else
            nanosleep(&pause, NULL);
        nvtxRangePop();
    }
    return 0;
}
