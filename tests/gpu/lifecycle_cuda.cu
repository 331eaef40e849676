// A CUDA program that ends in the ways a real one can, for test_lifecycle_gpu.py: it launches
// KERNELS kernels inside as many NVTX ranges, waits for them, optionally lets LINGER_MS pass
// (CUPTI hands its buffers over every 200 ms), then ends by END: return, exit, _exit, abort
// (SIGABRT), segv (SIGSEGV), kill (SIGKILL). "fork N" first forks N children before any CUDA
// call, each doing the same and ending the same way; the parent waits for them and returns.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__global__ void tick(int *x) { atomicAdd(x, 1); }

static int work(int kernels, int linger_ms, const char *end)
{
    int *x;
    if (cudaMalloc(&x, sizeof *x) != cudaSuccess)
        return 2;
    cudaMemset(x, 0, sizeof *x);
    for (int i = 0; i < kernels; i++) {
        nvtxRangePushA("launch");
        tick<<<1, 32>>>(x);
        nvtxRangePop();
    }
    int done = 0;
    cudaMemcpy(&done, x, sizeof done, cudaMemcpyDeviceToHost);
    if (done != kernels * 32)
        return 3;
    if (linger_ms)
        usleep((useconds_t)linger_ms * 1000);
    fflush(stdout);
    if (!strcmp(end, "exit"))
        exit(0);
    if (!strcmp(end, "_exit"))
        _exit(0);
    if (!strcmp(end, "abort"))
        abort();
    if (!strcmp(end, "segv"))
        *(volatile int *)0 = 1;
    if (!strcmp(end, "kill"))
        raise(SIGKILL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: lifecycle_cuda KERNELS LINGER_MS END [fork N]\n");
        return 2;
    }
    int kernels = atoi(argv[1]), linger_ms = atoi(argv[2]);
    const char *end = argv[3];
    if (argc > 5 && !strcmp(argv[4], "fork")) {
        int children = atoi(argv[5]);
        for (int c = 0; c < children; c++)
            if (fork() == 0)
                _exit(work(kernels, linger_ms, end));
        int status, failed = 0;
        while (wait(&status) > 0)
            failed += WIFEXITED(status) && WEXITSTATUS(status) != 0;
        return failed ? 1 : 0;
    }
    return work(kernels, linger_ms, end);
}
