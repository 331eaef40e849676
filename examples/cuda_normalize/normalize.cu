/* Normalizes a large float array to [0, 1] on the GPU in chunks, the classic exercise for
 * reading a timeline: pageable vs pinned host memory (--pinned) and copy/compute overlap across
 * streams (--streams N), plus a deliberate bug (--reuse-bug) that queues every chunk on one stream. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS_PER_BLOCK 256
#define MAX_STREAMS 64

struct options {
    size_t elements;
    int chunks;
    int streams;
    int pinned;
    int reuse_bug;
    int single_thread;
};

static int check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return 0;
    fprintf(stderr, "normalize: %s: %s\n", what, cudaGetErrorString(err));
    return -1;
}

/* Each block reduces its slice of one chunk to a (min, max) pair; the partials of every chunk
 * land side by side so the final reduction sees the whole array. */
__global__ void chunk_min_max(const float *data, size_t count, float *block_min, float *block_max)
{
    __shared__ float smin[THREADS_PER_BLOCK];
    __shared__ float smax[THREADS_PER_BLOCK];
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        lo = fminf(lo, data[i]);
        hi = fmaxf(hi, data[i]);
    }
    smin[threadIdx.x] = lo;
    smax[threadIdx.x] = hi;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            smin[threadIdx.x] = fminf(smin[threadIdx.x], smin[threadIdx.x + half]);
            smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + half]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        block_min[blockIdx.x] = smin[0];
        block_max[blockIdx.x] = smax[0];
    }
}

/* One block folds all partials into range[0] = min, range[1] = max. */
__global__ void final_min_max(const float *block_min, const float *block_max, int count,
                              float *range)
{
    __shared__ float smin[THREADS_PER_BLOCK];
    __shared__ float smax[THREADS_PER_BLOCK];
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        lo = fminf(lo, block_min[i]);
        hi = fmaxf(hi, block_max[i]);
    }
    smin[threadIdx.x] = lo;
    smax[threadIdx.x] = hi;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            smin[threadIdx.x] = fminf(smin[threadIdx.x], smin[threadIdx.x + half]);
            smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + half]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        range[0] = smin[0];
        range[1] = smax[0];
    }
}

__global__ void normalize_chunk(float *data, size_t count, const float *range)
{
    float lo = range[0], span = range[1] - range[0];
    float scale = span > 0.0f ? 1.0f / span : 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        data[i] = (data[i] - lo) * scale;
}

static void usage(void)
{
    fprintf(stderr, "usage: normalize [--elements N] [--chunks N] [--streams N] [--pinned] "
                    "[--reuse-bug] [--single-thread]\n");
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    opt->elements = (size_t)64 << 20;
    opt->chunks = 16;
    opt->streams = 1;
    opt->pinned = 0;
    opt->reuse_bug = 0;
    opt->single_thread = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pinned")) {
            opt->pinned = 1;
        } else if (!strcmp(argv[i], "--reuse-bug")) {
            opt->reuse_bug = 1;
        } else if (!strcmp(argv[i], "--single-thread")) {
            opt->single_thread = 1;
        } else if (!strcmp(argv[i], "--elements") && i + 1 < argc) {
            opt->elements = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) {
            opt->chunks = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--streams") && i + 1 < argc) {
            opt->streams = atoi(argv[++i]);
        } else {
            usage();
            return -1;
        }
    }
    if (opt->elements == 0 || opt->chunks < 1 || opt->streams < 1 || opt->streams > MAX_STREAMS) {
        usage();
        return -1;
    }
    return 0;
}

/* The stream a chunk goes to. The "bug" is the kind seen in real code: an index that was meant
 * to rotate but does not, so every chunk serializes on one stream and nothing overlaps. */
static int stream_of_chunk(const struct options *opt, int chunk)
{
    return opt->reuse_bug ? 0 : chunk % opt->streams;
}

