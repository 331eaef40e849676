// A launch-bound CUDA C loop: per iteration one NVTX range around two launches of an empty
// kernel, the C twin of bench_cuda.py's PyTorch "loop" without the framework's own cost, so
// what a tracer adds per launch stands out. Times BLOCKS blocks after a warm-up, each closed by
// cudaDeviceSynchronize, and prints the median block as per_iter_us=X (bench/alternate.py).
// The other modes alternate 30 pairs of blocks, one in a state under test and one not, and
// print the median tested/other ratio as paired_ratio=R:
//   "paired": inside cudaProfilerStart/Stop vs outside (bench_cuda.py --paired);
//   "full", "idle": CUPTI tracing, or attached and idle, vs detached; these need
//   lab/cupti_detach's experiment agent, which exports the attach and detach calls.
//   cuda_launch [iterations per block] [paired|full|idle]
#include <cuda_profiler_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

__global__ void touch(float *p)
{
    p[threadIdx.x] += 1.0f;
}

// Untimed iterations after each change of CUPTI's attachment (first launches, buffers).
static const int settle_after_attach = 200;

static double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(cudaError_t rc, const char *what)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "cuda_launch: %s: %s\n", what, cudaGetErrorString(rc));
        exit(1);
    }
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

// The state under test: traced (cudaProfilerStart/Stop) and/or CUPTI attached.
struct tested_state {
    bool profiler_calls;
    int (*attach)(void), (*detach)(void); // NULL: CUPTI stays as it is
};

static double timed_block(float *p, int n, bool tested, const tested_state &state)
{
    if (tested && state.attach)
        state.attach();
    if (tested && state.profiler_calls)
        check(cudaProfilerStart(), "cudaProfilerStart");
    if (state.attach) {
        iterations(p, settle_after_attach);
        check(cudaDeviceSynchronize(), "settling");
    }
    double start = now_s();
    iterations(p, n);
    check(cudaDeviceSynchronize(), "block");
    double seconds = now_s() - start;
    if (tested && state.profiler_calls)
        check(cudaProfilerStop(), "cudaProfilerStop");
    if (tested && state.detach)
        state.detach();
    return seconds / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static void paired_blocks(float *p, int block, const tested_state &state)
{
    const int pairs = 30;
    std::vector<double> ratios, on, off;
    for (int i = 0; i < pairs; i++) {
        bool first = i % 2 == 0;
        double a = timed_block(p, block, first, state), b = timed_block(p, block, !first, state);
        double tested = first ? a : b, other = first ? b : a;
        on.push_back(tested);
        off.push_back(other);
        ratios.push_back(tested / other);
    }
    printf("tested_us=%.3f\nother_us=%.3f\npaired_ratio=%.4f\n", median(on) * 1e6,
           median(off) * 1e6, median(ratios));
}

// The experiment agent's attach and detach calls (LANTERN_AGENT, loaded by CUDA at cuInit),
// CUPTI left detached; false where this is not that agent.
static bool find_experiment_agent(tested_state &state)
{
    const char *path = getenv("LANTERN_AGENT");
    void *agent = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (!agent)
        return false;
    state.attach = (int (*)(void))dlsym(agent, "lantern_experiment_attach");
    state.detach = (int (*)(void))dlsym(agent, "lantern_experiment_detach");
    if (!state.attach || !state.detach)
        return false;
    state.detach();
    return true;
}

int main(int argc, char **argv)
{
    const int block = argc > 1 ? atoi(argv[1]) : 20000, blocks = 9;
    const char *mode = argc > 2 ? argv[2] : "";
    const bool paired = strcmp(mode, "paired") == 0, full = strcmp(mode, "full") == 0,
               idle = strcmp(mode, "idle") == 0;
    if (block <= 0 || argc > 3 || (argc > 2 && !paired && !full && !idle)) {
        fprintf(stderr, "usage: cuda_launch [iterations per block] [paired|full|idle]\n");
        return 2;
    }
    float *p;
    check(cudaMalloc(&p, 32 * sizeof(float)), "cudaMalloc");
    iterations(p, block);
    check(cudaDeviceSynchronize(), "warm-up");
    tested_state state = {paired || full, NULL, NULL};
    if ((full || idle) && !find_experiment_agent(state)) {
        fprintf(stderr, "cuda_launch: %s needs lab/cupti_detach's agent as LANTERN_AGENT\n",
                mode);
        return 1;
    }
    if (paired || full || idle) {
        paired_blocks(p, block, state);
    } else {
        std::vector<double> per_iter;
        for (int b = 0; b < blocks; b++)
            per_iter.push_back(timed_block(p, block, false, state));
        printf("per_iter_us=%.3f\n", median(per_iter) * 1e6);
    }
    check(cudaFree(p), "cudaFree");
    return 0;
}
