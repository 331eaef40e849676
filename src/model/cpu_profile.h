/* The CPU samples' model (-t cpu, docs/cpu.md), below every view that reads them (analyze's
 * host activity, the HTML page's flame graphs): the session's callsites and frames in memory,
 * whether a frame is a library's or the program's own, and samples counted per callsite in
 * time windows. Callsites are already merged by path (each is its caller's callsite and a
 * frame), so counts per leaf callsite summed up the tree are a flame graph. */
#ifndef LANTERN_MODEL_CPU_PROFILE_H
#define LANTERN_MODEL_CPU_PROFILE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct cpu_profile {
    size_t callsites;        /* ids 1 .. callsites - 1; 0 stands for "no user-space frame" */
    int64_t *parent, *frame; /* by callsite: the caller's callsite (0: outermost), its frame */
    int32_t *depth;          /* by callsite (0 outermost) */
    int64_t *by_depth;       /* callsite ids, outermost first: a caller before its callees */
    size_t frames;           /* ids 1 .. frames - 1 */
    char **name, **module;   /* by frame */
    char **file;             /* by frame: a Python function's file (cpu_frames.file), else NULL */
    unsigned char *library;  /* by frame: 1 a library's or the interpreter's, 0 the program's */
    size_t stacks;
    int64_t *stack_callsite; /* by cpu_stacks.id: its leaf callsite (0: none) */
};

/* Windows of time, sorted by start and disjoint (half-open [start, end)). */
struct cpu_windows {
    const int64_t *start, *end;
    size_t count;
};

/* Whether the database holds CPU samples (the tables exist and have rows). */
int cpu_profile_has_samples(sqlite3 *db);

/* Loads the callsites, frames and stacks; 0, -EIO (the database's error),
 * -ENOMEM or -EBADMSG (ids past 2^28). */
int cpu_profile_load(sqlite3 *db, struct cpu_profile *p);
void cpu_profile_release(struct cpu_profile *p);

/* Whether a frame is a library's, the interpreter's or the system's rather than the
 * program's own (a shared object, the loader, [vdso], a Python file under site-packages or
 * the standard library, the python executable); module is a native frame's module or a Python
 * function's file path (its module column is only the file's base name); the table is in
 * cpu_profile.c. */
int cpu_frame_is_library(const char *name, const char *module);

/* The nearest frame to the leaf, from callsite up, that is not a library's; 0 when none. */
int64_t cpu_profile_user_frame(const struct cpu_profile *p, int64_t callsite);

/* Adds to counts[leaf callsite] (counts has p->callsites slots; slot 0: samples without a
 * frame) each sample of thread (threads.id) taken inside windows (NULL: every sample).
 * Returns the samples counted, or -EIO on a database error. */
int64_t cpu_profile_count(sqlite3 *db, const struct cpu_profile *p, int64_t thread,
                          const struct cpu_windows *windows, int64_t *counts);

/* Turns per-leaf counts into per-callsite totals in place: each callsite's count becomes the
 * samples whose stack holds it (its own plus its callees'). */
void cpu_profile_totals(const struct cpu_profile *p, int64_t *counts);

#endif
