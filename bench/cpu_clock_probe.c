/* What the kernel's sampling itself costs the sampled thread (docs/benchmarks.md, "CPU
 * sampling"): a busy loop opens a per-thread software cpu-clock event on itself, as the agent
 * does (src/agent/cpu_sampling.c), and times blocks with the event enabled against blocks with
 * it disabled (ioctl), in pairs of alternating order; it reads the ring between blocks. Per
 * configuration it prints the median enabled/disabled ratio and what that is per sample.
 *   cpu_clock_probe [PAIRS] [BLOCK_MS]
 * Configurations: the rate (100, 1000 Hz), callchains or none, the depth of the loop's stack
 * (3 or 40 frames: the user-space walk is one read per frame), and the work: a table loop (few
 * branches, a small code footprint) or a bytecode-style dispatch loop (an indirect jump per
 * step through 64 handlers, as an interpreter's, whose branch predictor state an interrupt can
 * cost). Built with frame pointers. */
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

/* An interpreter's shape: each step jumps through a table of 64 handlers chosen by a
 * pseudo-random "bytecode" of 4096 steps, so the indirect branch is predictable only from
 * its history. */
typedef uint64_t (*handler)(uint64_t);
#define H(n) static uint64_t h##n(uint64_t v) { return v * (2 * n + 1) + n; }
H(0) H(1) H(2) H(3) H(4) H(5) H(6) H(7) H(8) H(9) H(10) H(11) H(12) H(13) H(14) H(15)
H(16) H(17) H(18) H(19) H(20) H(21) H(22) H(23) H(24) H(25) H(26) H(27) H(28) H(29) H(30)
H(31) H(32) H(33) H(34) H(35) H(36) H(37) H(38) H(39) H(40) H(41) H(42) H(43) H(44) H(45)
H(46) H(47) H(48) H(49) H(50) H(51) H(52) H(53) H(54) H(55) H(56) H(57) H(58) H(59) H(60)
H(61) H(62) H(63)
static handler handlers[64] = {
    h0,  h1,  h2,  h3,  h4,  h5,  h6,  h7,  h8,  h9,  h10, h11, h12, h13, h14, h15,
    h16, h17, h18, h19, h20, h21, h22, h23, h24, h25, h26, h27, h28, h29, h30, h31,
    h32, h33, h34, h35, h36, h37, h38, h39, h40, h41, h42, h43, h44, h45, h46, h47,
    h48, h49, h50, h51, h52, h53, h54, h55, h56, h57, h58, h59, h60, h61, h62, h63};
static uint8_t bytecode[4096];

static __attribute__((noinline)) uint64_t dispatch(unsigned depth, uint64_t iterations)
{
    if (depth > 1)
        return dispatch(depth - 1, iterations) + 1;
    uint64_t v = 1;
    for (uint64_t i = 0; i < iterations; i++)
        v = handlers[bytecode[i & 4095]](v);
    return v;
}

static int use_dispatch;

static uint64_t busy(unsigned depth, uint64_t iterations)
{
    return use_dispatch ? dispatch(depth, iterations) : work(depth, iterations);
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
            sink += busy(depth, iterations);
            t[on] = (double)(now_ns() - start);
            if (on && fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
            drain(pg);
        }
        ratios[p] = t[1] / t[0];
    }
    qsort(ratios, (size_t)pairs, sizeof *ratios, cmp_double);
    double med = ratios[pairs / 2];
    printf("%-8s %5u Hz  %-9s depth %2u: enabled/disabled x%.4f (pairs %.4f-%.4f)",
           use_dispatch ? "dispatch" : "table", hz, callchain ? "callchain" : "no chain", depth,
           med, ratios[pairs / 10], ratios[pairs - 1 - pairs / 10]);
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
    uint64_t x = 2463534242u;
    for (size_t i = 0; i < sizeof bytecode; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bytecode[i] = (uint8_t)(x & 63);
    }
    static const struct { unsigned hz; int chain; unsigned depth; } configs[] = {
        {0, 0, 3}, {1000, 0, 3}, {1000, 1, 3}, {1000, 1, 40}, {100, 1, 3}, {0, 0, 3}};
    for (use_dispatch = 0; use_dispatch < 2; use_dispatch++) {
        uint64_t start = now_ns(), calib = 2000000;
        sink += busy(3, calib);
        double ns_per_iteration = (double)(now_ns() - start) / (double)calib;
        uint64_t iterations = (uint64_t)(block_ms * 1e6 / ns_per_iteration);
        printf("blocks of %.0f ms (%llu iterations), %d pairs; medians, 10th-90th percentile\n",
               block_ms, (unsigned long long)iterations, pairs);
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
            probe(configs[i].hz, configs[i].chain, configs[i].depth, pairs, iterations);
    }
    return 0;
}
