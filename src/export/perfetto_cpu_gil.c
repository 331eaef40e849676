/* The GIL waits' part of the Perfetto trace (the Python sampler of -t cpu, cpu_gil_waits):
 * each wait a slice "GIL wait" on a "Python GIL" child track of its thread, category
 * "python_gil", from the time its look stands for (ts_ns - duration_ns) to the look, with the
 * Python function it waited in as a debug annotation. A thread's waits do not overlap; nesting
 * is kept only against a damaged database's. docs/export.md. */
#include "export/perfetto_writer.h"

#include <errno.h>

int perfetto_cpu_gil_waits(struct perfetto_writer *w);

int perfetto_cpu_gil_waits(struct perfetto_writer *w)
{
    static const char sql[] =
        "SELECT g.thread_id, g.ts_ns - g.duration_ns, g.ts_ns, f.name FROM cpu_gil_waits g"
        " LEFT JOIN cpu_stacks k ON k.id = g.stack_id"
        " LEFT JOIN cpu_callsites c ON c.id = k.callsite_id"
        " LEFT JOIN cpu_frames f ON f.id = c.frame_id"
        " ORDER BY g.thread_id, g.ts_ns - g.duration_ns, g.ts_ns DESC";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        uint64_t start = perfetto_thread_slice(
            w, &nest, st, PERFETTO_GIL_TRACK(sqlite3_column_int64(st, 0)), "Python GIL");
        perfetto_event_name_text(w, PERFETTO_SYNTHETIC_GIL_WAIT, "GIL wait");
        perfetto_event_category(w, PERFETTO_CATEGORY_PYTHON_GIL, "python_gil");
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            perfetto_annotation_string(w, PF_ARG_FUNCTION, (const char *)sqlite3_column_text(st, 3),
                                       (size_t)sqlite3_column_bytes(st, 3));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}
