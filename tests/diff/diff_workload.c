/* The program `lantern diff`'s tests profile: INSTANCES times, an NVTX range "step" that
 * sleeps STEP_MS and a range "steady" that sleeps STEADY_MS, each with uniform jitter of
 * +-JITTER % (default 10) drawn from a seed of the process's own (its pid and the clock), so
 * that two runs differ as two real runs do. Prints each "step" range's length as the program
 * measured it (CLOCK_MONOTONIC around its sleep, inside the range, ns, one per line): the
 * truth the tests hold the diff to, whatever a loaded machine does to the sleeps.
 * Usage: diff_workload STEP_MS STEADY_MS INSTANCES [JITTER_PERCENT] */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void sleep_jittered(double ms, double jitter, unsigned *seed)
{
    double u = (double)rand_r(seed) / RAND_MAX; /* [0, 1] */
    double ns = ms * 1e6 * (1 + jitter * (2 * u - 1));
    struct timespec ts = {(time_t)(ns / 1e9), (long)(ns - (double)(time_t)(ns / 1e9) * 1e9)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: diff_workload STEP_MS STEADY_MS INSTANCES [JITTER_PERCENT]\n");
        return 2;
    }
    double step = atof(argv[1]), steady = atof(argv[2]);
    double jitter = (argc > 4 ? atof(argv[4]) : 10) / 100;
    int instances = atoi(argv[3]);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned seed = (unsigned)getpid() ^ (unsigned)now.tv_nsec;
    for (int i = 0; i < instances; i++) {
        struct timespec a, b;
        nvtxRangePushA("step");
        clock_gettime(CLOCK_MONOTONIC, &a);
        sleep_jittered(step, jitter, &seed);
        clock_gettime(CLOCK_MONOTONIC, &b);
        nvtxRangePop();
        printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
        nvtxRangePushA("steady");
        sleep_jittered(steady, jitter, &seed);
        nvtxRangePop();
    }
    return 0;
}
