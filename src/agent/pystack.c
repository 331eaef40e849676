/* The launching code of a kernel, as text: the Python stack read from the interpreter's own
 * structures (found with dlsym at first use, so a non-Python process costs one failed lookup)
 * or, outside Python, the native return addresses named by dladdr. See pystack.h. */
#include "agent/pystack.h"
#include "agent/pystack_layout.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- rules --------------------------------------------------------------------------- */

int pystack_is_library_file(const char *filename)
{
    static const char *const library_marks[] = {"/site-packages/", "/dist-packages/",
                                                "/lib/python3", "/torch/"};
    if (strncmp(filename, "<frozen ", 8) == 0)
        return 1;
    for (size_t i = 0; i < sizeof library_marks / sizeof library_marks[0]; i++)
        if (strstr(filename, library_marks[i]))
            return 1;
    return 0;
}

int pystack_is_launch_api(const char *name)
{
    static const char *const prefixes[] = {"cudaLaunch", "cuLaunch", "cudaGraphLaunch",
                                           "cuGraphLaunch"};
    if (!name || strstr(name, "HostFunc"))
        return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* ---- CPython, read from memory ------------------------------------------------------ */

/* The launching thread usually runs without the GIL (PyTorch releases it around op dispatch),
 * so nothing here calls into the interpreter except two pure functions: the thread's own
 * state comes from PyGILState_GetThisThreadState (a thread-local read, valid while the GIL is
 * released), and PyCode_Addr2Line reads a code object's line table. Frames, code objects and
 * strings are read at the offsets of pystack_layout.h: the thread is inside this call, in C
 * code, so its frames cannot change under us, and code objects outlive their frames. */

static struct {
    int (*is_initialized)(void);
    const char *(*this_thread_state)(void); /* NULL on a thread Python has never seen */
    int (*addr2line)(const void *code, int byte_offset);
    const void *code_type, *str_type; /* &PyCode_Type, &PyUnicode_Type */
    const struct pystack_layout *layout;  /* NULL: a version whose layout is not known */
} py;

enum { PY_UNRESOLVED, PY_READABLE, PY_UNREADABLE, PY_ABSENT };
static int py_state = PY_UNRESOLVED;

/* 3.minor of the running interpreter: Py_Version (3.11+) or Py_GetVersion()'s "3.10.13 (...";
 * -1 when it is not Python 3 (a value's "none"). */
static int py_running_minor(void)
{
    const unsigned long *hex_version = dlsym(RTLD_DEFAULT, "Py_Version");
    if (hex_version)
        return *hex_version >> 24 == 3 ? (int)(*hex_version >> 16 & 0xff) : -1;
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    int major, minor;
    if (!get_version || sscanf(get_version(), "%d.%d", &major, &minor) != 2 || major != 3)
        return -1;
    return minor;
}

static const struct pystack_layout *py_find_layout(int minor)
{
    for (size_t i = 0; i < sizeof pystack_layouts / sizeof pystack_layouts[0]; i++)
        if (pystack_layouts[i].minor == minor)
            return &pystack_layouts[i];
    return NULL;
}

/* A failed dlsym leaves its message allocated in the calling thread until its next dlerror
 * or its end. The writer thread, which looks first (cpu_python.c), may still be ending when a
 * sanitizer's leak check runs at the process's exit, which then reports the message as a leak
 * of the program's (a non-Python program's failed "Py_IsInitialized"): taken twice, it is
 * freed now. */
static void py_forget_dl_error(void)
{
    if (dlerror())
        dlerror();
}

/* Racing threads resolve the same addresses; the state is published after the pointers. */
static int py_resolve(void)
{
    int state = __atomic_load_n(&py_state, __ATOMIC_ACQUIRE);
    if (state != PY_UNRESOLVED)
        return state;
    *(void **)&py.is_initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (!py.is_initialized) {
        py_forget_dl_error();
        __atomic_store_n(&py_state, PY_ABSENT, __ATOMIC_RELEASE);
        return PY_ABSENT;
    }
    *(void **)&py.this_thread_state = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    *(void **)&py.addr2line = dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    py.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    py.str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    py.layout = py_find_layout(py_running_minor());
    py_forget_dl_error();
    state = py.this_thread_state && py.addr2line && py.code_type && py.str_type && py.layout
                ? PY_READABLE
                : PY_UNREADABLE;
    __atomic_store_n(&py_state, state, __ATOMIC_RELEASE);
    return state;
}

int pystack_in_python(void)
{
    return py_resolve() != PY_ABSENT && py.is_initialized();
}

const struct pystack_layout *pystack_running_layout(int *minor)
{
    int state = py_resolve();
    *minor = state == PY_ABSENT ? -1 : py_running_minor();
    return state == PY_READABLE && py.is_initialized() ? py.layout : NULL;
}

static const char *py_pointer_at(const char *base, short offset)
{
    const char *value;
    memcpy(&value, base + offset, sizeof value);
    return value;
}

/* Py_TYPE(object): ob_type follows ob_refcnt in every supported (GIL) build */
static int py_has_type(const char *object, const void *type)
{
    return object && py_pointer_at(object, sizeof(ptrdiff_t)) == type;
}

/* A str as UTF-8 into out: compact ASCII from its inline characters, other compact strings
 * from their cached UTF-8 copy; "?" when there is none (making one would allocate). */
static void py_copy_string(const char *str, char *out, size_t out_len)
{
    const struct pystack_layout *l = py.layout;
    snprintf(out, out_len, "?");
    if (!py_has_type(str, py.str_type))
        return;
    uint32_t state;
    memcpy(&state, str + l->str_state, sizeof state);
    if (!(state & PYSTACK_STR_COMPACT))
        return;
    ptrdiff_t length;
    const char *text;
    if (state & PYSTACK_STR_ASCII) {
        memcpy(&length, str + l->str_length, sizeof length);
        text = str + l->str_ascii_data;
    } else {
        memcpy(&length, str + l->str_utf8_length, sizeof length);
        text = py_pointer_at(str, l->str_utf8);
    }
    if (!text || length < 0)
        return;
    size_t kept = (size_t)length < out_len - 1 ? (size_t)length : out_len - 1;
    memcpy(out, text, kept);
    out[kept] = 0;
}

/* A frame's code object, or NULL for a frame that Python's own walk (frame.f_back) skips:
 * the C stack's shim frames and frames not yet past their first traceable instruction. */
static const char *py_frame_code(const char *frame)
{
    const struct pystack_layout *l = py.layout;
    const char *code = py_pointer_at(frame, l->frame_code);
    if (l->frame_owner < 0)
        return py_has_type(code, py.code_type) ? code : NULL;
    char owner = frame[l->frame_owner];
    if (owner == PYSTACK_OWNED_BY_CSTACK || !py_has_type(code, py.code_type))
        return NULL;
    int first_traceable;
    memcpy(&first_traceable, code + l->code_first_traceable, sizeof first_traceable);
    const char *instr = py_pointer_at(frame, l->frame_instr);
    const char *first_instr = code + l->code_first_instr;
    if (owner != PYSTACK_OWNED_BY_GENERATOR &&
        instr < first_instr + (ptrdiff_t)first_traceable * PYSTACK_CODE_UNIT)
        return NULL;
    return code;
}

/* The line a frame is at: its last instruction's byte offset in the code, through the line
 * table (3.10's f_lasti counts code units; later versions keep a pointer). */
static int py_frame_line(const char *frame, const char *code)
{
    const struct pystack_layout *l = py.layout;
    ptrdiff_t byte_offset;
    if (l->code_first_instr < 0) {
        int last_index;
        memcpy(&last_index, frame + l->frame_instr, sizeof last_index);
        byte_offset = (ptrdiff_t)last_index * PYSTACK_CODE_UNIT;
    } else {
        byte_offset = py_pointer_at(frame, l->frame_instr) - (code + l->code_first_instr);
    }
    return py.addr2line(code, (int)byte_offset);
}

/* Appends "file:line:function" at *used (with the separator unless first), if the frame is
 * user code or `keep_library` says to write it anyway. Returns 1 for a user frame, 0 for a
 * library frame. */
static int py_put_frame(const char *frame, const char *code, int keep_library, int first,
                        char *out, size_t out_len, size_t *used)
{
    char filename[512], function[256];
    py_copy_string(py_pointer_at(code, py.layout->code_filename), filename, sizeof filename);
    int user = !pystack_is_library_file(filename);
    if (user || keep_library) {
        py_copy_string(py_pointer_at(code, py.layout->code_name), function, sizeof function);
        int written =
            snprintf(out + *used, out_len - *used, "%s%s:%d:%s", first ? "" : PYSTACK_SEPARATOR,
                     filename, py_frame_line(frame, code), function);
        if (written > 0)
            *used += (size_t)written < out_len - *used ? (size_t)written : out_len - *used - 1;
    }
    return user;
}

/* The thread's innermost frame, or NULL when it runs no Python code. */
static const char *py_innermost_frame(void)
{
    const char *thread = py.this_thread_state();
    if (!thread)
        return NULL;
    const char *frame = py_pointer_at(thread, py.layout->thread_frame);
    if (frame && py.layout->cframe_frame >= 0)
        frame = py_pointer_at(frame, py.layout->cframe_frame);
    return frame;
}

size_t pystack_python(char *out, size_t out_len)
{
    if (out_len < 2 || py_resolve() != PY_READABLE || !py.is_initialized())
        return 0;
    out[0] = 0;
    size_t used = 0;
    int users = 0, depth = 0, provisional = 0; /* provisional: out holds a library frame */
    const char *frame = py_innermost_frame();
    /* skipped (shim) frames are bounded too, so a damaged chain cannot keep us here */
    for (int seen = 0; frame && seen < 4 * PYSTACK_MAX_WALK && depth < PYSTACK_MAX_WALK &&
                       users < PYSTACK_USER_FRAMES;
         seen++, frame = py_pointer_at(frame, py.layout->frame_back)) {
        const char *code = py_frame_code(frame);
        if (!code)
            continue;
        /* a user frame found after a provisional one takes its place */
        size_t end = provisional ? 0 : used;
        int user = py_put_frame(frame, code, depth == 0, users == 0, out, out_len, &end);
        if (user) {
            used = end;
            users++;
            provisional = 0;
        } else if (depth == 0) {
            used = end;
            provisional = 1;
        }
        depth++;
    }
    return used;
}

/* ---- native -------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int native_is_skipped(const char *object)
{
    static const char *const skipped[] = {"libcuda", "libcupti", "liblantern-agent"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
        if (strncmp(object, skipped[i], strlen(skipped[i])) == 0)
            return 1;
    return 0;
}

size_t pystack_native(char *out, size_t out_len, int skip)
{
    /* Enough for the agent's, CUPTI's and the driver's frames and then ours; unwinding is
     * the cost of this path, so deeper frames are not asked for. */
    void *addresses[32];
    int count = backtrace(addresses, 32);
    size_t used = 0;
    int kept = 0, first = 1;
    if (out_len < 2)
        return 0;
    out[0] = 0;
    /* Our caller's frame: found by its return address, since a sanitizer's interceptor of
     * backtrace() adds frames of its own above ours. */
    void *return_address = __builtin_return_address(0);
    for (int i = 0; i < count; i++)
        if (addresses[i] == return_address) {
            first = i;
            break;
        }
    for (int i = first + skip; i < count && kept < PYSTACK_NATIVE_FRAMES; i++) {
        Dl_info info;
        if (!dladdr(addresses[i], &info) || !info.dli_fname)
            continue;
        const char *object = base_name(info.dli_fname);
        if (kept == 0 && native_is_skipped(object))
            continue;
        const char *separator = kept ? PYSTACK_SEPARATOR : "";
        uintptr_t address = (uintptr_t)addresses[i];
        int written =
            info.dli_sname
                ? snprintf(out + used, out_len - used, "%s%s+0x%zx(%s)", separator, info.dli_sname,
                           (size_t)(address - (uintptr_t)info.dli_saddr), object)
                : snprintf(out + used, out_len - used, "%s%s+0x%zx", separator, object,
                           (size_t)(address - (uintptr_t)info.dli_fbase));
        if (written <= 0)
            break;
        used += (size_t)written < out_len - used ? (size_t)written : out_len - used - 1;
        kept++;
    }
    return used;
}
