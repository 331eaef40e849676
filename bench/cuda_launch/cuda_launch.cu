// A launch-bound CUDA C loop: per iteration one NVTX range around two launches of an empty
// kernel, the C twin of bench_cuda.py's PyTorch "loop" without the framework's own cost, so
// what a tracer adds per launch stands out. Times BLOCKS blocks after a warm-up, each closed by
// cudaDeviceSynchronize, and prints the median block as per_iter_us=X (bench/alternate.py).
//   cuda_launch [iterations per block]
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

int main(int argc, char **argv)
{
    const int block = argc > 1 ? atoi(argv[1]) : 20000, blocks = 9;
    if (block <= 0) {
        fprintf(stderr, "usage: cuda_launch [iterations per block]\n");
        return 2;
    }
    float *p;
    check(cudaMalloc(&p, 32 * sizeof(float)), "cudaMalloc");
    iterations(p, block);
    check(cudaDeviceSynchronize(), "warm-up");
    std::vector<double> per_iter;
    for (int b = 0; b < blocks; b++) {
        double start = now_s();
        iterations(p, block);
        check(cudaDeviceSynchronize(), "block");
        per_iter.push_back((now_s() - start) / block);
    }
    std::sort(per_iter.begin(), per_iter.end());
    printf("per_iter_us=%.3f\n", per_iter[blocks / 2] * 1e6);
    check(cudaFree(p), "cudaFree");
    return 0;
}
