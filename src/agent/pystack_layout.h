/* Where CPython 3.10-3.13 (64-bit Linux, default GIL build; checked on x86-64) keeps what the
 * stack walker reads without the GIL: the thread's innermost frame, each frame's caller, code
 * and instruction, a code object's names, a str's characters. Checked against offsetof() on
 * each version's own headers by tests/pytrace/pystack_layout_check.c. */
#ifndef LANTERN_AGENT_PYSTACK_LAYOUT_H
#define LANTERN_AGENT_PYSTACK_LAYOUT_H

/* Byte offsets; -1 where the version has no such field. */
struct pystack_layout {
    int minor; /* 3.minor */
    /* PyThreadState: 3.10 `frame` (PyFrameObject *), 3.11/3.12 `cframe` (_PyCFrame *),
     * 3.13 `current_frame` (_PyInterpreterFrame *) */
    short thread_frame;
    /* _PyCFrame.current_frame (3.11/3.12); -1: thread_frame is the frame itself */
    short cframe_frame;
    /* the frame: 3.10 PyFrameObject f_back / f_code / f_lasti (int, in code units);
     * 3.11/3.12 _PyInterpreterFrame previous / f_code / prev_instr (pointer);
     * 3.13 _PyInterpreterFrame previous / f_executable / instr_ptr (pointer) */
    short frame_back, frame_code, frame_instr;
    short frame_owner; /* _PyInterpreterFrame.owner (char), 3.11+ */
    /* PyCodeObject co_filename, co_name; co_code_adaptive (the first instruction, 3.11+);
     * _co_firsttraceable (int, in code units, 3.11+) */
    short code_filename, code_name, code_first_instr, code_first_traceable;
    /* PyASCIIObject length, state (bit-field word); sizeof(PyASCIIObject), where a compact
     * ASCII string's characters start; PyCompactUnicodeObject utf8_length, utf8 */
    short str_length, str_state, str_ascii_data, str_utf8_length, str_utf8;
    /* For the CPU samples' walk of every thread (cpu_python.c): PyInterpreterState's first
     * thread state (3.10 tstate_head, later threads.head); PyThreadState next, native_thread_id
     * (-1 in 3.10) and thread_id (the pthread_t); 3.11's _PyInterpreterFrame.is_entry (bool);
     * PyCodeObject co_firstlineno (int), co_qualname (-1 in 3.10) */
    short interp_threads, thread_next, thread_native_id, thread_pthread;
    short frame_is_entry, code_first_line, code_qualname;
    /* the GIL (struct _gil_runtime_state): at _PyRuntime + runtime_gil (3.10, 3.11) or at
     * the pointer at PyInterpreterState + interp_gil (3.12+); its last_holder (a thread
     * state), locked (int) and size */
    short runtime_gil, interp_gil, gil_last_holder, gil_locked, gil_size;
};

/* PyASCIIObject.state bits, the same in 3.10-3.13: interned:2, kind:3, compact:1, ascii:1 */
#define PYSTACK_STR_COMPACT 0x20u
#define PYSTACK_STR_ASCII 0x40u

/* _PyInterpreterFrame.owner values (pycore_frame.h, 3.11+; CSTACK from 3.12) */
#define PYSTACK_OWNED_BY_GENERATOR 1
#define PYSTACK_OWNED_BY_CSTACK 3

/* _Py_CODEUNIT is two bytes in every supported version. */
#define PYSTACK_CODE_UNIT 2

static const struct pystack_layout pystack_layouts[] = {
    {.minor = 10, .thread_frame = 24, .cframe_frame = -1, .frame_back = 24, .frame_code = 32,
     .frame_instr = 96, .frame_owner = -1, .code_filename = 104, .code_name = 112,
     .code_first_instr = -1, .code_first_traceable = -1, .str_length = 16, .str_state = 32,
     .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
     .interp_threads = 8, .thread_next = 8, .thread_native_id = -1, .thread_pthread = 176,
     .frame_is_entry = -1, .code_first_line = 40, .code_qualname = -1, .runtime_gil = 352,
     .interp_gil = -1, .gil_last_holder = 8, .gil_locked = 16, .gil_size = 208},
    {.minor = 11, .thread_frame = 56, .cframe_frame = 8, .frame_back = 48, .frame_code = 32,
     .frame_instr = 56, .frame_owner = 69, .code_filename = 112, .code_name = 120,
     .code_first_instr = 184, .code_first_traceable = 168, .str_length = 16, .str_state = 32,
     .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
     .interp_threads = 16, .thread_next = 8, .thread_native_id = 160, .thread_pthread = 152,
     .frame_is_entry = 68, .code_first_line = 72, .code_qualname = 128, .runtime_gil = 360,
     .interp_gil = -1, .gil_last_holder = 8, .gil_locked = 16, .gil_size = 208},
    {.minor = 12, .thread_frame = 56, .cframe_frame = 0, .frame_back = 8, .frame_code = 0,
     .frame_instr = 56, .frame_owner = 70, .code_filename = 112, .code_name = 120,
     .code_first_instr = 192, .code_first_traceable = 176, .str_length = 16, .str_state = 32,
     .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48,
     .interp_threads = 72, .thread_next = 8, .thread_native_id = 144, .thread_pthread = 136,
     .frame_is_entry = -1, .code_first_line = 68, .code_qualname = 128, .runtime_gil = -1,
     .interp_gil = 384, .gil_last_holder = 8, .gil_locked = 16, .gil_size = 208},
    {.minor = 13, .thread_frame = 72, .cframe_frame = -1, .frame_back = 8, .frame_code = 0,
     .frame_instr = 56, .frame_owner = 70, .code_filename = 112, .code_name = 120,
     .code_first_instr = 200, .code_first_traceable = 184, .str_length = 16, .str_state = 32,
     .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48,
     .interp_threads = 7344, .thread_next = 8, .thread_native_id = 160, .thread_pthread = 152,
     .frame_is_entry = -1, .code_first_line = 68, .code_qualname = 128, .runtime_gil = -1,
     .interp_gil = 16, .gil_last_holder = 8, .gil_locked = 16, .gil_size = 208},
};

#endif
