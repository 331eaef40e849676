/* The rule that puts a thread's Python frames into a native CPU stack (import_cpu_python.c):
 * eval frames take their segments, the interpreter's frames go, extension code stays, a cut
 * native stack gets the Python frames above its leaf; and the join of a sample with the
 * nearest look of its thread. Frame ids: 1xx native, 2xx Python. */
#include "db/import_cpu_python.h"
#include "harness.h"

enum { N = CPU_FRAME_NATIVE, E = CPU_FRAME_EVAL, I = CPU_FRAME_INTERPRETER, R = CPU_FRAME_RUNTIME };

static size_t splice(const int64_t *native, const uint8_t *kind, size_t n, int64_t *out)
{
    /* innermost first: hot <- work (one evaluation call), then main (the outer call) */
    static const int64_t python[] = {201, 202, 203};
    static const uint8_t entry[] = {0, 1, 1};
    return cpu_python_splice(native, kind, n, python, entry, 3, out, 16);
}

static void each_eval_frame_takes_its_segment_and_interpreter_frames_go(void)
{
    /* PyLong_Add <- eval <- numpy_call <- eval <- Py_RunMain <- __libc_start_main */
    const int64_t native[] = {101, 102, 103, 104, 105, 106};
    const uint8_t kind[] = {I, E, N, E, I, R};
    int64_t out[16];
    ASSERT_EQ(splice(native, kind, 6, out), 5);
    const int64_t want[] = {201, 202, 103, 203, 106};
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(out[i], want[i]);
}

static void a_stack_cut_at_its_leaf_gets_every_python_frame_above_it(void)
{
    const int64_t native[] = {101};
    const uint8_t kind[] = {I};
    int64_t out[16];
    ASSERT_EQ(splice(native, kind, 1, out), 3);
    ASSERT_EQ(out[0], 201);
    ASSERT_EQ(out[2], 203);
}

static void extension_code_stays_the_leaf_above_the_python_frames(void)
{
    /* memcpy <- numpy's loop, cut there (no frame pointers) */
    const int64_t native[] = {101, 102};
    const uint8_t kind[] = {R, N};
    int64_t out[16];
    ASSERT_EQ(splice(native, kind, 2, out), 5);
    ASSERT_EQ(out[0], 101);
    ASSERT_EQ(out[1], 102);
    ASSERT_EQ(out[2], 201);
}

static void the_c_runtime_called_by_the_interpreter_counts_as_the_python_function(void)
{
    const int64_t native[] = {101, 102, 103}; /* __tls_get_addr <- _PyObject_Malloc <- eval */
    const uint8_t kind[] = {R, I, E};
    int64_t out[16];
    ASSERT_EQ(splice(native, kind, 3, out), 3);
    ASSERT_EQ(out[0], 201);
    const uint8_t cut[] = {R}; /* its caller unknown */
    ASSERT_EQ(splice(native, cut, 1, out), 3);
    ASSERT_EQ(out[0], 201);
}

static void leftover_segments_go_after_the_last_one_placed(void)
{
    /* one eval frame seen (3.11+ inlines Python calls; the rest of the stack was cut) */
    const int64_t native[] = {101, 102, 103};
    const uint8_t kind[] = {E, N, I};
    int64_t out[16];
    ASSERT_EQ(splice(native, kind, 3, out), 4);
    const int64_t want[] = {201, 202, 203, 102};
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(out[i], want[i]);
}

static void the_output_never_overflows(void)
{
    const int64_t native[] = {101, 102, 103};
    const uint8_t kind[] = {N, N, I};
    int64_t out[4];
    static const int64_t python[] = {201, 202, 203};
    static const uint8_t entry[] = {0, 0, 1};
    ASSERT_EQ(cpu_python_splice(native, kind, 3, python, entry, 3, out, 4), 4);
    ASSERT_EQ(out[3], 202);
}

static void frames_are_told_apart_by_function_and_module(void)
{
    ASSERT_EQ(cpu_python_frame_kind("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0",
                                    "libpython3.11.so.1.0"),
              E);
    ASSERT_EQ(cpu_python_frame_kind("PyLong_Add", "python3.12", "python3.12"), I);
    ASSERT_EQ(cpu_python_frame_kind("py::hot:/x.py", "[jit]", "python3.12"), I);
    ASSERT_EQ(cpu_python_frame_kind("memcpy", "libc.so.6", "python3.12"), R);
    ASSERT_EQ(cpu_python_frame_kind("add_kernel", "libtorch_cpu.so", "python3.12"), N);
    ASSERT_EQ(cpu_python_frame_kind("_PyEval_EvalFrameDefault", "x", NULL), N); /* no Python */
}

static void a_sample_takes_the_nearest_look_of_its_own_thread_within_the_window(void)
{
    struct cpu_py_look looks[] = {{7, 3000, 3}, {5, 1000, 1}, {5, 2000, 2}, {7, 1500, 4}};
    cpu_python_sort_looks(looks, 4);
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 1400, 1000)->stack, 1);
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 1600, 1000)->stack, 2);
    ASSERT_EQ(cpu_python_nearest(looks, 4, 7, 1600, 1000)->stack, 4);
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 9000, 1000) == NULL, 1); /* too far */
    ASSERT_EQ(cpu_python_nearest(looks, 4, 6, 1000, 1000) == NULL, 1); /* never looked at */
}

static void a_sample_between_two_far_looks_that_agree_takes_their_stack(void)
{
    struct cpu_py_look looks[] = {
        {5, 1000000, 1}, {5, 9000000, 1}, {5, 40000000, 2}, {5, 50000000, 3}};
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 5000000, 1000)->stack, 1);
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 20000000, 1000) == NULL, 1); /* 31 ms apart */
    ASSERT_EQ(cpu_python_nearest(looks, 4, 5, 45000000, 1000) == NULL, 1); /* they differ */
}

static const struct test_case tests[] = {
    {"each_eval_frame_takes_its_segment_and_interpreter_frames_go",
     each_eval_frame_takes_its_segment_and_interpreter_frames_go},
    {"a_stack_cut_at_its_leaf_gets_every_python_frame_above_it",
     a_stack_cut_at_its_leaf_gets_every_python_frame_above_it},
    {"extension_code_stays_the_leaf_above_the_python_frames",
     extension_code_stays_the_leaf_above_the_python_frames},
    {"the_c_runtime_called_by_the_interpreter_counts_as_the_python_function",
     the_c_runtime_called_by_the_interpreter_counts_as_the_python_function},
    {"leftover_segments_go_after_the_last_one_placed",
     leftover_segments_go_after_the_last_one_placed},
    {"the_output_never_overflows", the_output_never_overflows},
    {"frames_are_told_apart_by_function_and_module", frames_are_told_apart_by_function_and_module},
    {"a_sample_takes_the_nearest_look_of_its_own_thread_within_the_window",
     a_sample_takes_the_nearest_look_of_its_own_thread_within_the_window},
    {"a_sample_between_two_far_looks_that_agree_takes_their_stack",
     a_sample_between_two_far_looks_that_agree_takes_their_stack},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
