/* The CPU samples' part of the Chrome trace: each sample an instant event on its thread
 * (`"ph": "i"`, `"s": "t"`), named after the running function, with `"sf"` pointing at its
 * stack in the trace's top-level "stackFrames" (the Trace Event Format's stack frame
 * dictionary: one entry per cpu_callsites row, with its function, module and caller), which
 * chrome://tracing shows with the event. Perfetto's JSON importer reads the instant events and
 * skips the stacks: its flame graphs need the protobuf export (perfetto_cpu.c). Nothing is
 * written for a session without samples. docs/export.md. */
#include "export/chrome_writer.h"
#include "export/producers.h"
#include "model/cpu_profile.h"
#include "output/json.h"

#include <errno.h>

int chrome_cpu_events(struct chrome_writer *w);
int chrome_cpu_stack_frames(struct chrome_writer *w);

int chrome_cpu_events(struct chrome_writer *w)
{
    if (!cpu_profile_has_samples(w->db))
        return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db,
                           "SELECT p.pid, t.tid, s.ts_ns, c.id, f.name, f.module FROM cpu_samples s"
                           " JOIN threads t ON t.id = s.thread_id"
                           " JOIN processes p ON p.id = t.process_id"
                           " LEFT JOIN cpu_stacks k ON k.id = s.stack_id"
                           " LEFT JOIN cpu_callsites c ON c.id = k.callsite_id"
                           " LEFT JOIN cpu_frames f ON f.id = c.frame_id"
                           " ORDER BY s.thread_id, s.ts_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        chrome_event_begin(w);
        fputs("\"name\": ", w->out);
        if (sqlite3_column_type(st, 4) == SQLITE_NULL)
            fputs("\"[no user-space frame]\"", w->out);
        else
            chrome_write_text_column(w->out, st, 4);
        fprintf(w->out,
                ", \"cat\": \"cpu_sample\", \"ph\": \"i\", \"s\": \"t\", \"pid\": %lld,"
                " \"tid\": %lld, \"ts\": ",
                (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
        chrome_write_us(w, sqlite3_column_int64(st, 2));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
            fprintf(w->out, ", \"sf\": %lld, \"args\": {\"module\": ",
                    (long long)sqlite3_column_int64(st, 3));
            chrome_write_text_column(w->out, st, 5);
            putc('}', w->out);
        }
        putc('}', w->out);
    }
    return chrome_finish(st, step);
}

int chrome_cpu_stack_frames(struct chrome_writer *w)
{
    if (!cpu_profile_has_samples(w->db))
        return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db,
                           "SELECT c.id, c.parent_id, f.name, f.module FROM cpu_callsites c"
                           " JOIN cpu_frames f ON f.id = c.frame_id ORDER BY c.id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    fputs(", \"stackFrames\": {", w->out);
    int step, first = 1;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        fprintf(w->out, "%s\n\"%lld\": {\"name\": ", first ? "" : ",",
                (long long)sqlite3_column_int64(st, 0));
        first = 0;
        chrome_write_text_column(w->out, st, 2);
        fputs(", \"category\": ", w->out);
        chrome_write_text_column(w->out, st, 3);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            fprintf(w->out, ", \"parent\": \"%lld\"", (long long)sqlite3_column_int64(st, 1));
        putc('}', w->out);
    }
    fputs("}", w->out);
    return chrome_finish(st, step);
}
