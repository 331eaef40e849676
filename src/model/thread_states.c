/* The thread states' model (thread_states.h): a thread's cpu_thread_states rows clipped to
 * time windows and summed per state. */
#include "model/thread_states.h"

#include "model/gil_waits.h"

#include <errno.h>
#include <string.h>

int thread_states_present(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM cpu_thread_states LIMIT 1", -1, &st, NULL) ==
        SQLITE_OK)
        has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

int thread_states_add(sqlite3 *db, int64_t thread, const struct cpu_windows *windows,
                      struct thread_state_sum *s)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT start_ns, end_ns, state, state_ns, switches"
                           " FROM cpu_thread_states WHERE thread_id = ? ORDER BY start_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, thread);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
        int64_t inside = gil_overlap(windows, start, end);
        if (inside <= 0 || end <= start)
            continue;
        double ns = (double)sqlite3_column_int64(st, 3) * (double)inside / (double)(end - start);
        const char *state = (const char *)sqlite3_column_text(st, 2);
        if (state && !strcmp(state, "preempted"))
            s->preempted_ns += ns;
        else
            s->blocked_ns += ns;
        s->switches += sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -EIO;
}

int thread_states_life(sqlite3 *db, int64_t thread, int64_t *start, int64_t *end)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT min(s), max(e) FROM ("
                           " SELECT start_ns AS s, start_ns AS e FROM threads WHERE id = ?1"
                           " UNION ALL SELECT min(ts_ns), max(ts_ns) FROM cpu_samples"
                           " WHERE thread_id = ?1"
                           " UNION ALL SELECT min(start_ns), max(end_ns) FROM cpu_thread_states"
                           " WHERE thread_id = ?1)",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, thread);
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
    if (rc == 0) {
        *start = sqlite3_column_int64(st, 0);
        *end = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc;
}
