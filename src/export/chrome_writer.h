/* The Chrome trace-event export's writer (chrome_writer.c): what the format's core (chrome.c)
 * and the files that write each source's events (chrome_<source>.c) share: the session start
 * all timestamps are relative to, a comma before every event but the first, and the helpers
 * that format times, durations and text. */
#ifndef LANTERN_EXPORT_CHROME_WRITER_H
#define LANTERN_EXPORT_CHROME_WRITER_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

struct chrome_writer {
    sqlite3 *db;
    FILE *out;
    long long start_ns;    /* meta start_ns: the time every ts is relative to */
    long long session_end; /* meta end_ns: where a range of a process without an end ends */
    unsigned long long events;
    int64_t gpu_metrics_bucket_ns; /* the widest GPU metrics thinning (gpu_metrics_tracks.h) */
};

/* GPU rows need pids no OS pid can take (Linux caps pids at 2^22): 1e9 + gpus.id, and 1e9
 * itself for operations the importer could not place on a GPU. An SQL expression over col. */
#define CHROME_GPU_PID(col) "(1000000000 + COALESCE(" col ", 0))"

/* Starts an event object: writes the separator and "{". */
void chrome_event_begin(struct chrome_writer *w);
/* Writes ns on the session clock as microseconds since the session start, 3 decimals. */
void chrome_write_us(struct chrome_writer *w, long long ns);
/* Writes a duration in microseconds, 3 decimals. */
void chrome_write_duration_us(FILE *out, long long ns);
/* end - start for end > start, else 0, capped at LLONG_MAX: never a signed overflow, whatever
 * a damaged trace put in the database. */
long long chrome_span_ns(long long start, long long end);
/* A complete event ("ph": "X") of category cat on a host thread, from a row whose first five
 * columns are pid, tid, start_ns, end_ns, name: everything up to its args, which the caller
 * writes (", \"args\": {...}}"). */
void chrome_write_thread_slice(struct chrome_writer *w, sqlite3_stmt *st, const char *cat);
/* A text column as a JSON string (NULL as null). */
void chrome_write_text_column(FILE *out, sqlite3_stmt *st, int col);
/* Writes each row of sql with write_row. 0, -ENOENT when sql cannot be prepared (a table or
 * column the database lacks), or -EIO when a step fails (the database's error says why). */
int chrome_rows(struct chrome_writer *w, const char *sql,
                void (*write_row)(struct chrome_writer *w, sqlite3_stmt *st));
/* A row of pid and name as that pid's process_name metadata event (the rows the export adds
 * for GPUs and CPU packages). */
void chrome_write_process_name(struct chrome_writer *w, sqlite3_stmt *st);
/* Finalizes st after its last step: 0 when stepping ended with SQLITE_DONE and finalizing
 * succeeded, else -1. */
int chrome_finish(sqlite3_stmt *st, int step_rc);

#endif
