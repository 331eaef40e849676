/* The stack walker's offset table (src/agent/pystack_layout.h) against the real CPython
 * headers of one version: built once per installed 3.10-3.13 with that version's include
 * directory (internal headers included), it compares each entry with offsetof(). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#if PY_MINOR_VERSION >= 11
#include "internal/pycore_frame.h"
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#include <stddef.h>

#include "agent/pystack_layout.h"
#include "harness.h"

static const struct pystack_layout *this_version(void)
{
    for (size_t i = 0; i < sizeof pystack_layouts / sizeof pystack_layouts[0]; i++)
        if (pystack_layouts[i].minor == PY_MINOR_VERSION)
            return &pystack_layouts[i];
    return NULL;
}

static void frames_are_where_the_table_says(void)
{
    const struct pystack_layout *l = this_version();
    ASSERT(PY_MAJOR_VERSION == 3 && l);
#if PY_MINOR_VERSION == 10
    ASSERT_EQ(l->thread_frame, offsetof(PyThreadState, frame));
    ASSERT_EQ(l->cframe_frame, -1);
    ASSERT_EQ(l->frame_back, offsetof(PyFrameObject, f_back));
    ASSERT_EQ(l->frame_code, offsetof(PyFrameObject, f_code));
    ASSERT_EQ(l->frame_instr, offsetof(PyFrameObject, f_lasti));
    ASSERT_EQ(l->frame_owner, -1);
    ASSERT_EQ(l->code_first_instr, -1);
    ASSERT_EQ(l->code_first_traceable, -1);
#else
#if PY_MINOR_VERSION <= 12
    ASSERT_EQ(l->thread_frame, offsetof(PyThreadState, cframe));
    ASSERT_EQ(l->cframe_frame, offsetof(_PyCFrame, current_frame));
    ASSERT_EQ(l->frame_code, offsetof(_PyInterpreterFrame, f_code));
    ASSERT_EQ(l->frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
    ASSERT_EQ(l->thread_frame, offsetof(PyThreadState, current_frame));
    ASSERT_EQ(l->cframe_frame, -1);
    ASSERT_EQ(l->frame_code, offsetof(_PyInterpreterFrame, f_executable));
    ASSERT_EQ(l->frame_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    ASSERT_EQ(PYSTACK_OWNED_BY_CSTACK, FRAME_OWNED_BY_CSTACK);
#endif
    ASSERT_EQ(l->frame_back, offsetof(_PyInterpreterFrame, previous));
    ASSERT_EQ(l->frame_owner, offsetof(_PyInterpreterFrame, owner));
    ASSERT_EQ(sizeof(((_PyInterpreterFrame *)0)->owner), 1);
    ASSERT_EQ(PYSTACK_OWNED_BY_GENERATOR, FRAME_OWNED_BY_GENERATOR);
    ASSERT_EQ(l->code_first_instr, offsetof(PyCodeObject, co_code_adaptive));
    ASSERT_EQ(l->code_first_traceable, offsetof(PyCodeObject, _co_firsttraceable));
#endif
    ASSERT_EQ(PYSTACK_CODE_UNIT, sizeof(_Py_CODEUNIT));
}

static void code_names_are_where_the_table_says(void)
{
    const struct pystack_layout *l = this_version();
    ASSERT(l);
    ASSERT_EQ(l->code_filename, offsetof(PyCodeObject, co_filename));
    ASSERT_EQ(l->code_name, offsetof(PyCodeObject, co_name));
}

static unsigned str_state_word(PyASCIIObject *s)
{
    unsigned word;
    memcpy(&word, (char *)s + offsetof(PyASCIIObject, state), sizeof word);
    return word;
}

static void strings_are_read_as_the_table_says(void)
{
    const struct pystack_layout *l = this_version();
    ASSERT(l);
    ASSERT_EQ(l->str_length, offsetof(PyASCIIObject, length));
    ASSERT_EQ(l->str_state, offsetof(PyASCIIObject, state));
    ASSERT_EQ(l->str_ascii_data, sizeof(PyASCIIObject));
    ASSERT_EQ(l->str_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));
    ASSERT_EQ(l->str_utf8, offsetof(PyCompactUnicodeObject, utf8));
    /* the bit-fields, set one at a time in a zeroed header */
    PyASCIIObject s;
    memset(&s, 0, sizeof s);
    s.state.compact = 1;
    ASSERT_EQ(str_state_word(&s), PYSTACK_STR_COMPACT);
    memset(&s, 0, sizeof s);
    s.state.ascii = 1;
    ASSERT_EQ(str_state_word(&s), PYSTACK_STR_ASCII);
}

/* What the CPU samples' sampler reads of every thread (src/agent/cpu_python.c). */
static void threads_and_the_gil_are_where_the_table_says(void)
{
    const struct pystack_layout *l = this_version();
    ASSERT(l);
    ASSERT_EQ(l->thread_next, offsetof(PyThreadState, next));
    ASSERT_EQ(l->thread_pthread, offsetof(PyThreadState, thread_id));
    ASSERT_EQ(l->code_first_line, offsetof(PyCodeObject, co_firstlineno));
    ASSERT_EQ(l->gil_last_holder, offsetof(struct _gil_runtime_state, last_holder));
    ASSERT_EQ(l->gil_locked, offsetof(struct _gil_runtime_state, locked));
    ASSERT_EQ(l->gil_size, sizeof(struct _gil_runtime_state));
#if PY_MINOR_VERSION == 10
    ASSERT_EQ(l->interp_threads, offsetof(PyInterpreterState, tstate_head));
    ASSERT_EQ(l->thread_native_id, -1);
#else
    ASSERT_EQ(l->interp_threads, offsetof(PyInterpreterState, threads.head));
    ASSERT_EQ(l->thread_native_id, offsetof(PyThreadState, native_thread_id));
    ASSERT_EQ(l->code_qualname, offsetof(PyCodeObject, co_qualname));
#endif
#if PY_MINOR_VERSION == 11
    ASSERT_EQ(l->frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
#else
    ASSERT_EQ(l->frame_is_entry, -1);
#endif
#if PY_MINOR_VERSION <= 11
    ASSERT_EQ(l->runtime_gil, offsetof(_PyRuntimeState, ceval.gil));
    ASSERT_EQ(l->interp_gil, -1);
#else
    ASSERT_EQ(l->runtime_gil, -1);
    ASSERT_EQ(l->interp_gil, offsetof(PyInterpreterState, ceval.gil));
#endif
}

static const struct test_case tests[] = {
    {"threads_and_the_gil_are_where_the_table_says", threads_and_the_gil_are_where_the_table_says},
    {"frames_are_where_the_table_says", frames_are_where_the_table_says},
    {"code_names_are_where_the_table_says", code_names_are_where_the_table_says},
    {"strings_are_read_as_the_table_says", strings_are_read_as_the_table_says},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
