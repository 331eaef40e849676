/* The GIL waits' model (cpu_gil_waits, docs/cpu.md "GIL waits"), below the views that read
 * them (stats' python_gil_sum, analyze's host part, the exports): a wait row is the interval
 * [ts_ns - duration_ns, ts_ns] of one Python thread, summed per thread inside optional time
 * windows, with the share of each Python function it waited in (the leaf of its stack). */
#ifndef LANTERN_MODEL_GIL_WAITS_H
#define LANTERN_MODEL_GIL_WAITS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "model/cpu_profile.h"

struct gil_function {
    int64_t frame_id; /* cpu_frames.id of the leaf; 0: a wait without a stack */
    int64_t ns;       /* its waits' time (inside the windows) */
    int64_t waits;
};

/* One thread's waits; zero it before the first gil_waits_add. */
struct gil_wait_sum {
    int64_t ns;    /* time waited, inside the windows */
    int64_t waits; /* rows overlapping the windows */
    struct gil_function *functions;
    size_t nfunctions, cap;
};

/* Whether the database holds GIL waits (the table exists and has rows). */
int gil_waits_present(sqlite3 *db);

/* Adds the waits of thread (threads.id) inside windows (NULL: all of them; sorted, disjoint)
 * to s. 0, -EIO (the database's error) or -ENOMEM. */
int gil_waits_add(sqlite3 *db, int64_t thread, const struct cpu_windows *windows,
                  struct gil_wait_sum *s);

/* Sorts s->functions by time, the longest first (then by frame id). */
void gil_wait_sum_sort(struct gil_wait_sum *s);
void gil_wait_sum_release(struct gil_wait_sum *s);

/* The time of [start, end) inside windows (sorted, disjoint); end - start without windows. */
int64_t gil_overlap(const struct cpu_windows *windows, int64_t start, int64_t end);

/* The windows of the NVTX ranges named `name` that thread started (nested or overlapping
 * instances merged; a range never ended runs to the session's end), into *start and *end
 * (malloc'd, the caller frees both). Returns the count, or -EIO / -ENOMEM. */
int64_t gil_range_windows(sqlite3 *db, const char *name, int64_t thread, int64_t **start,
                          int64_t **end);

#endif
