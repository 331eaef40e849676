/* The Perfetto export: Perfetto's own protobuf trace (a Trace of TracePackets holding
 * TrackDescriptors and TrackEvents), which ui.perfetto.dev and trace_processor read natively.
 * Here the process and thread tracks; each source's tracks come from its own file
 * (perfetto_<source>.c) through the table of producers (producers.c), written with the
 * writer of perfetto_writer.c. Field numbers: perfetto_writer.h; docs/export.md. */
#include "common/sql_query.h"
#include "export/export.h"
#include "export/perfetto_writer.h"
#include "export/producers.h"
#include "model/session_losses.h"

#include <errno.h>
#include <stdlib.h>

/* A process track per process and a thread track per thread, named and ordered as the Chrome
 * export names and orders them (docs/schema.md): processes by rank then start, a process's
 * main thread first; what each lost is its track's description. */
static int perfetto_processes(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT p.id, p.pid, pl.label,"
                      " ROW_NUMBER() OVER (ORDER BY p.rank IS NOT NULL, p.rank, p.start_ns, p.id)"
                      " FROM processes p JOIN process_labels pl ON pl.id = p.id ORDER BY p.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char *losses = session_losses_process(w->db, sqlite3_column_int64(st, 0));
        struct perfetto_process_info info = {sqlite3_column_int64(st, 1),
                                             sqlite3_column_int64(st, 3), losses};
        perfetto_track(w, PERFETTO_PROCESS_TRACK(sqlite3_column_int64(st, 0)), 0,
                       (const char *)sqlite3_column_text(st, 2), NULL, &info, 0);
        free(losses);
    }
    if (sqlite3_finalize(st) != SQLITE_OK)
        return -EIO;
    sql = "SELECT t.id, p.pid, t.tid, tl.label,"
          " ROW_NUMBER() OVER (PARTITION BY t.process_id ORDER BY t.tid != p.pid, t.start_ns, t.id),"
          " CASE WHEN t.dropped_events > 0 THEN t.dropped_events || ' events dropped' END"
          " FROM threads t JOIN processes p ON p.id = t.process_id"
          " JOIN thread_labels tl ON tl.id = t.id ORDER BY t.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct perfetto_thread_info info = {
            sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 4),
            (const char *)sqlite3_column_text(st, 5)};
        perfetto_track(w, PERFETTO_THREAD_TRACK(sqlite3_column_int64(st, 0)), 0,
                       (const char *)sqlite3_column_text(st, 3), &info, NULL, 0);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

int export_perfetto(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                    size_t error_size)
{
    struct perfetto_writer w = {.db = db, .out = out, .sequence = PERFETTO_DESCRIPTOR_SEQUENCE};
    /* synthetic names ("Memcpy HtoD", "(unnamed)") take iids above every string id */
    w.unnamed_iid = (uint64_t)sql_query_int(db, "SELECT coalesce(max(id), 0) FROM strings", 0) + 1;
    w.session_end = sql_query_int(db, "SELECT value FROM meta WHERE key = 'end_ns'", 0);
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &w.string_query,
                           NULL) != SQLITE_OK)
        goto out;
    perfetto_first_packet(&w);
    if (perfetto_processes(&w) < 0)
        goto out;
    for (size_t i = 0; i < perfetto_producer_count; i++)
        if (perfetto_producers[i].produce(&w) < 0)
            goto out;
    rc = 0;
out:
    if (rc < 0)
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
    if (rc == 0 && (perfetto_flush(&w) < 0 || fflush(out) != 0 || ferror(out) || w.packet.failed ||
                    w.file.failed || w.event.failed || w.interned.failed)) {
        snprintf(error, error_size,
                 w.write_failed || ferror(out) ? "write failed" : "out of memory");
        rc = w.write_failed || ferror(out) ? -EIO : -ENOMEM;
    }
    if (stats) {
        stats->events = w.events;
        stats->left_out = w.left_out;
        stats->gpu_metrics_bucket_ns = w.gpu_metrics_bucket_ns;
    }
    perfetto_writer_release(&w);
    return rc;
}
