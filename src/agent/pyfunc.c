/* The hot path of `lantern profile --python-functions` in C: the callbacks Python calls at
 * each function start and end (sys.monitoring on 3.12+, a C profile function on 3.9-3.11)
 * look the code object up in a table and push or pop the function's NVTX range, with no
 * Python-level call and no ctypes call per event. src/agent/python/lantern_pyfunctions.py
 * sets it up (lantern_pyfunc_start, through ctypes.PyDLL, so with the GIL held) and decides,
 * once per code object, whether it is recorded (its classifier, called from here). The
 * CPython API is found with dlsym in the running interpreter: the agent links no libpython,
 * and a process where the lookup fails keeps the pure-Python path. Every callback runs with
 * the GIL held, which is what guards the table. */
#include "agent/agent.h"
#include "trace/format.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct py_object py_object; /* PyObject, opaque here */
typedef ssize_t py_ssize_t;
typedef py_object *(*py_fastcall)(py_object *self, py_object *const *args, py_ssize_t nargs);

struct py_method_def { /* PyMethodDef: stable ABI */
    const char *name;
    py_fastcall method;
    int flags;
    const char *doc;
};
#define PY_METH_FASTCALL 0x0080
enum { PY_TRACE_CALL = 0, PY_TRACE_RETURN = 3 }; /* PyTrace_CALL, PyTrace_RETURN */

/* The agent's own NVTX entry points (nvtxDomainRangePushEx/Pop), handed over by the setup. */
typedef int (*nvtx_push_fn)(void *domain, const void *attributes);
typedef int (*nvtx_pop_fn)(void *domain);

static struct {
    void (*incref)(py_object *);
    void (*decref)(py_object *);
    py_object *(*call2)(py_object *, ...); /* PyObject_CallFunctionObjArgs */
    void *(*as_pointer)(py_object *);      /* PyLong_AsVoidPtr */
    py_object *(*new_function)(struct py_method_def *, py_object *, py_object *);
    py_object *(*err_occurred)(void);
    void (*err_clear)(void);
    void (*set_profile)(int (*)(py_object *, py_object *, int, py_object *), py_object *);
    py_object *(*frame_code)(py_object *); /* PyFrame_GetCode, 3.9+ */
    py_object *none, *disable;             /* Py_None, sys.monitoring.DISABLE (or None) */
    py_object *classify;                   /* classify(code, frame) -> address or None */
    nvtx_push_fn push;
    nvtx_pop_fn pop;
    void *domain;
} pyfunc;

/* ---- code object -> attributes (NULL: not recorded), open addressing ------------------------ */

/* A program that makes code objects forever (exec or compile per request) would grow the table,
 * and keep every code alive, without bound. The classifier (lantern_pyfunctions.py) records at
 * most RECORDED_MAX (2^16) codes and counts the matching codes it does not record for that
 * (TRACE_TABLE_PYTHON_FUNCTIONS); the codes not recorded here (3.9-3.11: a cache that only
 * saves their classification) are all forgotten when they reach PYFUNC_UNRECORDED_MAX, as
 * the classifier's are. */
#define PYFUNC_UNRECORDED_MAX (1u << 14)

struct pyfunc_slot {
    py_object *code; /* a strong reference: a freed code's address could be reused */
    const void *attributes;
};
static struct pyfunc_slot *pyfunc_table;
static size_t pyfunc_capacity, pyfunc_count; /* capacity: a power of two */
static size_t pyfunc_unrecorded;              /* of pyfunc_count, those with no attributes */
static const struct pyfunc_slot pyfunc_not_kept; /* a code not recorded, not kept (3.12+) */

