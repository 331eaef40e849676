/* NVTX for the Python workers of test_lifecycle.py (row 5), loaded with ctypes: a push and a
 * pop through the NVTX v3 header, so each process finds the agent as any C program does. */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) int lifecycle_push(const char *name)
{
    return nvtxRangePushA(name);
}

__attribute__((visibility("default"))) int lifecycle_pop(void)
{
    return nvtxRangePop();
}
