/* Putting Python frames into native CPU stacks: the interpreter's frames recognised, the
 * Python stack spliced where its evaluation calls are, a sample joined with its thread's
 * nearest look. See import_cpu_python.h; the rule's reasons are in docs/cpu.md ("Python"). */
#include "db/import_cpu_python.h"

#include <stdlib.h>
#include <string.h>

enum cpu_frame_kind cpu_python_frame_kind(const char *function, const char *module,
                                          const char *interpreter)
{
    if (!interpreter || !*interpreter)
        return CPU_FRAME_NATIVE;
    /* 3.10-3.13 evaluate every Python frame in this one function */
    if (strcmp(function, "_PyEval_EvalFrameDefault") == 0)
        return CPU_FRAME_EVAL;
    /* 3.12's perf trampolines (-X perf) name the same Python frames again */
    if (strcmp(module, interpreter) == 0 ||
        (strcmp(module, "[jit]") == 0 && strncmp(function, "py::", 4) == 0))
        return CPU_FRAME_INTERPRETER;
    /* what the interpreter calls for its own work: malloc, memcpy, TLS look-ups (3.12's
     * shared libpython calls __tls_get_addr for its thread state, ~10 % of a pure-Python loop) */
    static const char *const runtime[] = {"libc.so", "ld-linux", "libm.so", "libpthread.so",
                                          "[vdso]"};
    for (size_t i = 0; i < sizeof runtime / sizeof runtime[0]; i++)
        if (strncmp(module, runtime[i], strlen(runtime[i])) == 0)
            return CPU_FRAME_RUNTIME;
    return CPU_FRAME_NATIVE;
}

/* The end (exclusive) of the segment that starts at `from`. */
static size_t segment_end(const uint8_t *entry, size_t m, size_t from)
{
    size_t i = from;
    while (i < m && !entry[i])
        i++;
    return i < m ? i + 1 : m;
}

static size_t put(int64_t *out, size_t cap, size_t used, const int64_t *frames, size_t count)
{
    for (size_t i = 0; i < count && used < cap; i++)
        out[used++] = frames[i];
    return used;
}

size_t cpu_python_splice(const int64_t *native, const uint8_t *kind, size_t n,
                         const int64_t *python, const uint8_t *entry, size_t m, int64_t *out,
                         size_t cap)
{
    size_t used = 0, next = 0; /* next: the first Python frame not yet placed */
    size_t rest_at = SIZE_MAX; /* where the leftover segments go */
    size_t first = 0;          /* the C runtime's frames at the leaf end, called by Python */
    while (first < n && kind[first] == CPU_FRAME_RUNTIME)
        first++;
    if (first < n && kind[first] == CPU_FRAME_NATIVE)
        first = 0;
    for (size_t i = first; i < n; i++) {
        if (kind[i] == CPU_FRAME_NATIVE || kind[i] == CPU_FRAME_RUNTIME) {
            used = put(out, cap, used, &native[i], 1);
        } else if (kind[i] == CPU_FRAME_EVAL && next < m) {
            size_t end = segment_end(entry, m, next);
            used = put(out, cap, used, &python[next], end - next);
            next = end;
            rest_at = used;
        } else if (rest_at == SIZE_MAX) {
            rest_at = used; /* the first interpreter frame: the Python code runs from here */
        }
    }
    if (next == m)
        return used;
    if (rest_at == SIZE_MAX || rest_at > used)
        rest_at = used;
    size_t extra = m - next;
    if (extra > cap - rest_at)
        extra = cap - rest_at;
    size_t moved = used - rest_at;
    if (moved > cap - rest_at - extra)
        moved = cap - rest_at - extra;
    memmove(&out[rest_at + extra], &out[rest_at], moved * sizeof *out);
    memcpy(&out[rest_at], &python[next], extra * sizeof *out);
    return rest_at + extra + moved;
}

static int look_order(const void *a, const void *b)
{
    const struct cpu_py_look *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

void cpu_python_sort_looks(struct cpu_py_look *looks, size_t n)
{
    if (n > 1)
        qsort(looks, n, sizeof *looks, look_order);
}

const struct cpu_py_look *cpu_python_nearest(const struct cpu_py_look *looks, size_t n,
                                             uint32_t tid, uint64_t ts, uint64_t within)
{
    size_t lo = 0, hi = n; /* the first look at (tid, >= ts) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (looks[mid].tid < tid || (looks[mid].tid == tid && looks[mid].ts < ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct cpu_py_look *best = NULL;
    uint64_t best_gap = within + 1;
    if (lo < n && looks[lo].tid == tid && looks[lo].ts - ts < best_gap) {
        best = &looks[lo];
        best_gap = looks[lo].ts - ts;
    }
    if (lo > 0 && looks[lo - 1].tid == tid && ts - looks[lo - 1].ts < best_gap)
        best = &looks[lo - 1];
    /* farther: the looks on either side agree (the sampler was late, the stack the same) */
    if (!best && lo > 0 && lo < n && looks[lo - 1].tid == tid && looks[lo].tid == tid &&
        looks[lo].ts - looks[lo - 1].ts <= CPU_PYTHON_BRACKET_NS &&
        looks[lo].stack == looks[lo - 1].stack)
        best = &looks[lo - 1];
    return best;
}
