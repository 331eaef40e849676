/* The OS runtime calls' part of the Perfetto trace (-t osrt): each call kept (osrt_calls) as a
 * slice on an "OS runtime" child track of its thread (as nsys shows them), category "osrt",
 * with its return value, errno and, for a long one, its caller's backtrace (osrt_calls.
 * backtrace_id, frames joined by "<-") as debug annotations. Calls of one thread never overlap;
 * nesting is kept only against a damaged database's. */
#include "export/perfetto_writer.h"

#include <errno.h>

int perfetto_osrt_events(struct perfetto_writer *w);

int perfetto_osrt_events(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT o.thread_id, o.start_ns, o.end_ns, o.name_id, o.ret, o.errno,"
                      " b.value FROM osrt_calls o LEFT JOIN strings b ON b.id = o.backtrace_id"
                      " ORDER BY thread_id, start_ns, end_ns DESC";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        uint64_t start = perfetto_thread_slice(
            w, &nest, st, PERFETTO_OSRT_TRACK(sqlite3_column_int64(st, 0)), "OS runtime");
        perfetto_event_name_id(w, sqlite3_column_int64(st, 3));
        perfetto_event_category(w, PERFETTO_CATEGORY_OSRT, "osrt");
        perfetto_annotation_int(w, PF_ARG_RETURN, sqlite3_column_int64(st, 4));
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            perfetto_annotation_int(w, PF_ARG_ERRNO, sqlite3_column_int64(st, 5));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            perfetto_annotation_string(w, PF_ARG_BACKTRACE, (const char *)sqlite3_column_text(st, 6),
                                       (size_t)sqlite3_column_bytes(st, 6));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}
