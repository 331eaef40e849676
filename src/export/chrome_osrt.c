/* The OS runtime calls' part of the Chrome trace (-t osrt): each call kept (osrt_calls) as a
 * complete event on its thread, category "osrt", with its return value and errno as args. */
#include "export/chrome_writer.h"

#include <errno.h>

int chrome_osrt_events(struct chrome_writer *w);

int chrome_osrt_events(struct chrome_writer *w)
{
    static const char sql[] =
        "SELECT p.pid, t.tid, o.start_ns, o.end_ns, s.value, o.ret, o.errno FROM osrt_calls o"
        " JOIN threads t ON t.id = o.thread_id JOIN processes p ON p.id = t.process_id"
        " JOIN strings s ON s.id = o.name_id ORDER BY o.start_ns, o.id";
    sqlite3_stmt *st;
    int rc;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long long start = sqlite3_column_int64(st, 2), end = sqlite3_column_int64(st, 3);
        chrome_event_begin(w);
        fputs("\"name\": ", w->out);
        chrome_write_text_column(w->out, st, 4);
        fprintf(w->out, ", \"cat\": \"osrt\", \"ph\": \"X\", \"pid\": %lld, \"tid\": %lld, \"ts\": ",
                sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
        chrome_write_us(w, start);
        fputs(", \"dur\": ", w->out);
        chrome_write_duration_us(w->out, chrome_span_ns(start, end));
        fprintf(w->out, ", \"args\": {\"return\": %lld", sqlite3_column_int64(st, 5));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            fprintf(w->out, ", \"errno\": %lld", sqlite3_column_int64(st, 6));
        fputs("}}", w->out);
    }
    return chrome_finish(st, rc);
}
