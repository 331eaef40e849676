/* A program whose CPU time goes to a static function (SPIN_NAME, static_spin unless the build
 * renames it), for the separate debug files' test (test_cpu_debug_files.py): stripped, only a
 * debug file can name it. Starts the agent with an NVTX range; argument: seconds of CPU time. */
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <time.h>

#ifndef SPIN_NAME
#define SPIN_NAME static_spin
#endif

static volatile double sink;
static volatile long spin_iterations = 1000000; /* not a constant: no .constprop clone */

static long long process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void SPIN_NAME(long iterations)
{
    double s = 0;
    for (long i = 0; i < iterations; i++)
        s += (double)i * 0.5;
    sink += s;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    long long end = process_cpu_ns() + (long long)(seconds * 1e9);
    nvtxRangePushA("spin");
    while (process_cpu_ns() < end)
        SPIN_NAME(spin_iterations);
    nvtxRangePop();
    return 0;
}
