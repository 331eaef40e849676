// A launch-bound CUDA C loop: per iteration one NVTX range around two launches of an empty
// kernel, the C twin of bench_cuda.py's PyTorch "loop" without the framework's own cost, so
// what a tracer adds per launch stands out. Times BLOCKS blocks after a warm-up, each closed by
// cudaDeviceSynchronize, and prints the median block as per_iter_us=X (bench/alternate.py).
// "paired" alternates blocks inside cudaProfilerStart/Stop with blocks outside, 30 pairs, and
// prints the median traced/paused ratio as paired_ratio=R (bench_cuda.py --paired).
//   cuda_launch [iterations per block] [paired]
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

__global__ void touch(float *p) { p[threadIdx.x] += 1.0f; }

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

static double timed_block(float *p, int n, bool traced)
{
    if (traced)
        check(cudaProfilerStart(), "cudaProfilerStart");
    double start = now_s();
    iterations(p, n);
    check(cudaDeviceSynchronize(), "block");
    double seconds = now_s() - start;
    if (traced)
        check(cudaProfilerStop(), "cudaProfilerStop");
    return seconds / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static void paired_blocks(float *p, int block)
{
    const int pairs = 30;
    std::vector<double> ratios, on, off;
    for (int i = 0; i < pairs; i++) {
        bool first = i % 2 == 0;
        double a = timed_block(p, block, first), b = timed_block(p, block, !first);
        double traced = first ? a : b, paused = first ? b : a;
        on.push_back(traced);
        off.push_back(paused);
        ratios.push_back(traced / paused);
    }
    printf("per_iter_us=%.3f\npaused_us=%.3f\npaired_ratio=%.4f\n", median(on) * 1e6,
           median(off) * 1e6, median(ratios));
}

int main(int argc, char **argv)
{
    const int block = argc > 1 ? atoi(argv[1]) : 20000, blocks = 9;
    const bool paired = argc > 2 && strcmp(argv[2], "paired") == 0;
    if (block <= 0 || (argc > 2 && !paired)) {
        fprintf(stderr, "usage: cuda_launch [iterations per block] [paired]\n");
        return 2;
    }
    float *p;
    check(cudaMalloc(&p, 32 * sizeof(float)), "cudaMalloc");
    iterations(p, block);
    check(cudaDeviceSynchronize(), "warm-up");
    if (paired) {
        paired_blocks(p, block);
    } else {
        std::vector<double> per_iter;
        for (int b = 0; b < blocks; b++)
            per_iter.push_back(timed_block(p, block, false));
        printf("per_iter_us=%.3f\n", median(per_iter) * 1e6);
    }
    check(cudaFree(p), "cudaFree");
    return 0;
}