struct buffers {
    float *host;
    float *device;
    float *block_min, *block_max, *range;
    cudaStream_t streams[MAX_STREAMS];
    int stream_count;
};

static int blocks_per_chunk(size_t chunk_elements)
{
    size_t blocks = (chunk_elements + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    return blocks > 1024 ? 1024 : (int)blocks;
}

static int setup(const struct options *opt, struct buffers *buf)
{
    size_t bytes = opt->elements * sizeof(float);
    int partials = opt->chunks * 1024;
    nvtxRangePushA("setup");
    if (opt->pinned) {
        if (check(cudaMallocHost((void **)&buf->host, bytes), "cudaMallocHost"))
            goto fail;
    } else if (!(buf->host = (float *)malloc(bytes))) {
        fprintf(stderr, "normalize: out of host memory\n");
        goto fail;
    }
    if (check(cudaMalloc((void **)&buf->device, bytes), "cudaMalloc") ||
        check(cudaMalloc((void **)&buf->block_min, partials * sizeof(float)), "cudaMalloc") ||
        check(cudaMalloc((void **)&buf->block_max, partials * sizeof(float)), "cudaMalloc") ||
        check(cudaMalloc((void **)&buf->range, 2 * sizeof(float)), "cudaMalloc"))
        goto fail;
    for (int s = 0; s < opt->streams; s++) {
        char name[32];
        /* Blocking streams (not cudaStreamNonBlocking): they wait for the memsets that
         * find_range queues on the default stream. */
        if (check(cudaStreamCreate(&buf->streams[s]), "cudaStreamCreate"))
            goto fail;
        buf->stream_count++;
        snprintf(name, sizeof name, "chunks %d", s);
        nvtxNameCudaStreamA(buf->streams[s], name);
    }
    /* Fill with a known range so the result can be checked exactly: values -3 .. +5. */
    srand(1);
    for (size_t i = 0; i < opt->elements; i++)
        buf->host[i] = -3.0f + 8.0f * (float)rand() / (float)RAND_MAX;
    buf->host[0] = -3.0f;
    buf->host[opt->elements - 1] = 5.0f;
    nvtxRangePop();
    return 0;
fail:
    nvtxRangePop();
    return -1;
}

static void release(const struct options *opt, struct buffers *buf)
{
    for (int s = 0; s < buf->stream_count; s++)
        cudaStreamDestroy(buf->streams[s]);
    cudaFree(buf->range);
    cudaFree(buf->block_max);
    cudaFree(buf->block_min);
    cudaFree(buf->device);
    if (opt->pinned)
        cudaFreeHost(buf->host);
    else
        free(buf->host);
}

/* Pass 1: copy each chunk in and reduce it on its stream; then one final reduction. Partial
 * slots a short chunk leaves unused are preset by memsets to sentinels that cannot win:
 * bytes 0x7f make 3.39e38 (for min), bytes 0xfe make -1.69e38 (for max). */
static int find_range(const struct options *opt, struct buffers *buf)
{
    size_t per_chunk = (opt->elements + opt->chunks - 1) / opt->chunks;
    size_t partial_bytes = (size_t)opt->chunks * 1024 * sizeof(float);
    nvtxRangePushA("find_range");
    if (check(cudaMemset(buf->block_min, 0x7f, partial_bytes), "cudaMemset") ||
        check(cudaMemset(buf->block_max, 0xfe, partial_bytes), "cudaMemset"))
        goto fail;
    for (int c = 0; c < opt->chunks; c++) {
        size_t first = (size_t)c * per_chunk;
        if (first >= opt->elements)
            break;
        size_t count = opt->elements - first < per_chunk ? opt->elements - first : per_chunk;
        cudaStream_t stream = buf->streams[stream_of_chunk(opt, c)];
        cudaMemcpyAsync(buf->device + first, buf->host + first, count * sizeof(float),
                        cudaMemcpyHostToDevice, stream);
        chunk_min_max<<<blocks_per_chunk(count), THREADS_PER_BLOCK, 0, stream>>>(
            buf->device + first, count, buf->block_min + c * 1024, buf->block_max + c * 1024);
    }
    if (check(cudaGetLastError(), "launch chunk_min_max") ||
        check(cudaDeviceSynchronize(), "reduce chunks"))
        goto fail;
    /* --single-thread: the tutorial's first version, one thread folding every partial */
    final_min_max<<<1, opt->single_thread ? 1 : THREADS_PER_BLOCK>>>(
        buf->block_min, buf->block_max, opt->chunks * 1024, buf->range);
    if (check(cudaDeviceSynchronize(), "final reduction"))
        goto fail;
    nvtxRangePop();
    return 0;
fail:
    nvtxRangePop();
    return -1;
}

/* Pass 2: normalize each chunk in place and copy it back on the same stream, so chunk k's copy
 * out overlaps chunk k+1's kernel when they sit on different streams. */
static int normalize(const struct options *opt, struct buffers *buf)
{
    size_t per_chunk = (opt->elements + opt->chunks - 1) / opt->chunks;
    nvtxRangePushA("normalize");
    for (int c = 0; c < opt->chunks; c++) {
        size_t first = (size_t)c * per_chunk;
        if (first >= opt->elements)
            break;
        size_t count = opt->elements - first < per_chunk ? opt->elements - first : per_chunk;
        cudaStream_t stream = buf->streams[stream_of_chunk(opt, c)];
        normalize_chunk<<<blocks_per_chunk(count), THREADS_PER_BLOCK, 0, stream>>>(
            buf->device + first, count, buf->range);
        cudaMemcpyAsync(buf->host + first, buf->device + first, count * sizeof(float),
                        cudaMemcpyDeviceToHost, stream);
    }
    int rc = check(cudaGetLastError(), "launch normalize_chunk") ||
                     check(cudaDeviceSynchronize(), "normalize")
                 ? -1
                 : 0;
    nvtxRangePop();
    return rc;
}

/* The input spans exactly [-3, 5], so the output must span exactly [0, 1]. */
static int verify(const struct options *opt, const struct buffers *buf)
{
    float lo = FLT_MAX, hi = -FLT_MAX;
    nvtxRangePushA("verify");
    for (size_t i = 0; i < opt->elements; i++) {
        lo = fminf(lo, buf->host[i]);
        hi = fmaxf(hi, buf->host[i]);
    }
    nvtxRangePop();
    if (lo != 0.0f || fabsf(hi - 1.0f) > 1e-6f) {
        fprintf(stderr, "normalize: wrong result: range [%g, %g], expected [0, 1]\n", lo, hi);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt;
    struct buffers buf;
    cudaEvent_t begin = NULL, end = NULL;
    float ms = 0;
    int rc = 1;

    if (parse_options(argc, argv, &opt))
        return 2;
    memset(&buf, 0, sizeof buf);
    if (setup(&opt, &buf))
        goto out;
    if (check(cudaEventCreate(&begin), "cudaEventCreate") ||
        check(cudaEventCreate(&end), "cudaEventCreate"))
        goto out;
    cudaEventRecord(begin, 0);
    if (find_range(&opt, &buf) || normalize(&opt, &buf))
        goto out;
    cudaEventRecord(end, 0);
    cudaEventSynchronize(end);
    cudaEventElapsedTime(&ms, begin, end);
    if (verify(&opt, &buf))
        goto out;
    printf("normalized %zu floats (%s host memory, %d chunks, %d stream%s%s) in %.3f ms\n",
           opt.elements, opt.pinned ? "pinned" : "pageable", opt.chunks, opt.streams,
           opt.streams == 1 ? "" : "s", opt.reuse_bug ? ", reuse bug" : "", ms);
    rc = 0;
out:
    if (begin)
        cudaEventDestroy(begin);
    if (end)
        cudaEventDestroy(end);
    release(&opt, &buf);
    return rc;
}
