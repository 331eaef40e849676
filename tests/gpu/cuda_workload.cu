// The GPU test's CUDA program: known kernels (counts, grids, blocks), copies of known sizes
// and memory kinds, three streams, NVTX ranges around each part, and spin kernels timed with
// CUDA events. It writes what it did as JSON (argv[1]) for test_cuda_gpu.py to compare.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "cuda_workload: %s: %s\n", #call, cudaGetErrorString(err_));     \
            exit(2);                                                                         \
        }                                                                                    \
    } while (0)

__global__ void add_one(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1.0f;
}

__global__ void scale_3d(float *x)
{
    int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int thread = threadIdx.y * blockDim.x + threadIdx.x;
    x[block * blockDim.x * blockDim.y + thread] *= 2.0f;
}

// Busy-waits on the GPU's nanosecond timer: a kernel of a known, long duration.
__device__ void spin_for(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

__global__ void spin(unsigned long long ns) { spin_for(ns); }

// Keeps the stream busy while the timed kernel and its events are queued behind it, so the
// events bracket the kernel alone and not the launch latency of an idle GPU.
__global__ void prefill(unsigned long long ns) { spin_for(ns); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_workload OUT.json\n");
        return 2;
    }
    const size_t mb = 1 << 20;
    float *device;
    void *pinned, *pageable = calloc(1, mb);
    cudaStream_t copy_stream, side_stream;
    CHECK(cudaMalloc(&device, 16 * mb));
    CHECK(cudaMallocHost(&pinned, 2 * mb));
    CHECK(cudaStreamCreate(&copy_stream));
    CHECK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));
    nvtxNameCudaStreamA(copy_stream, "copy stream");

    nvtxRangePushA("copies");
    CHECK(cudaMemcpy(device, pageable, mb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(device, pinned, 2 * mb, cudaMemcpyHostToDevice, copy_stream));
    CHECK(cudaStreamSynchronize(copy_stream));
    CHECK(cudaMemcpyAsync(pinned, device, 2 * mb, cudaMemcpyDeviceToHost, copy_stream));
    CHECK(cudaStreamSynchronize(copy_stream));
    CHECK(cudaMemcpy(pageable, device, mb, cudaMemcpyDeviceToHost));
    CHECK(cudaMemset(device, 0, 4 * mb));
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();

    CHECK(cudaProfilerStart());   // the window of --capture-range=cudaProfilerApi
    nvtxRangePushA("small kernels");
    for (int i = 0; i < 5; i++) {
        nvtxRangePushA("add");
        add_one<<<64, 128>>>(device, 64 * 128);
        nvtxRangePop();
        CHECK(cudaDeviceSynchronize());
    }
    for (int i = 0; i < 3; i++) {
        scale_3d<<<dim3(8, 4, 2), dim3(32, 4, 1), 0, side_stream>>>(device);
        CHECK(cudaStreamSynchronize(side_stream));
    }
    nvtxRangePop();
    CHECK(cudaProfilerStop());

    // Spin kernels of 1 and 2 ms, each timed by events recorded around it on its stream.
    const unsigned long long spin_ns[] = { 1000000, 2000000, 1000000, 2000000 };
    float spin_ms[4];
    cudaEvent_t before, after;
    CHECK(cudaEventCreate(&before));
    CHECK(cudaEventCreate(&after));
    nvtxRangePushA("spin");
    // CUDA loads a kernel's code at its first launch (lazy loading): that launch would
    // stretch the first event pair, so it happens before timing starts.
    spin<<<1, 32, 0, copy_stream>>>(1000);
    prefill<<<1, 32, 0, copy_stream>>>(1000);
    CHECK(cudaStreamSynchronize(copy_stream));
    for (int i = 0; i < 4; i++) {
        prefill<<<1, 32, 0, copy_stream>>>(200000);
        CHECK(cudaEventRecord(before, copy_stream));
        spin<<<1, 32, 0, copy_stream>>>(spin_ns[i]);
        CHECK(cudaEventRecord(after, copy_stream));
        CHECK(cudaEventSynchronize(after));
        CHECK(cudaEventElapsedTime(&spin_ms[i], before, after));
    }
    nvtxRangePop();
    CHECK(cudaGetLastError());

    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 2;
    fprintf(out, "{\"spin_event_ms\": [%.6f, %.6f, %.6f, %.6f]}\n", spin_ms[0], spin_ms[1],
            spin_ms[2], spin_ms[3]);
    fclose(out);
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(device));
    free(pageable);
    return 0;
}
