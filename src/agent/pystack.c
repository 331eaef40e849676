/* The launching code of a kernel, as text: the Python stack read through CPython's C API
 * (resolved with dlsym at first use, so a non-Python process costs one failed lookup) or
 * the native return addresses named by dladdr. See pystack.h for the rules. */
#include "agent/pystack.h"

#include <dlfcn.h>
#include <execinfo.h>
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

/* ---- CPython, through dlsym ---------------------------------------------------------- */

/* Opaque here: only passed back to the interpreter. */
typedef struct py_object py_object;

static struct {
    int (*is_initialized)(void);
    py_object *(*this_thread_state)(void);    /* PyGILState_GetThisThreadState: NULL if none */
    py_object *(*current_thread_state)(void); /* the one holding the GIL (3.12+: attached) */
    py_object *(*err_occurred)(void);
    void (*err_clear)(void);
    py_object *(*get_frame)(void);             /* borrowed */
    py_object *(*frame_get_code)(py_object *); /* new reference (3.9+) */
    py_object *(*frame_get_back)(py_object *); /* new reference (3.9+) */
    int (*frame_get_line)(py_object *);
    py_object *(*get_attr)(py_object *, py_object *); /* new reference */
    py_object *(*intern)(const char *);               /* new reference */
    const char *(*as_utf8)(py_object *);              /* borrowed buffer */
    void (*dec_ref)(py_object *);
    /* "co_filename", "co_name": made once (under the GIL) and kept, so a lookup does not
     * build its key each time */
    py_object *co_filename, *co_name;
} py;

enum { PY_UNRESOLVED, PY_RESOLVED, PY_ABSENT };
static int py_state = PY_UNRESOLVED;

/* Racing threads resolve the same addresses; the state is published after the pointers. */
static int py_resolve(void)
{
    int state = __atomic_load_n(&py_state, __ATOMIC_ACQUIRE);
    if (state != PY_UNRESOLVED)
        return state == PY_RESOLVED;
#define PY_FIND(field, symbol) ((*(void **)&py.field = dlsym(RTLD_DEFAULT, symbol)) != NULL)
    /* the unchecked getter is public from 3.13, private but exported from 3.5 to 3.12 */
    int found =
        (PY_FIND(current_thread_state, "PyThreadState_GetUnchecked") ||
         PY_FIND(current_thread_state, "_PyThreadState_UncheckedGet")) &&
        PY_FIND(is_initialized, "Py_IsInitialized") &&
        PY_FIND(this_thread_state, "PyGILState_GetThisThreadState") &&
        PY_FIND(err_occurred, "PyErr_Occurred") && PY_FIND(err_clear, "PyErr_Clear") &&
        PY_FIND(get_frame, "PyEval_GetFrame") && PY_FIND(frame_get_code, "PyFrame_GetCode") &&
        PY_FIND(frame_get_back, "PyFrame_GetBack") &&
        PY_FIND(frame_get_line, "PyFrame_GetLineNumber") && PY_FIND(get_attr, "PyObject_GetAttr") &&
        PY_FIND(intern, "PyUnicode_InternFromString") && PY_FIND(as_utf8, "PyUnicode_AsUTF8") &&
        PY_FIND(dec_ref, "Py_DecRef");
#undef PY_FIND
    __atomic_store_n(&py_state, found ? PY_RESOLVED : PY_ABSENT, __ATOMIC_RELEASE);
    return found;
}

/* A str attribute of a code object as UTF-8 into out; "?" when it cannot be read. */
static void py_code_string(py_object *code, py_object *attribute, char *out, size_t out_len)
{
    snprintf(out, out_len, "?");
    py_object *value = py.get_attr(code, attribute);
    const char *text = value ? py.as_utf8(value) : NULL;
    if (text)
        snprintf(out, out_len, "%s", text);
    else
        py.err_clear(); /* only our own failure can be pending: we declined otherwise */
    if (value)
        py.dec_ref(value);
}

/* Appends "file:line:function" at *used (with the separator unless first), if the frame is
 * user code or `keep_library` says to write it anyway; a folded frame costs one attribute
 * read. Returns 1 for a user frame, 0 for a library frame, -1 if the frame has no code. */
static int py_put_frame(py_object *frame, int keep_library, int first, char *out, size_t out_len,
                        size_t *used)
{
    char filename[512], function[256];
    py_object *code = py.frame_get_code(frame);
    if (!code)
        return -1;
    py_code_string(code, py.co_filename, filename, sizeof filename);
    int user = !pystack_is_library_file(filename);
    if (user || keep_library) {
        py_code_string(code, py.co_name, function, sizeof function);
        int written =
            snprintf(out + *used, out_len - *used, "%s%s:%d:%s", first ? "" : PYSTACK_SEPARATOR,
                     filename, py.frame_get_line(frame), function);
        if (written > 0)
            *used += (size_t)written < out_len - *used ? (size_t)written : out_len - *used - 1;
    }
    py.dec_ref(code);
    return user;
}

/* The calling thread holds the GIL: its own thread state is the one running. (Not
 * PyGILState_Check, which answers 1 on every thread once sub-interpreters exist.) */
static int py_thread_holds_gil(void)
{
    py_object *mine = py.this_thread_state();
    return mine && py.current_thread_state() == mine;
}

/* The attribute names, made by the first walk: the GIL it holds serialises their creation. */
static int py_make_names(void)
{
    if (!py.co_filename)
        py.co_filename = py.intern("co_filename");
    if (!py.co_name)
        py.co_name = py.intern("co_name");
    if (py.co_filename && py.co_name)
        return 1;
    py.err_clear();
    return 0;
}

size_t pystack_python(char *out, size_t out_len)
{
    if (out_len < 2 || !py_resolve() || !py.is_initialized() || !py_thread_holds_gil() ||
        py.err_occurred() || !py_make_names())
        return 0;
    out[0] = 0;
    size_t used = 0;
    int users = 0, provisional = 0; /* provisional: out holds the innermost, a library frame */
    py_object *frame = py.get_frame(), *owned = NULL;
    for (int depth = 0; frame && depth < PYSTACK_MAX_WALK && users < PYSTACK_USER_FRAMES; depth++) {
        /* a user frame found after a provisional one takes its place */
        size_t end = provisional ? 0 : used;
        int user = py_put_frame(frame, depth == 0, users == 0, out, out_len, &end);
        if (user == 1) {
            used = end;
            users++;
            provisional = 0;
        } else if (user == 0 && depth == 0) {
            used = end;
            provisional = 1;
        }
        py_object *back = py.frame_get_back(frame);
        if (owned)
            py.dec_ref(owned);
        frame = owned = back;
    }
    if (owned)
        py.dec_ref(owned);
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
