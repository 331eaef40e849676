/* The thread states' model (cpu_thread_states, docs/cpu.md "Thread states"), below the views
 * that read them (stats' thread_state_sum, analyze's host part): a sampled thread's blocked
 * and preempted time inside optional time windows, a row's state_ns spread evenly over the row
 * (a merged row holds some running time too), and the thread's sampled life. */
#ifndef LANTERN_MODEL_THREAD_STATES_H
#define LANTERN_MODEL_THREAD_STATES_H

#include <sqlite3.h>
#include <stdint.h>

#include "model/cpu_profile.h"

/* One thread's states; zero it before the first thread_states_add. */
struct thread_state_sum {
    double blocked_ns, preempted_ns; /* inside the windows */
    int64_t switches;                /* switch-outs of the rows overlapping the windows */
};

/* Whether the database holds thread states (the table exists and has rows). */
int thread_states_present(sqlite3 *db);

/* Adds the states of thread (threads.id) inside windows (NULL: all of them; sorted,
 * disjoint) to s. 0 or -EIO (the database's error). */
int thread_states_add(sqlite3 *db, int64_t thread, const struct cpu_windows *windows,
                      struct thread_state_sum *s);

/* The thread's sampled life: from its first record (threads.start_ns, a sample, a state) to
 * its last (a sample, a state's end), into *start and *end. 0 or -EIO. */
int thread_states_life(sqlite3 *db, int64_t thread, int64_t *start, int64_t *end);

#endif
