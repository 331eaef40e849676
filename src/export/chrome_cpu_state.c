/* The thread states' part of the Chrome trace (-t cpu's context switches, cpu_thread_states):
 * each row a complete event "Blocked" or "Preempted" on its thread, category "thread_state",
 * with the switch-outs merged into it and its time off the CPU as args (a merged row holds
 * some running time too). Nothing is written for a session without states. docs/export.md. */
#include "export/chrome_writer.h"

#include <errno.h>

int chrome_cpu_thread_states(struct chrome_writer *w);

int chrome_cpu_thread_states(struct chrome_writer *w)
{
    static const char sql[] =
        "SELECT p.pid, t.tid, s.start_ns, s.end_ns,"
        " CASE s.state WHEN 'preempted' THEN 'Preempted' ELSE 'Blocked' END, s.switches,"
        " s.state_ns FROM cpu_thread_states s JOIN threads t ON t.id = s.thread_id"
        " JOIN processes p ON p.id = t.process_id ORDER BY s.thread_id, s.start_ns";
    sqlite3_stmt *st;
    int rc;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        chrome_write_thread_slice(w, st, "thread_state");
        fprintf(w->out, ", \"args\": {\"switches\": %lld, \"off_cpu_ns\": %lld}}",
                sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6));
    }
    return chrome_finish(st, rc);
}