static inline size_t pyfunc_hash(const py_object *code)
{
    return (size_t)(((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull);
}

static inline struct pyfunc_slot *pyfunc_find(const py_object *code)
{
    size_t mask = pyfunc_capacity - 1;
    for (size_t i = pyfunc_hash(code) & mask;; i = (i + 1) & mask)
        if (pyfunc_table[i].code == code || !pyfunc_table[i].code)
            return &pyfunc_table[i];
}

/* Moves the table into one of capacity slots, keeping the codes not recorded or not. */
static int pyfunc_rehash(size_t capacity, int keep_unrecorded)
{
    struct pyfunc_slot *old = pyfunc_table, *table = calloc(capacity, sizeof *table);
    if (!table)
        return -ENOMEM;
    size_t old_capacity = pyfunc_capacity;
    pyfunc_table = table;
    pyfunc_capacity = capacity;
    for (size_t i = 0; i < old_capacity; i++) {
        if (!old[i].code)
            continue;
        if (old[i].attributes || keep_unrecorded) {
            *pyfunc_find(old[i].code) = old[i];
            continue;
        }
        pyfunc.decref(old[i].code);
        pyfunc_count--;
        pyfunc_unrecorded--;
    }
    free(old);
    return 0;
}

/* Room for one more code: 0, or -ENOMEM. */
static int pyfunc_make_room(void)
{
    if (pyfunc_unrecorded >= PYFUNC_UNRECORDED_MAX)
        return pyfunc_rehash(pyfunc_capacity, 0);
    if ((pyfunc_count + 1) * 2 > pyfunc_capacity)
        return pyfunc_rehash(pyfunc_capacity * 2, 1);
    return 0;
}

/* The slot of a code, classified now if it is new (once per code object, in Python); NULL
 * when the classifier failed or memory ran out (the event is then left alone). A code not
 * recorded is kept only with keep_unrecorded (3.12+ disables its start event instead: it gets
 * pyfunc_not_kept). */
static const struct pyfunc_slot *pyfunc_lookup(py_object *code, py_object *frame,
                                               int keep_unrecorded)
{
    struct pyfunc_slot *slot = pyfunc_find(code);
    if (__builtin_expect(slot->code != NULL, 1))
        return slot;
    if (pyfunc_make_room() < 0)
        return NULL;
    py_object *answer = pyfunc.call2(pyfunc.classify, code, frame ? frame : pyfunc.none, NULL);
    if (!answer) {
        pyfunc.err_clear(); /* never let our failure become the program's exception */
        return NULL;
    }
    const void *attributes = answer == pyfunc.none ? NULL : pyfunc.as_pointer(answer);
    pyfunc.decref(answer);
    if (pyfunc.err_occurred()) {
        pyfunc.err_clear();
        return NULL;
    }
    if (!attributes && !keep_unrecorded)
        return &pyfunc_not_kept;
    slot = pyfunc_find(code); /* the classifier may have run Python that came back here */
    if (slot->code)
        return slot;
    pyfunc.incref(code);
    slot->code = code;
    slot->attributes = attributes;
    pyfunc_count++;
    pyfunc_unrecorded += !attributes;
    return slot;
}

static py_object *pyfunc_none(void)
{
    pyfunc.incref(pyfunc.none);
    return pyfunc.none;
}

/* ---- sys.monitoring callbacks (3.12+): (code, offset[, value]) ------------------------------ */

static py_object *pyfunc_on_start(py_object *self, py_object *const *args, py_ssize_t nargs)
{
    (void)self;
    if (nargs < 1)
        return pyfunc_none();
    const struct pyfunc_slot *slot = pyfunc_lookup(args[0], NULL, 0);
    if (slot && !slot->attributes) { /* not recorded: never called here again for it */
        pyfunc.incref(pyfunc.disable);
        return pyfunc.disable;
    }
    if (slot)
        pyfunc.push(pyfunc.domain, slot->attributes);
    return pyfunc_none();
}

/* PY_RESUME (local to recorded codes) and PY_THROW (global): a generator runs again. */
static py_object *pyfunc_on_resume(py_object *self, py_object *const *args, py_ssize_t nargs)
{
    (void)self;
    if (nargs >= 1) {
        struct pyfunc_slot *slot = pyfunc_find(args[0]);
        if (slot->code && slot->attributes)
            pyfunc.push(pyfunc.domain, slot->attributes);
    }
    return pyfunc_none();
}

/* PY_RETURN, PY_YIELD (local to recorded codes) and PY_UNWIND (global). */
static py_object *pyfunc_on_end(py_object *self, py_object *const *args, py_ssize_t nargs)
{
    (void)self;
    if (nargs >= 1) {
        struct pyfunc_slot *slot = pyfunc_find(args[0]);
        if (slot->code && slot->attributes)
            pyfunc.pop(pyfunc.domain);
    }
    return pyfunc_none();
}

static struct py_method_def pyfunc_methods[] = {
    {"lantern_on_start", pyfunc_on_start, PY_METH_FASTCALL, NULL},
    {"lantern_on_resume", pyfunc_on_resume, PY_METH_FASTCALL, NULL},
    {"lantern_on_end", pyfunc_on_end, PY_METH_FASTCALL, NULL},
};

/* ---- the profile function (3.9-3.11): every Python call and return ------------------------- */

static int pyfunc_profile(py_object *obj, py_object *frame, int what, py_object *arg)
{
    (void)obj, (void)arg;
    if (what != PY_TRACE_CALL && what != PY_TRACE_RETURN)
        return 0;
    py_object *code = pyfunc.frame_code(frame); /* a new reference; the frame keeps one */
    pyfunc.decref(code);
    const struct pyfunc_slot *slot =
        what == PY_TRACE_CALL ? pyfunc_lookup(code, frame, 1) : pyfunc_find(code);
    if (!slot || !slot->code || !slot->attributes)
        return 0;
    if (what == PY_TRACE_CALL)
        pyfunc.push(pyfunc.domain, slot->attributes);
    else
        pyfunc.pop(pyfunc.domain);
    return 0;
}

/* ---- setup, from lantern_pyfunctions.py -------------------------------------------------- */

#define PYFUNC_API __attribute__((visibility("default")))

static int pyfunc_resolve(void)
{
    static const struct {
        const char *name;
        void **where;
    } symbols[] = {
        {"Py_IncRef", (void **)&pyfunc.incref},
        {"Py_DecRef", (void **)&pyfunc.decref},
        {"PyObject_CallFunctionObjArgs", (void **)&pyfunc.call2},
        {"PyLong_AsVoidPtr", (void **)&pyfunc.as_pointer},
        {"PyCFunction_NewEx", (void **)&pyfunc.new_function},
        {"PyErr_Occurred", (void **)&pyfunc.err_occurred},
        {"PyErr_Clear", (void **)&pyfunc.err_clear},
        {"PyEval_SetProfile", (void **)&pyfunc.set_profile},
        {"_Py_NoneStruct", (void **)&pyfunc.none},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++)
        if (!(*symbols[i].where = dlsym(RTLD_DEFAULT, symbols[i].name)))
            return -ENOSYS;
    *(void **)&pyfunc.frame_code = dlsym(RTLD_DEFAULT, "PyFrame_GetCode"); /* 3.9+ */
    return 0;
}

/* Sets the hot path up: push and pop are the agent's nvtxDomainRangePushEx/Pop for domain;
 * classify(code, frame) returns the address of a push's nvtxEventAttributes_t (kept alive by
 * the caller) or None; disable is sys.monitoring.DISABLE (None before 3.12). Returns 0, -EINVAL
 * (started already, or an argument missing), -ENOSYS when this interpreter's API cannot be
 * found or -ENOMEM (the caller keeps its pure-Python path). */
PYFUNC_API int lantern_pyfunc_start(void *push, void *pop, void *domain, py_object *classify,
                                    py_object *disable)
{
    if (pyfunc.classify || !push || !pop || !classify)
        return -EINVAL;
    int rc = pyfunc_resolve();
    if (rc < 0)
        return rc;
    pyfunc_table = calloc(1024, sizeof *pyfunc_table);
    if (!pyfunc_table)
        return -ENOMEM;
    pyfunc_capacity = 1024;
    pyfunc.push = (nvtx_push_fn)push;
    pyfunc.pop = (nvtx_pop_fn)pop;
    pyfunc.domain = domain;
    pyfunc.incref(classify);
    pyfunc.classify = classify;
    pyfunc.disable = disable ? disable : pyfunc.none;
    pyfunc.incref(pyfunc.disable);
    return 0;
}

/* The classifier did not record a code that matched, RECORDED_MAX codes recorded
 * already (lantern_pyfunctions.py, either path): counted into the Lost events line. */
PYFUNC_API void lantern_pyfunc_not_kept(void)
{
    agent_table_cut(TRACE_TABLE_PYTHON_FUNCTIONS);
}

/* The sys.monitoring callbacks as Python callables: i = 0 start, 1 resume, 2 end. A new
 * reference, or NULL. */
PYFUNC_API py_object *lantern_pyfunc_callback(int i)
{
    if (!pyfunc.classify || i < 0 || i >= (int)(sizeof pyfunc_methods / sizeof pyfunc_methods[0]))
        return NULL;
    return pyfunc.new_function(&pyfunc_methods[i], NULL, NULL);
}

/* Installs the C profile function on the calling thread (3.9-3.11); sys.getprofile() then
 * returns shown (the equivalent Python profile function, so that code which saves and restores
 * the profile function keeps the recording). Returns 0, -EINVAL before lantern_pyfunc_start, or
 * -ENOSYS without PyFrame_GetCode. */
PYFUNC_API int lantern_pyfunc_profile_thread(py_object *shown)
{
    if (!pyfunc.classify)
        return -EINVAL;
    if (!pyfunc.frame_code)
        return -ENOSYS;
    pyfunc.set_profile(pyfunc_profile, shown);
    return 0;
}
