/* A shared library embedding its own copy of NVTX (built twice, as lib a and lib b), so
 * NVTX initialises once per library and calls InitializeInjectionNvtx2 twice. */
#include <nvtx3/nvToolsExt.h>

#include <stdlib.h>

#define LIB_FUNCTION2(name) nvtx_lib_##name##_ranges
#define LIB_FUNCTION(name) LIB_FUNCTION2(name)
#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

/* n push/pop pairs; returns 0 when every level NVTX returned was right. */
__attribute__((visibility("default"))) int LIB_FUNCTION(NVTX_LIB_NAME)(int n)
{
    for (int i = 0; i < n; i++) {
        if (nvtxRangePushA("lib-" STRINGIFY(NVTX_LIB_NAME)) != 0)
            return -1;
        if (nvtxRangePop() != 0)
            return -1;
    }
    return 0;
}
