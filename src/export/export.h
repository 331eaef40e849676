/* Exports of a Lantern database to other tools' formats: the table of formats and their
 * entry points. Each writes to a stream as it reads the database (nothing is built whole in
 * memory). */
#ifndef LANTERN_EXPORT_EXPORT_H
#define LANTERN_EXPORT_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>

/* What an export tells its caller beyond success: the number of events written, of ranges
 * left out (the Perfetto export's start/end ranges beyond 4096 open at once in one domain; 0
 * for formats that leave nothing out), and the widest bucket GPU metric samples were averaged
 * over to fit the tracks (gpu_metrics_tracks.h; 0: every sample drawn). */
struct export_stats {
    unsigned long long events;
    unsigned long long left_out;
    long long gpu_metrics_bucket_ns;
};

/* The export formats, one row each (formats.c): `lantern export --format NAME` writes FILE
 * with `extension` in place of .db unless told where; `help` is its line in --help. write
 * returns 0, or a negative errno (-EIO, -ENOMEM) with a reason in error. */
struct export_format {
    const char *name, *extension, *help;
    int (*write)(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                 size_t error_size);
};
extern const struct export_format export_formats[];
extern const size_t export_format_count;
/* The row named `name`, or NULL. */
const struct export_format *export_format_find(const char *name);

/* Chrome trace-event JSON (Perfetto, chrome://tracing; chrome.c): process/thread names, push/pop
 * ranges as complete events, start/end ranges as async events, marks as instant events, and
 * each source's rows. stats (may be NULL) receives what export_stats says. Returns 0, or
 * -EIO/-ENOMEM with a reason in error. */
int export_chrome(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                  size_t error_size);

/* Perfetto's protobuf trace (perfetto.c): the same content as the Chrome export in Perfetto's
 * native format (TrackEvent, interned names, track descriptors, counter tracks, flows). stats
 * (may be NULL) receives the number of events written and of ranges left out.
 * Returns 0, or -EIO/-ENOMEM with a reason in error. */
int export_perfetto(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                    size_t error_size);

#endif
