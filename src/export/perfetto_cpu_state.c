/* The thread states' part of the Perfetto trace (-t cpu's context switches,
 * cpu_thread_states): each row a slice "Blocked" or "Preempted" on a "Thread state" child
 * track of its thread, category "thread_state", with the switch-outs merged into it and its
 * time off the CPU as debug annotations. A thread's rows do not overlap; nesting is kept only
 * against a damaged database's. docs/export.md. */
#include "export/perfetto_writer.h"

#include <errno.h>
#include <string.h>

int perfetto_cpu_thread_states(struct perfetto_writer *w);

int perfetto_cpu_thread_states(struct perfetto_writer *w)
{
    static const char sql[] = "SELECT thread_id, start_ns, end_ns, state, switches, state_ns"
                              " FROM cpu_thread_states ORDER BY thread_id, start_ns, end_ns DESC";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        uint64_t start = perfetto_thread_slice(
            w, &nest, st, PERFETTO_STATE_TRACK(sqlite3_column_int64(st, 0)), "Thread state");
        const char *state = (const char *)sqlite3_column_text(st, 3);
        int preempted = state && !strcmp(state, "preempted");
        perfetto_event_name_text(w, preempted ? PERFETTO_SYNTHETIC_PREEMPTED
                                              : PERFETTO_SYNTHETIC_BLOCKED,
                                 preempted ? "Preempted" : "Blocked");
        perfetto_event_category(w, PERFETTO_CATEGORY_THREAD_STATE, "thread_state");
        perfetto_annotation_int(w, PF_ARG_SWITCHES, sqlite3_column_int64(st, 4));
        perfetto_annotation_int(w, PF_ARG_OFF_CPU_NS, sqlite3_column_int64(st, 5));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}
