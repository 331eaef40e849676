// NVTX calls made while the process exits (test_lifecycle.py, row 9): in a C++ static
// object's destructor, in a __attribute__((destructor)) function, and in atexit handlers
// registered before the program's first NVTX call (so before the agent's own) and after it.
// 62 ranges in all; each kind has its own name so the test counts them one by one.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace
{

void ranges(const char *name, int n)
{
    for (int i = 0; i < n; ++i) {
        nvtxRangePushA(name);
        nvtxRangePop();
    }
}

struct static_object {
    ~static_object() { ranges("static-destructor", 10); }
};

static_object object; // constructed before main: its destructor is registered first

void atexit_before()
{
    ranges("atexit-before", 10);
}
void atexit_after()
{
    ranges("atexit-after", 12);
}

__attribute__((destructor)) void library_destructor()
{
    ranges("destructor", 10);
}

} // namespace

int main()
{
    std::atexit(atexit_before); // before the first NVTX call loads the agent
    ranges("main", 20);
    std::atexit(atexit_after);
    std::puts("main 20 atexit-after 12 atexit-before 10 destructor 10 static-destructor 10");
    return 0;
}
