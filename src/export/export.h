/* Exports of a Lantern database to other tools' formats. Each writes to a stream as it
 * reads the database (nothing is built whole in memory). */
#ifndef LANTERN_EXPORT_EXPORT_H
#define LANTERN_EXPORT_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>

/* How every export and report names a process and a thread (docs/schema.md), as SQL
 * expressions over a processes row `p` and a threads row `t` (strings joined by subquery):
 * "train.py (rank 1)" from processes.name and rank; a thread's nvtxNameOsThread name, else
 * its threading.Thread name, else its OS name, else "thread <tid>". */
#define EXPORT_PROCESS_LABEL_SQL(p)                                                                \
    "(coalesce(" p ".name, " p ".exe, 'pid ' || " p ".pid) || CASE WHEN " p ".rank IS NOT NULL"    \
    " THEN ' (rank ' || " p ".rank || ')' WHEN " p ".local_rank IS NOT NULL"                       \
    " THEN ' (local rank ' || " p ".local_rank || ')' ELSE '' END)"
#define EXPORT_THREAD_LABEL_SQL(t)                                                                 \
    "coalesce((SELECT value FROM strings WHERE id = coalesce(" t ".name_id, " t                    \
    ".python_name_id, " t ".os_name_id)), 'thread ' || " t ".tid)"

/* Chrome trace-event JSON (Perfetto, chrome://tracing): process/thread names, push/pop
 * ranges as complete events, start/end ranges as async events, marks as instant events.
 * Returns 0, or -1 with a reason in error. */
int export_chrome(sqlite3 *db, FILE *out, char *error, size_t error_size);

/* Perfetto's protobuf trace (perfetto.c, perfetto_gpu.c): the same content as the Chrome
 * export in Perfetto's native format (TrackEvent, interned names, track descriptors,
 * counter tracks, flows). stats (may be NULL) receives the number of events written and
 * of ranges left out.
 * Returns 0, or -1 with a reason in error. */
struct export_stats {
    unsigned long long events;
    unsigned long long left_out; /* start/end ranges beyond 4096 open at once in one domain */
};
int export_perfetto(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                    size_t error_size);

/* What the source modules' exporters share (chrome.c calls chrome_cuda_events() and
 * chrome_nvml_events() from their files): the session start all timestamps are relative
 * to, and a comma before every event but the first. */
struct chrome_writer {
    sqlite3 *db;
    FILE *out;
    long long start_ns;
    unsigned long long events;
};
/* Starts an event object: writes the separator and "{". */
void chrome_event_begin(struct chrome_writer *w);
/* Writes ns on the session clock as microseconds since the session start, 3 decimals. */
void chrome_write_us(struct chrome_writer *w, long long ns);
/* Writes a duration in microseconds, 3 decimals. */
void chrome_write_duration_us(FILE *out, long long ns);
/* end - start for end > start, else 0, capped at LLONG_MAX: never a signed overflow, whatever
 * a damaged trace put in the database. */
long long chrome_span_ns(long long start, long long end);

/* CUDA rows (chrome_cuda.c): a process per GPU, a thread per stream with its kernels, copies
 * and memsets, the CUDA API calls on their CPU threads, flow arrows from each launching call
 * to its GPU operation, and a device-memory-in-use counter per GPU. Returns 0 or -1 (the
 * database's error message says why). */
int chrome_cuda_events(struct chrome_writer *w);

/* NVML rows (chrome_nvml.c): counter tracks per sampled GPU on its process row (power, energy,
 * clocks, utilization, memory used, temperature). Returns 0 or -1 (see the database's error). */
int chrome_nvml_events(struct chrome_writer *w);

#endif
