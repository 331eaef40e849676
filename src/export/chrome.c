/* The Chrome trace-event export (the JSON Object Format of the Trace Event Format that
 * Perfetto and chrome://tracing read): pid = OS pid, tid = OS tid, ts in µs relative to the
 * session start with ns precision. NVTX rows here; CUDA and NVML rows in chrome_<source>.c. */
#include "export/export.h"
#include "export/json.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void chrome_event_begin(struct chrome_writer *w)
{
    fputs(w->events++ ? ",\n{" : "\n{", w->out);
}

/* Timestamps come from a database that a damaged trace may have filled with any 64-bit
 * value: differences are taken in unsigned arithmetic, where they cannot overflow. */
static void write_us(FILE *out, int negative, unsigned long long ns)
{
    fprintf(out, "%s%llu.%03llu", negative ? "-" : "", ns / 1000, ns % 1000);
}

void chrome_write_duration_us(FILE *out, long long ns)
{
    write_us(out, ns < 0, ns < 0 ? 0ull - (unsigned long long)ns : (unsigned long long)ns);
}

void chrome_write_us(struct chrome_writer *w, long long ns)
{
    unsigned long long a = (unsigned long long)ns, start = (unsigned long long)w->start_ns;
    write_us(w->out, ns < w->start_ns, ns < w->start_ns ? start - a : a - start);
}

long long chrome_span_ns(long long start, long long end)
{
    if (end <= start)
        return 0;
    unsigned long long span = (unsigned long long)end - (unsigned long long)start;
    return span > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)span;
}

static long long meta_int(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st;
    long long v = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void write_text_column(FILE *out, sqlite3_stmt *st, int col)
{
    json_write_string(out, (const char *)sqlite3_column_text(st, col),
                      (size_t)sqlite3_column_bytes(st, col));
}

/* process_name and thread_name metadata events,  with sort indexes: processes by rank
 * (unranked ones, such as a launcher, first) then start, a process's main thread first then threads
 * by first event. Names follow docs/schema.md: a process's short name and rank; a thread's NVTX,
 * Python or OS name. */
static int write_names(struct chrome_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT p.pid, 0, " EXPORT_PROCESS_LABEL_SQL(
        "p") ", 'process', "
             " ROW_NUMBER() OVER (ORDER BY p.rank IS NOT NULL, p.rank, p.start_ns, p.id) FROM "
             "processes p "
             "UNION ALL SELECT p.pid, t.tid, " EXPORT_THREAD_LABEL_SQL(
                 "t") ", 'thread', "
                      " ROW_NUMBER() OVER (PARTITION BY t.process_id ORDER BY t.tid != p.pid, "
                      "t.start_ns, t.id)"
                      " FROM threads t JOIN processes p ON p.id = t.process_id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 3);
        long long pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"%s_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                "\"args\": {\"name\": ",
                kind, pid, tid);
        write_text_column(w->out, st, 2);
        fputs("}}", w->out);
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"%s_sort_index\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                "\"args\": {\"sort_index\": %lld}}",
                kind, pid, tid, sqlite3_column_int64(st, 4));
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

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
    write_text_column(w->out, st, COL_NAME);
    fputs(", \"cat\": ", w->out);
    write_text_column(w->out, st, COL_DOMAIN);
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
        write_text_column(out, st, COL_CATEGORY_NAME);
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
        return -1;
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
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
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
        return -1;
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
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* Marks as thread-scoped instant events. */
static int write_marks(struct chrome_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT " EVENT_COLUMNS ", t.tid, r.ts_ns FROM marks r " EVENT_JOINS
                      "JOIN threads t ON t.id = r.thread_id ORDER BY r.ts_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        chrome_event_begin(w);
        write_event_head(w, st, "i");
        fprintf(w->out,
                ", \"s\": \"t\", \"tid\": %lld, \"ts\": ", sqlite3_column_int64(st, COL_NEXT));
        chrome_write_us(w, sqlite3_column_int64(st, COL_NEXT + 1));
        write_event_args(w, st, 0);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

int export_chrome(sqlite3 *db, FILE *out, char *error, size_t error_size)
{
    struct chrome_writer w = {.db = db, .out = out, .start_ns = meta_int(db, "start_ns")};
    long long session_end = meta_int(db, "end_ns");
    fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", out);
    /* NVTX here, then each source's rows from its own file */
    if (write_names(&w) < 0 || write_push_pop(&w, session_end) < 0 ||
        write_start_end(&w, session_end) < 0 || write_marks(&w) < 0 || chrome_cuda_events(&w) < 0 ||
        chrome_nvml_events(&w) < 0) {
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
        return -1;
    }
    fputs("\n]}\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(error, error_size, "write failed");
        return -1;
    }
    return 0;
}
