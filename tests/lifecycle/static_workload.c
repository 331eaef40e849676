/* A statically linked NVTX program (test_lifecycle.py, row 3): the NVTX header dlopen()s
 * NVTX_INJECTION64_PATH at the first call, which a static executable cannot do safely. It
 * makes 40 ranges, prints how many and exits with status 5, with or without lantern. */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>

int main(void)
{
    for (int i = 0; i < 40; i++) {
        nvtxRangePushA("static");
        nvtxRangePop();
    }
    printf("static 40\n");
    return 5;
}
