// pairs.py's measurement on bench/cuda_launch's C loop (an NVTX range around two launches of
// an empty kernel, 20 000 iterations per block): "full", "idle" or "control" as in pairs.py.
#include <cuda_profiler_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

__global__ void touch(float *p) { p[threadIdx.x] += 1.0f; }

static int (*attach)(void), (*detach)(void);
static bool full;

static double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void iterations(float *p, int n)
{
    for (int i = 0; i < n; i++) {
        nvtxRangePushA("iter");
        touch<<<1, 32>>>(p);
        touch<<<1, 32>>>(p);
        nvtxRangePop();
    }
}

static double timed(float *p, int n, bool under_test)
{
    if (under_test && attach) {
        attach();
        if (full)
            cudaProfilerStart();
    }
    iterations(p, 200);
    cudaDeviceSynchronize();
    double start = now_s();
    iterations(p, n);
    cudaDeviceSynchronize();
    double seconds = now_s() - start;
    if (under_test && detach) {
        if (full)
            cudaProfilerStop();
        detach();
    }
    return seconds / n;
}

int main(int argc, char **argv)
{
    const int block = 20000, pairs = 30;
    if (argc != 2 || (strcmp(argv[1], "full") && strcmp(argv[1], "idle") &&
                      strcmp(argv[1], "control"))) {
        fprintf(stderr, "usage: cloop full|idle|control\n");
        return 2;
    }
    full = strcmp(argv[1], "full") == 0;
    float *p;
    if (cudaMalloc(&p, 32 * sizeof(float)) != cudaSuccess)
        return 1;
    iterations(p, block);
    cudaDeviceSynchronize();
    if (strcmp(argv[1], "control") != 0) {
        // the agent is loaded by now (CUDA_INJECTION64_PATH at cuInit)
        void *agent = dlopen(getenv("LANTERN_AGENT"), RTLD_NOW | RTLD_NOLOAD);
        if (!agent) {
            fprintf(stderr, "cloop: the experiment agent is not loaded\n");
            return 1;
        }
        attach = (int (*)(void))dlsym(agent, "lantern_experiment_attach");
        detach = (int (*)(void))dlsym(agent, "lantern_experiment_detach");
        if (!attach || !detach)
            return 1;
        detach();
    }
    std::vector<double> ratios;
    for (int i = 0; i < pairs; i++) {
        bool first = i % 2 == 0;
        double a = timed(p, block, first), b = timed(p, block, !first);
        ratios.push_back(first ? a / b : b / a);
    }
    std::sort(ratios.begin(), ratios.end());
    printf("paired_ratio=%.4f\n", ratios[ratios.size() / 2]);
    return 0;
}
