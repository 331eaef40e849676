// A launch-bound CUDA C loop: per iteration one NVTX range around two launches of an empty
// kernel, the C twin of bench_cuda.py's PyTorch "loop" without the framework's own cost, so
// what a tracer adds per launch stands out. Times BLOCKS blocks after a warm-up, each closed by
// cudaDeviceSynchronize, and prints the median block as per_iter_us=X; with --lockstep DIR it
// runs one block per "g" read from DIR/go and writes its seconds per iteration to DIR/done
// instead (bench/lockstep.py).
//   cuda_launch [iterations per block] [--lockstep DIR]
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
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

static double timed_block(float *p, int n)
{
    double start = now_s();
    iterations(p, n);
    check(cudaDeviceSynchronize(), "block");
    return (now_s() - start) / n;
}

static int serve_lockstep(const std::string &dir, float *p, int block)
{
    FILE *go = fopen((dir + "/go").c_str(), "r");
    FILE *done = go ? fopen((dir + "/done").c_str(), "w") : nullptr;
    if (!done) {
        perror("cuda_launch: lockstep FIFOs");
        return 1;
    }
    char line[16];
    while (fgets(line, sizeof line, go) && line[0] == 'g') {
        fprintf(done, "%.9f\n", timed_block(p, block));
        fflush(done);
    }
    fclose(done);
    fclose(go);
    return 0;
}

int main(int argc, char **argv)
{
    const int block = argc > 1 ? atoi(argv[1]) : 20000, blocks = 9;
    const bool lockstep = argc == 4 && strcmp(argv[2], "--lockstep") == 0;
    if (block <= 0 || (argc > 2 && !lockstep)) {
        fprintf(stderr, "usage: cuda_launch [iterations per block] [--lockstep DIR]\n");
        return 2;
    }
    float *p;
    check(cudaMalloc(&p, 32 * sizeof(float)), "cudaMalloc");
    iterations(p, block);
    check(cudaDeviceSynchronize(), "warm-up");
    int rc = 0;
    if (lockstep) {
        rc = serve_lockstep(argv[3], p, block);
    } else {
        std::vector<double> per_iter;
        for (int b = 0; b < blocks; b++)
            per_iter.push_back(timed_block(p, block));
        std::sort(per_iter.begin(), per_iter.end());
        printf("per_iter_us=%.3f\n", per_iter[blocks / 2] * 1e6);
    }
    check(cudaFree(p), "cudaFree");
    return rc;
}
