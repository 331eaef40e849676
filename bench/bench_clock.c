/* What a timestamp costs on this CPU, the floor under the NVTX hot path (two per push/pop
 * pair): rdtsc, rdtscp, clock_gettime(CLOCK_MONOTONIC) (the vDSO) and CLOCK_MONOTONIC_COARSE,
 * each back to back in a tight loop (throughput, as the hot path pays it); then the hot path's
 * skeleton, a push and a pop encoded as the agent encodes them (trace/events.h) into a 32 KiB
 * block with a release store each, once with rdtsc and once with no clock at all, which splits
 * an NVTX pair's cost into clock and the rest. Alternating rounds; prints medians.
 * Usage: bench_clock [rounds (21)] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "trace/events.h"

#define READS 2000000u
#define CLOCKS 4

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static uint8_t block[32768];
static _Atomic uint64_t head;

/* A push (op, tick delta, depth, name) and a pop (op, tick delta, depth) per iteration. */
static double per_pair(int with_clock)
{
    uint64_t last = 0, fake = 0, start = mono_ns();
    uint32_t pos = 0;
    for (unsigned i = 0; i < READS; i++) {
        for (int pop = 0; pop < 2; pop++) {
#if defined(__x86_64__) || defined(__i386__)
            uint64_t t = with_clock ? __rdtsc() : (fake += 37);
#else
            uint64_t t = fake += 37;
            (void)with_clock;
#endif
            if (pos + TRACE_EV_MAX_FIXED > sizeof block)
                pos = 0;
            uint8_t *p = block + pos;
            *p++ = pop ? TRACE_EV_POP : TRACE_EV_PUSH;
            p = trace_ev_i(p, (int64_t)(t - last));
            p = trace_ev_u(p, 0);
            if (!pop)
                p = trace_ev_u(p, 3);
            last = t;
            pos = (uint32_t)(p - block);
            __atomic_store_n(&head, pos, __ATOMIC_RELEASE);
        }
    }
    sink = last;
    return (double)(mono_ns() - start) / READS;
}

static double per_read(int which)
{
    uint64_t acc = 0, start = mono_ns();
    struct timespec ts;
    unsigned aux;
    for (unsigned i = 0; i < READS; i++) {
        switch (which) {
#if defined(__x86_64__) || defined(__i386__)
        case 0:
            acc += __rdtsc();
            break;
        case 1:
            acc += __rdtscp(&aux);
            break;
#endif
        case 2:
            clock_gettime(CLOCK_MONOTONIC, &ts);
            acc += (uint64_t)ts.tv_nsec;
            break;
        default:
            clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
            acc += (uint64_t)ts.tv_nsec;
            break;
        }
    }
    sink = acc;
    (void)aux;
    return (double)(mono_ns() - start) / READS;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 21;
    static const char *names[] = {"rdtsc",
                                  "rdtscp",
                                  "clock_gettime MONOTONIC",
                                  "clock_gettime MONOTONIC_COARSE",
                                  "skeleton push+pop, rdtsc",
                                  "skeleton push+pop, no clock"};
    double *v[CLOCKS + 2];
    for (int k = 0; k < CLOCKS + 2; k++)
        v[k] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < CLOCKS + 2; k++)
            v[k][r] = k < CLOCKS ? per_read(k) : per_pair(k == CLOCKS);
    printf("bench_clock: %d alternating rounds of %u reads (or pairs) each\n", rounds, READS);
    for (int k = 0; k < CLOCKS + 2; k++) {
        qsort(v[k], (size_t)rounds, sizeof(double), compare);
        printf("  %-32s median %6.2f ns/%s  (min %.2f, max %.2f)\n", names[k], v[k][rounds / 2],
               k < CLOCKS ? "read" : "pair", v[k][0], v[k][rounds - 1]);
    }
    return 0;
}
