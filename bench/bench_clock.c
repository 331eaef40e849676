/* What a timestamp costs on this CPU, the floor under the NVTX hot path (two per push/pop
 * pair): rdtsc, rdtscp, clock_gettime(CLOCK_MONOTONIC) (the vDSO) and CLOCK_MONOTONIC_COARSE,
 * each back to back in a tight loop (throughput, as the hot path pays it), in alternating
 * rounds; prints the median ns per read of each. Usage: bench_clock [rounds (21)] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define READS 2000000u

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

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
    static const char *names[] = {"rdtsc", "rdtscp", "clock_gettime MONOTONIC",
                                  "clock_gettime MONOTONIC_COARSE"};
    double *v[4];
    for (int k = 0; k < 4; k++)
        v[k] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 4; k++)
            v[k][r] = per_read(k);
    printf("bench_clock: %d alternating rounds of %u reads each\n", rounds, READS);
    for (int k = 0; k < 4; k++) {
        qsort(v[k], (size_t)rounds, sizeof(double), compare);
        printf("  %-32s median %6.2f ns/read  (min %.2f, max %.2f)\n", names[k], v[k][rounds / 2],
               v[k][0], v[k][rounds - 1]);
    }
    return 0;
}
