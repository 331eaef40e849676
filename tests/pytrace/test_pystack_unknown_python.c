/* A process whose CPython is a version the walker has no layout for (faked here: this program
 * exports the interpreter's entry points itself, as libpython would): it is a Python process,
 * so launches get no native walk, and its frames are never read. */
#include <stddef.h>

#include "agent/pystack.h"
#include "harness.h"

/* The entry points the walker looks up with dlsym (exported: ENABLE_EXPORTS). */
static int thread_state_asked;
static char not_a_thread_state[8]; /* too small to read frames from: ASan would say so */
char PyCode_Type[64], PyUnicode_Type[64];

__attribute__((visibility("default"))) int Py_IsInitialized(void)
{
    return 1;
}

__attribute__((visibility("default"))) const char *Py_GetVersion(void)
{
    return "3.9.18 (main, Jan 1 2024, 00:00:00) [GCC 12.2.0]";
}

__attribute__((visibility("default"))) void *PyGILState_GetThisThreadState(void)
{
    thread_state_asked++;
    return not_a_thread_state;
}

__attribute__((visibility("default"))) int PyCode_Addr2Line(void *code, int byte_offset)
{
    (void)code;
    return byte_offset;
}

static void an_unknown_version_is_python_without_a_stack(void)
{
    char out[256] = "untouched";
    ASSERT_EQ(pystack_in_python(), 1);
    ASSERT_EQ(pystack_python(out, sizeof out), 0);
    ASSERT_EQ(thread_state_asked, 0);
}

static const struct test_case tests[] = {
    {"an_unknown_version_is_python_without_a_stack", an_unknown_version_is_python_without_a_stack},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
