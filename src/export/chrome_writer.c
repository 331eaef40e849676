/* The Chrome trace-event export's writer helpers (chrome_writer.h): event separators, times
 * as microseconds since the session start with ns precision, durations, text columns. Used by
 * the core (chrome.c) and by each source's file (chrome_<source>.c). */
#include "export/chrome_writer.h"
#include "output/json.h"

#include <errno.h>
#include <limits.h>

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

void chrome_write_thread_slice(struct chrome_writer *w, sqlite3_stmt *st, const char *cat)
{
    long long start = sqlite3_column_int64(st, 2), end = sqlite3_column_int64(st, 3);
    chrome_event_begin(w);
    fputs("\"name\": ", w->out);
    chrome_write_text_column(w->out, st, 4);
    fprintf(w->out, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %lld, \"tid\": %lld, \"ts\": ", cat,
            sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    chrome_write_us(w, start);
    fputs(", \"dur\": ", w->out);
    chrome_write_duration_us(w->out, chrome_span_ns(start, end));
}

void chrome_write_text_column(FILE *out, sqlite3_stmt *st, int col)
{
    json_write_string(out, (const char *)sqlite3_column_text(st, col),
                      (size_t)sqlite3_column_bytes(st, col));
}

int chrome_finish(sqlite3_stmt *st, int step_rc)
{
    int rc = sqlite3_finalize(st);
    return step_rc == SQLITE_DONE && rc == SQLITE_OK ? 0 : -EIO;
}

int chrome_rows(struct chrome_writer *w, const char *sql,
                void (*write_row)(struct chrome_writer *w, sqlite3_stmt *st))
{
    sqlite3_stmt *st;
    int step;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -ENOENT;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        write_row(w, st);
    return chrome_finish(st, step);
}

void chrome_write_process_name(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_event_begin(w);
    fprintf(w->out,
            "\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": {\"name\": ",
            (long long)sqlite3_column_int64(st, 0));
    json_write_cstring(w->out, (const char *)sqlite3_column_text(st, 1));
    fputs("}}", w->out);
}
