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
     .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56},
    {.minor = 11, .thread_frame = 56, .cframe_frame = 8, .frame_back = 48, .frame_code = 32,
     .frame_instr = 56, .frame_owner = 69, .code_filename = 112, .code_name = 120,
     .code_first_instr = 184, .code_first_traceable = 168, .str_length = 16, .str_state = 32,
     .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56},
    {.minor = 12, .thread_frame = 56, .cframe_frame = 0, .frame_back = 8, .frame_code = 0,
     .frame_instr = 56, .frame_owner = 70, .code_filename = 112, .code_name = 120,
     .code_first_instr = 192, .code_first_traceable = 176, .str_length = 16, .str_state = 32,
     .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48},
    {.minor = 13, .thread_frame = 72, .cframe_frame = -1, .frame_back = 8, .frame_code = 0,
     .frame_instr = 56, .frame_owner = 70, .code_filename = 112, .code_name = 120,
     .code_first_instr = 200, .code_first_traceable = 184, .str_length = 16, .str_state = 32,
     .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48},
};

#endif
