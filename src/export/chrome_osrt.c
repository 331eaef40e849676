/* The OS runtime calls' part of the Chrome trace (-t osrt): each call kept (osrt_calls) as a
 * complete event on its thread, category "osrt", with its return value, errno and, for a long
 * one, its caller's backtrace (frames joined by "<-", innermost first) as args. */
#include "export/chrome_writer.h"

int chrome_osrt_events(struct chrome_writer *w);

static void write_call(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_write_thread_slice(w, st, "osrt");
    fprintf(w->out, ", \"args\": {\"return\": %lld", sqlite3_column_int64(st, 5));
    if (sqlite3_column_type(st, 6) != SQLITE_NULL)
        fprintf(w->out, ", \"errno\": %lld", sqlite3_column_int64(st, 6));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
        fputs(", \"backtrace\": ", w->out);
        chrome_write_text_column(w->out, st, 7);
    }
    fputs("}}", w->out);
}

int chrome_osrt_events(struct chrome_writer *w)
{
    static const char sql[] =
        "SELECT p.pid, t.tid, o.start_ns, o.end_ns, s.value, o.ret, o.errno, b.value"
        " FROM osrt_calls o LEFT JOIN strings b ON b.id = o.backtrace_id"
        " JOIN threads t ON t.id = o.thread_id JOIN processes p ON p.id = t.process_id"
        " JOIN strings s ON s.id = o.name_id ORDER BY o.start_ns, o.id";
    return chrome_rows(w, sql, write_call);
}
