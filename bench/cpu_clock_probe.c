/* What the kernel's sampling itself costs the sampled thread (docs/benchmarks.md, "CPU
 * sampling"): a busy loop opens a per-thread software cpu-clock event on itself, as the agent
 * does (src/agent/cpu_sampling.c), and times blocks with the event enabled against blocks with
 * it disabled (ioctl), in pairs of alternating order; it reads the ring between blocks. Per
 * configuration it prints the median enabled/disabled ratio and what that is per sample.
 *   cpu_clock_probe [PAIRS] [BLOCK_MS]
 * Configurations: the rate (100, 1000 Hz), callchains or none, and the depth of the loop's
 * stack (3 or 40 frames: the user-space walk is one read per frame). Built with frame pointers. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_PAGES 64u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;
static uint32_t table[1u << 18]; /* 1 MiB: lookups that miss L1/L2 as an interpreter's do */

/* Busy work for about `ns` at `depth` frames below the caller. */
static __attribute__((noinline)) uint64_t work(unsigned depth, uint64_t iterations)
{
    if (depth > 1)
        return work(depth - 1, iterations) + 1;
    uint64_t x = 88172645463325252ull, acc = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc += table[x & ((1u << 18) - 1)]++;
    }
    return acc;
}

static void drain(struct perf_event_mmap_page *pg)
{
    if (pg)
        __atomic_store_n(&pg->data_tail, __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One configuration: hz 0 is the A/A run (no event). */
static void probe(unsigned hz, int callchain, unsigned depth, int pairs, uint64_t iterations)
{
    struct perf_event_attr attr = {
        .size = sizeof attr,
        .type = PERF_TYPE_SOFTWARE,
        .config = PERF_COUNT_SW_CPU_CLOCK,
        .sample_period = hz ? 1000000000u / hz : 1000000u,
        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | (callchain ? PERF_SAMPLE_CALLCHAIN : 0),
        .disabled = 1,
        .exclude_kernel = 1,
        .exclude_hv = 1,
        .exclude_callchain_kernel = 1,
        .use_clockid = 1,
        .clockid = CLOCK_MONOTONIC,
        .wakeup_events = 1u << 30,
    };
    int fd = -1;
    struct perf_event_mmap_page *pg = NULL;
    if (hz) {
        fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
        if (fd < 0) {
            perror("perf_event_open");
            return;
        }
        void *map = mmap(NULL, (RING_PAGES + 1) * (size_t)getpagesize(), PROT_READ | PROT_WRITE,
                         MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            perror("mmap");
            close(fd);
            return;
        }
        pg = map;
    }
    double *ratios = calloc((size_t)pairs, sizeof *ratios);
    for (int p = 0; p < pairs; p++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int on = (p % 2 == 0) == (k == 0);
            if (on && fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
            uint64_t start = now_ns();
            sink += work(depth, iterations);
            t[on] = (double)(now_ns() - start);
            if (on && fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
            drain(pg);
        }
        ratios[p] = t[1] / t[0];
    }
    qsort(ratios, (size_t)pairs, sizeof *ratios, cmp_double);
    double med = ratios[pairs / 2];
    printf("%5u Hz  %-9s depth %2u: enabled/disabled x%.4f (pairs %.4f-%.4f)", hz,
           callchain ? "callchain" : "no chain", depth, med, ratios[pairs / 10],
           ratios[pairs - 1 - pairs / 10]);
    if (hz)
        printf("  = %.2f us per sample", (med - 1) * 1e6 / hz);
    printf("\n");
    fflush(stdout);
    free(ratios);
    if (pg)
        munmap(pg, (RING_PAGES + 1) * (size_t)getpagesize());
    if (fd >= 0)
        close(fd);
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 60;
    double block_ms = argc > 2 ? atof(argv[2]) : 20;
    uint64_t start = now_ns(), calib = 2000000;
    sink += work(3, calib);
    double ns_per_iteration = (double)(now_ns() - start) / (double)calib;
    uint64_t iterations = (uint64_t)(block_ms * 1e6 / ns_per_iteration);
    printf("blocks of %.0f ms (%llu iterations), %d pairs; medians, 10th-90th percentile\n",
           block_ms, (unsigned long long)iterations, pairs);
    static const struct { unsigned hz; int chain; unsigned depth; } configs[] = {
        {0, 0, 3}, {1000, 0, 3}, {1000, 1, 3}, {1000, 1, 40}, {100, 1, 3}, {0, 0, 3}};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        probe(configs[i].hz, configs[i].chain, configs[i].depth, pairs, iterations);
    return 0;
}
