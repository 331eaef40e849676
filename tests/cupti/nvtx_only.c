/* A program with NVTX ranges and no CUDA: what `lantern profile -t cuda,nvtx` must still
 * record on a machine without a GPU (test_cuda_no_gpu.py). Pushes argv[1] ranges. */
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int ranges = argc > 1 ? atoi(argv[1]) : 3;
    for (int i = 0; i < ranges; i++) {
        nvtxRangePushA("step");
        nvtxRangePop();
    }
    return 0;
}
