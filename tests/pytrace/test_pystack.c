/* The stack walker's rules (which frames are library code, which APIs launch GPU work) and
 * its native path: this program's own caller named through dladdr (it is linked with
 * -rdynamic, as a program must be for its functions to have names in the trace). */
#include <string.h>

#include "agent/pystack.h"
#include "harness.h"

static void library_frames_are_recognised_by_path(void)
{
    ASSERT_EQ(pystack_is_library_file("/usr/lib/python3/dist-packages/numpy/core/x.py"), 1);
    ASSERT_EQ(pystack_is_library_file("/venv/lib/python3.12/site-packages/torch/nn/linear.py"), 1);
    ASSERT_EQ(pystack_is_library_file("/usr/lib/python3.11/threading.py"), 1);
    ASSERT_EQ(pystack_is_library_file("/src/pytorch/torch/nn/modules/module.py"), 1);
    ASSERT_EQ(pystack_is_library_file("<frozen importlib._bootstrap>"), 1);
    ASSERT_EQ(pystack_is_library_file("/home/u/train.py"), 0);
    ASSERT_EQ(pystack_is_library_file("/home/u/torchvision_demo/model.py"), 0);
    ASSERT_EQ(pystack_is_library_file("<stdin>"), 0);
    ASSERT_EQ(pystack_is_library_file("train.py"), 0);
}

static void launch_apis_are_the_kernel_and_graph_launches(void)
{
    static const char *const launches[] = {"cudaLaunchKernel",
                                           "cudaLaunchKernel_ptsz",
                                           "cudaLaunchKernelExC_v11060",
                                           "cudaLaunchCooperativeKernel",
                                           "cudaGraphLaunch",
                                           "cudaGraphLaunch_ptsz",
                                           "cuLaunchKernel",
                                           "cuLaunchKernelEx",
                                           "cuLaunchCooperativeKernel",
                                           "cuGraphLaunch",
                                           "cuLaunchGrid"};
    static const char *const others[] = {"cudaLaunchHostFunc",
                                         "cuLaunchHostFunc",
                                         "cudaMemcpyAsync",
                                         "cuMemcpyHtoD_v2",
                                         "cudaGraphInstantiate",
                                         "cuCtxSynchronize",
                                         ""};
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        ASSERT_EQ(pystack_is_launch_api(launches[i]), 1);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        ASSERT_EQ(pystack_is_launch_api(others[i]), 0);
    ASSERT_EQ(pystack_is_launch_api(NULL), 0);
}

static void without_python_there_is_no_python_stack(void)
{
    char out[256] = "untouched";
    ASSERT_EQ(pystack_python(out, sizeof out), 0);
    ASSERT_EQ(pystack_in_python(), 0); /* so launches get the native walk */
}

/* Not inlined, and exported (default visibility, -rdynamic): the frame the native walk must name
 * first. */
__attribute__((noinline, visibility("default"))) size_t test_pystack_launcher(char *out, size_t len)
{
    size_t n = pystack_native(out, len, 0);
    __asm__ volatile("" ::: "memory"); /* keeps the call from becoming a tail call */
    return n;
}

__attribute__((noinline, visibility("default"))) size_t test_pystack_outer(char *out, size_t len)
{
    size_t n = test_pystack_launcher(out, len);
    __asm__ volatile("" ::: "memory");
    return n;
}

static void native_stack_names_the_callers_innermost_first(void)
{
    char out[1024];
    size_t n = test_pystack_outer(out, sizeof out);
    ASSERT_EQ(n, strlen(out));
    ASSERT(strncmp(out, "test_pystack_launcher+0x", 24) == 0);
    const char *second = strstr(out, PYSTACK_SEPARATOR);
    ASSERT(second);
    ASSERT(strncmp(second + 2, "test_pystack_outer+0x", 21) == 0);
    ASSERT(strstr(out, "(test_pystack)"));
    /* truncated to the buffer, still terminated */
    char small[16];
    ASSERT_EQ(test_pystack_outer(small, sizeof small), sizeof small - 1);
    ASSERT_EQ(strncmp(small, "test_pystack_la", 15), 0);
}

static const struct test_case tests[] = {
    {"library_frames_are_recognised_by_path", library_frames_are_recognised_by_path},
    {"launch_apis_are_the_kernel_and_graph_launches",
     launch_apis_are_the_kernel_and_graph_launches},
    {"without_python_there_is_no_python_stack", without_python_there_is_no_python_stack},
    {"native_stack_names_the_callers_innermost_first",
     native_stack_names_the_callers_innermost_first},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
