/* The rules that put Python frames into native CPU stacks (docs/cpu.md, "Python"): which
 * native frames are the interpreter's, where a thread's Python stack goes in a native stack,
 * and which look of the Python sampler a sample is joined with. Pure functions of their
 * arguments: import_cpu.c stores and interns, tests/cpu/test_cpu_python_splice.c checks. */
#ifndef LANTERN_DB_IMPORT_CPU_PYTHON_H
#define LANTERN_DB_IMPORT_CPU_PYTHON_H

#include <stddef.h>
#include <stdint.h>

enum cpu_frame_kind {
    CPU_FRAME_NATIVE = 0,      /* any other code: kept */
    CPU_FRAME_EVAL = 1,        /* _PyEval_EvalFrameDefault: where its Python frames go */
    CPU_FRAME_INTERPRETER = 2, /* the rest of the interpreter's code: left out */
    CPU_FRAME_RUNTIME = 3,     /* the C runtime (libc, ld.so, libm, [vdso]): left out where
                                  the interpreter called it, kept under other code */
};

/* The kind of a native frame, from its function and module (base names) and the base name
 * of the file holding the interpreter (NULL: the process runs no Python). */
enum cpu_frame_kind cpu_python_frame_kind(const char *function, const char *module,
                                          const char *interpreter);

/* Writes into out (room for cap) the stack, leaf first, that a native stack (n frames, leaf
 * first, with their kinds) and the thread's Python stack (m frames, innermost first; entry[i]
 * set on the outermost frame of each C-level evaluation call) make together:
 *  - native frames are kept, except the interpreter's, and C runtime frames at the leaf end
 *    that the interpreter called (or whose caller is not known: a stack cut short);
 *  - each eval frame, leaf to root, takes the next segment of Python frames (the frames one
 *    evaluation call runs), innermost segment first;
 *  - segments left over (a native stack cut short: no frame pointers) go where the last segment
 *    went, or where the first interpreter frame was, or, with none, at the root end.
 * Returns the frames written. */
size_t cpu_python_splice(const int64_t *native, const uint8_t *kind, size_t n,
                         const int64_t *python, const uint8_t *entry, size_t m, int64_t *out,
                         size_t cap);

/* A look of the Python sampler at one thread; sorted by tid then time. */
struct cpu_py_look {
    uint32_t tid;
    uint64_t ts;
    uint32_t stack; /* index + 1 into the file's Python stacks; 0: no Python frame */
};

void cpu_python_sort_looks(struct cpu_py_look *looks, size_t n);

/* The nearest look is taken this far at least: on a loaded machine the sampler thread waits for
 * a CPU too (2 vCPUs at load average 14: a third of the samples had no look within 2 ms, and
 * the hot function's share fell by 6 points; the nearest look is right more often than the
 * interpreter's frames are useful). */
#define CPU_PYTHON_WINDOW_MIN_NS 10000000u

/* Two looks at a thread this close that saw the same stack vouch for the samples between. */
#define CPU_PYTHON_BRACKET_NS 20000000u /* 20 ms: four GIL switch intervals */

/* The look at thread tid nearest to ts, no further than `within` ns away, else the look
 * before ts where the looks on either side of it saw the same stack and are no more than
 * CPU_PYTHON_BRACKET_NS apart (a sampler that was late); NULL if none. */
const struct cpu_py_look *cpu_python_nearest(const struct cpu_py_look *looks, size_t n,
                                             uint32_t tid, uint64_t ts, uint64_t within);

#endif
