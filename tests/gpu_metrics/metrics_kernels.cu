/* Four kernels whose hardware behaviour differs as much as it can, for the GPU-metrics tests
 * against ncu (test_gpu_metrics_ncu.py): a bf16 GEMM through cuBLAS (Tensor Cores), an fp32
 * elementwise add (DRAM-bound, no Tensor Cores), a single-thread kernel (one warp slot of one
 * SM) and a full-GPU spin (every SM full of spinning warps).
 *
 *   metrics_kernels SECONDS   each kernel back to back for SECONDS in an NVTX range of its name,
 *                             gemm then add with no gap between them (alignment: the add range
 *                             must not read the GEMM's Tensor Cores), then single and spin
 *   metrics_kernels --once    each kernel twice, the second time alone on an idle GPU (for ncu)
 *   metrics_kernels --pulses N   N full-GPU spins of ~10 ms, each after 20 ms of idle GPU (the
 *                             edges of the samples' plateaus against the kernels' times)
 *
 * Prints each phase's kernel count on stdout. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (int)(call);                                                             \
        if (rc_ != 0) {                                                                    \
            fprintf(stderr, "metrics_kernels: %s failed (%d) at line %d\n", #call, rc_,    \
                    __LINE__);                                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

enum { GEMM_N = 8192, ADD_N = 1 << 28, SPIN_THREADS = 1024 };

__global__ void add_fp32(const float *a, const float *b, float *c, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

/* One thread of dependent fused multiply-adds: one warp slot of one SM, for ~iterations x 4
 * cycles. */
__global__ void single_thread(float *out, long iterations)
{
    float x = out[0], y = 1.0000001f;
    for (long i = 0; i < iterations; i++)
        x = fmaf(x, y, 1e-7f);
    out[0] = x;
}

/* Every thread spins on the SM clock for `cycles`: with two 1024-thread blocks per SM, every
 * SM holds its 64 warps for the kernel's length. */
__global__ void full_spin(long long cycles, int *sink)
{
    long long start = clock64();
    while (clock64() - start < cycles)
        ;
    if (threadIdx.x == 0 && blockIdx.x == 0)
        sink[0] = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct work {
    cublasHandle_t blas;
    __nv_bfloat16 *ga, *gb, *gc;
    float *a, *b, *c;
    int *sink;
    int sms;
};

static void gemm(struct work *w)
{
    const float one = 1, zero = 0;
    CHECK(cublasGemmEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, w->ga,
                       CUDA_R_16BF, GEMM_N, w->gb, CUDA_R_16BF, GEMM_N, &zero, w->gc, CUDA_R_16BF,
                       GEMM_N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void add(struct work *w)
{
    add_fp32<<<w->sms * 8, 512>>>(w->a, w->b, w->c, ADD_N);
}

static void single(struct work *w)
{
    single_thread<<<1, 1>>>(w->c, 1000000); /* ~2 ms */
}

static void spin(struct work *w)
{
    full_spin<<<w->sms * 2, SPIN_THREADS>>>(2000000, w->sink); /* ~1 ms */
}

/* Launches fn back to back for `seconds` inside an NVTX range (no wait before it starts: the
 * previous phase's kernels may still be running), at most 8 launches queued. */
static long phase(struct work *w, const char *name, void (*fn)(struct work *), double seconds)
{
    nvtxRangePushA(name);
    double end = now_s() + seconds;
    long n = 0;
    while (now_s() < end) {
        fn(w);
        if (++n % 8 == 0)
            CHECK(cudaDeviceSynchronize());
    }
    nvtxRangePop();
    return n;
}

int main(int argc, char **argv)
{
    int once = argc > 1 && !strcmp(argv[1], "--once");
    int pulses = argc > 2 && !strcmp(argv[1], "--pulses") ? atoi(argv[2]) : 0;
    double seconds = argc > 1 && !once && !pulses ? atof(argv[1]) : 0.3;
    struct work w;
    CHECK(cudaDeviceGetAttribute(&w.sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cublasCreate(&w.blas));
    size_t gemm_bytes = (size_t)GEMM_N * GEMM_N * sizeof(__nv_bfloat16);
    CHECK(cudaMalloc(&w.ga, gemm_bytes));
    CHECK(cudaMalloc(&w.gb, gemm_bytes));
    CHECK(cudaMalloc(&w.gc, gemm_bytes));
    CHECK(cudaMemset(w.ga, 0x3c, gemm_bytes)); /* bf16 ~0.0115 everywhere: finite products */
    CHECK(cudaMemset(w.gb, 0x3c, gemm_bytes));
    CHECK(cudaMalloc(&w.a, ADD_N * sizeof(float)));
    CHECK(cudaMalloc(&w.b, ADD_N * sizeof(float)));
    CHECK(cudaMalloc(&w.c, ADD_N * sizeof(float)));
    CHECK(cudaMemset(w.a, 0, ADD_N * sizeof(float)));
    CHECK(cudaMemset(w.b, 0, ADD_N * sizeof(float)));
    CHECK(cudaMalloc(&w.sink, sizeof(int)));
    CHECK(cudaDeviceSynchronize());

    static const struct {
        const char *name;
        void (*fn)(struct work *);
    } kernels[] = {{"gemm", gemm}, {"add", add}, {"single", single}, {"spin", spin}};
    if (once) {
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 2; k++) {
                kernels[i].fn(&w);
                CHECK(cudaDeviceSynchronize());
            }
        CHECK(cudaGetLastError());
        return 0;
    }
    struct timespec gap = {0, 50000000};
    if (pulses) {
        struct timespec idle = {0, 20000000};
        for (int i = 0; i < pulses; i++) {
            nanosleep(&idle, NULL);
            full_spin<<<w.sms * 2, SPIN_THREADS>>>(20000000, w.sink); /* ~10 ms */
            CHECK(cudaDeviceSynchronize());
        }
        CHECK(cudaGetLastError());
        return 0;
    }
    nanosleep(&gap, NULL);
    for (int i = 0; i < 4; i++) {
        long n = phase(&w, kernels[i].name, kernels[i].fn, seconds);
        if (i != 0) { /* gemm runs straight into add; the others start on an idle GPU */
            CHECK(cudaDeviceSynchronize());
            nanosleep(&gap, NULL);
        }
        printf("%s %ld\n", kernels[i].name, n);
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    return 0;
}
