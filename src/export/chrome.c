/* The Chrome trace-event export (the JSON Object Format of the Trace Event Format that
 * Perfetto and chrome://tracing read): pid = OS pid, tid = OS tid, ts in µs relative to the
 * session start with ns precision. Here the frame and the process and thread names; each
 * source's events come from its own file (chrome_<source>.c), through the table of producers
 * (producers.c). */
#include "export/chrome_writer.h"
#include "export/export.h"
#include "export/producers.h"
#include "model/session_losses.h"

#include "output/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

/* process_name and thread_name metadata events,  with sort indexes: processes by rank
 * (unranked ones, such as a launcher, first) then start, a process's main thread first then threads
 * by first event. Names follow docs/schema.md: a process's short name and rank; a thread's NVTX,
 * Python or OS name. */
static int write_names(struct chrome_writer *w)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT p.pid, 0, pl.label, 'process',"
        " ROW_NUMBER() OVER (ORDER BY p.rank IS NOT NULL, p.rank, p.start_ns, p.id)"
        " FROM processes p JOIN process_labels pl ON pl.id = p.id"
        " UNION ALL SELECT p.pid, t.tid, tl.label, 'thread',"
        " ROW_NUMBER() OVER (PARTITION BY t.process_id ORDER BY t.tid != p.pid, t.start_ns, t.id)"
        " FROM threads t JOIN processes p ON p.id = t.process_id"
        " JOIN thread_labels tl ON tl.id = t.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 3);
        long long pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"%s_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                "\"args\": {\"name\": ",
                kind, pid, tid);
        chrome_write_text_column(w->out, st, 2);
        fputs("}}", w->out);
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"%s_sort_index\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
                "\"args\": {\"sort_index\": %lld}}",
                kind, pid, tid, sqlite3_column_int64(st, 4));
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* What each process lost (model/session_losses.h), as its process_labels metadata event,
 * shown beside its name; the session's line goes into otherData at the end. */
static int write_losses(struct chrome_writer *w)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db,
                           "SELECT id, pid FROM processes WHERE dropped_events > 0 OR end_record = 0",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char *losses = session_losses_process(w->db, sqlite3_column_int64(st, 0));
        if (!losses)
            continue;
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"process_labels\", \"ph\": \"M\", \"pid\": %lld, \"tid\": 0, "
                "\"args\": {\"labels\": ",
                (long long)sqlite3_column_int64(st, 1));
        json_write_cstring(w->out, losses);
        fputs("}}", w->out);
        free(losses);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

int export_chrome(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                  size_t error_size)
{
    struct chrome_writer w = {.db = db,
                              .out = out,
                              .start_ns = meta_int(db, "start_ns"),
                              .session_end = meta_int(db, "end_ns")};
    fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", out);
    int rc = write_names(&w);
    if (rc == 0)
        rc = write_losses(&w);
    for (size_t i = 0; rc == 0 && i < chrome_producer_count; i++)
        rc = chrome_producers[i].produce(&w);
    if (rc < 0) {
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
        return rc;
    }
    fputs("\n]", out);
    for (size_t i = 0; rc == 0 && i < chrome_producer_count; i++)
        if (chrome_producers[i].sections)
            rc = chrome_producers[i].sections(&w);
    if (rc < 0) {
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
        return rc;
    }
    if (stats)
        stats->gpu_metrics_bucket_ns = w.gpu_metrics_bucket_ns;
    char *losses = session_losses_line(db);
    fputs(", \"otherData\": {\"lantern_lost_events\": ", out);
    json_write_cstring(out, losses ? losses : "(unknown)");
    fputs("}}\n", out);
    free(losses);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(error, error_size, "write failed");
        return -EIO;
    }
    return 0;
}
