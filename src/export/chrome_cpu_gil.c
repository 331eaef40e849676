/* The GIL waits' part of the Chrome trace (the Python sampler of -t cpu, cpu_gil_waits): each
 * wait a complete event "GIL wait" on its thread, category "python_gil", from the time its
 * look stands for (ts_ns - duration_ns) to the look, with the Python function it waited in as
 * an arg. Nothing is written for a session without waits. docs/export.md. */
#include "export/chrome_writer.h"

int chrome_cpu_gil_waits(struct chrome_writer *w);

static void write_wait(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_write_thread_slice(w, st, "python_gil");
    fputs(", \"args\": {", w->out);
    if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
        fputs("\"function\": ", w->out);
        chrome_write_text_column(w->out, st, 5);
    }
    fputs("}}", w->out);
}

int chrome_cpu_gil_waits(struct chrome_writer *w)
{
    static const char sql[] =
        "SELECT p.pid, t.tid, g.ts_ns - g.duration_ns, g.ts_ns, 'GIL wait', f.name"
        " FROM cpu_gil_waits g JOIN threads t ON t.id = g.thread_id"
        " JOIN processes p ON p.id = t.process_id"
        " LEFT JOIN cpu_stacks k ON k.id = g.stack_id"
        " LEFT JOIN cpu_callsites c ON c.id = k.callsite_id"
        " LEFT JOIN cpu_frames f ON f.id = c.frame_id ORDER BY g.thread_id, g.ts_ns";
    return chrome_rows(w, sql, write_wait);
}
