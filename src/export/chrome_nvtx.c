/* The NVTX part of the Chrome trace-event export: push/pop ranges as complete events, start/end
 * ranges as async events, marks as instant events, on the OS pid and tid of the thread that
 * made them, with the domain as the category and color, payload and category as args. */
#include "export/chrome_writer.h"
#include "output/json.h"

#include <errno.h>

/* The columns every NVTX event query returns first, in this order. */
#define EVENT_COLUMNS                                                                              \
    "coalesce(n.value, ''), coalesce(ds.value, 'nvtx'), r.color, r.payload, cs.value, "            \
    "r.category, p.pid"
#define EVENT_JOINS                                                                                \
    "JOIN processes p ON p.id = r.process_id LEFT JOIN strings n ON n.id = r.name_id "             \
    "LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id "         \
    "LEFT JOIN categories c ON c.domain_id = r.domain_id AND c.category = r.category "             \
    "LEFT JOIN strings cs ON cs.id = c.name_id "
enum {
    COL_NAME,
    COL_DOMAIN,
    COL_COLOR,
    COL_PAYLOAD,
    COL_CATEGORY_NAME,
    COL_CATEGORY,
    COL_PID,
    COL_NEXT
};

/* "name", "cat", "pid" of an event. */
static void write_event_head(struct chrome_writer *w, sqlite3_stmt *st, const char *ph)
{
    fputs("\"name\": ", w->out);
    chrome_write_text_column(w->out, st, COL_NAME);
    fputs(", \"cat\": ", w->out);
    chrome_write_text_column(w->out, st, COL_DOMAIN);
    fprintf(w->out, ", \"ph\": \"%s\", \"pid\": %lld", ph, sqlite3_column_int64(st, COL_PID));
}

/* "args": color as #RRGGBB, payload, category, and whether the range never ended. */
static void write_event_args(struct chrome_writer *w, sqlite3_stmt *st, int unended)
{
    FILE *out = w->out;
    fputs(", \"args\": {", out);
    const char *sep = "";
    if (sqlite3_column_type(st, COL_COLOR) != SQLITE_NULL) {
        fprintf(out, "\"color\": \"#%06llx\"",
                (unsigned long long)sqlite3_column_int64(st, COL_COLOR) & 0xFFFFFFu);
        sep = ", ";
    }
    int payload = sqlite3_column_type(st, COL_PAYLOAD);
    if (payload == SQLITE_INTEGER)
        fprintf(out, "%s\"payload\": %lld", sep, sqlite3_column_int64(st, COL_PAYLOAD));
    else if (payload == SQLITE_FLOAT) {
        fprintf(out, "%s\"payload\": ", sep);
        json_write_double(out, sqlite3_column_double(st, COL_PAYLOAD));
    }
    if (payload == SQLITE_INTEGER || payload == SQLITE_FLOAT)
        sep = ", ";
    if (sqlite3_column_type(st, COL_CATEGORY_NAME) != SQLITE_NULL) {
        fprintf(out, "%s\"category\": ", sep);
        chrome_write_text_column(out, st, COL_CATEGORY_NAME);
        sep = ", ";
    } else if (sqlite3_column_int64(st, COL_CATEGORY)) {
        fprintf(out, "%s\"category\": %lld", sep, sqlite3_column_int64(st, COL_CATEGORY));
        sep = ", ";
    }
    if (unended)
        fprintf(out, "%s\"unended\": true", sep);
    fputs("}}", out);
}

/* Push/pop ranges as complete events; a range that never ended lasts to its process's end
 * (or the session's) and says so in its args. */
static int write_push_pop(struct chrome_writer *w, long long session_end)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT " EVENT_COLUMNS ", t.tid, r.start_ns, r.end_ns, coalesce(p.end_ns, ?) "
        "FROM ranges r " EVENT_JOINS "JOIN threads t ON t.id = r.start_thread_id "
        "WHERE r.style = 0 ORDER BY r.start_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, session_end);
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long start = sqlite3_column_int64(st, COL_NEXT + 1);
        int unended = sqlite3_column_type(st, COL_NEXT + 2) == SQLITE_NULL;
        long long end = sqlite3_column_int64(st, unended ? COL_NEXT + 3 : COL_NEXT + 2);
        chrome_event_begin(w);
        write_event_head(w, st, "X");
        fprintf(w->out, ", \"tid\": %lld, \"ts\": ", sqlite3_column_int64(st, COL_NEXT));
        chrome_write_us(w, start);
        fputs(", \"dur\": ", w->out);
        chrome_write_duration_us(w->out, chrome_span_ns(start, end));
        write_event_args(w, st, unended);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* Start/end ranges as async begin/end pairs (id = range id, cat = domain); they may end on
 * another thread than they began. */
static int write_start_end(struct chrome_writer *w, long long session_end)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT " EVENT_COLUMNS ", t.tid, coalesce(e.tid, t.tid), r.start_ns, "
        "coalesce(r.end_ns, p.end_ns, ?), r.end_ns IS NULL, r.id FROM ranges r " EVENT_JOINS
        "JOIN threads t ON t.id = r.start_thread_id LEFT JOIN threads e ON e.id = r.end_thread_id "
        "WHERE r.style = 1 ORDER BY r.start_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, session_end);
    while (sqlite3_step(st) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(st, COL_NEXT + 5);
        for (int end = 0; end < 2; end++) {
            chrome_event_begin(w);
            write_event_head(w, st, end ? "e" : "b");
            fprintf(w->out, ", \"id\": %lld, \"tid\": %lld, \"ts\": ", id,
                    sqlite3_column_int64(st, COL_NEXT + end));
            chrome_write_us(w, sqlite3_column_int64(st, COL_NEXT + 2 + end));
            if (end)
                fputs("}", w->out);
            else
                write_event_args(w, st, sqlite3_column_int(st, COL_NEXT + 4));
        }
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* Marks as thread-scoped instant events. */
static int write_marks(struct chrome_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT " EVENT_COLUMNS ", t.tid, r.ts_ns FROM marks r " EVENT_JOINS
                      "JOIN threads t ON t.id = r.thread_id ORDER BY r.ts_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        chrome_event_begin(w);
        write_event_head(w, st, "i");
        fprintf(w->out,
                ", \"s\": \"t\", \"tid\": %lld, \"ts\": ", sqlite3_column_int64(st, COL_NEXT));
        chrome_write_us(w, sqlite3_column_int64(st, COL_NEXT + 1));
        write_event_args(w, st, 0);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

int chrome_nvtx_events(struct chrome_writer *w)
{
    if (write_push_pop(w, w->session_end) < 0 || write_start_end(w, w->session_end) < 0 ||
        write_marks(w) < 0)
        return -EIO;
    return 0;
}
