/* The importer: turns a session folder of raw trace files (docs/trace-format.md) into a
 * Lantern SQLite database (src/db/schema.sql). This is its public side (the CLI, tests); the
 * interface between its core and each source's importer is import_internal.h. */
#ifndef LANTERN_DB_IMPORT_H
#define LANTERN_DB_IMPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The schema the importer writes (meta.schema_version, docs/schema.md), which the CLI reads. */
#define IMPORT_SCHEMA_VERSION 9

/* ---- the importer as a whole (used by the CLI) ----------------------------------------- */

struct import_options {
    /* Called once per warning (damaged raw file, ...); msg has no "lantern:" prefix. */
    void (*warn)(void *ctx, const char *msg);
    /* Called now and then during a long import with the raw bytes read so far. */
    void (*progress)(void *ctx, uint64_t bytes_done, uint64_t bytes_total);
    /* Polled often (between records and inside long SQL statements): non-zero stops the
     * import, which then returns -EINTR and leaves nothing behind. NULL: never stop. */
    int (*cancel)(void *ctx);
    void *ctx;
    int replace; /* replace an existing db_path (atomically: the old file stays until done) */
    /* Keep only what began inside these windows of CLOCK_MONOTONIC time, [start_ns, end_ns)
     * (lantern profile's start/stop, docs/long-runs.md); window_count 0: everything. */
    const struct import_window *windows;
    size_t window_count;
};

struct import_window {
    uint64_t start_ns, end_ns; /* end_ns INT64_MAX: open to the end */
};

struct import_summary {
    uint64_t files;   /* raw files imported (damaged ones included) */
    uint64_t records; /* records read */
    uint64_t ranges, marks;
    uint64_t skipped;        /* records of a type this build does not know (a newer writer's) */
    uint64_t dropped_events; /* events the agents could not record (drop-and-count) */
    uint64_t warnings;
};

/* Imports every "*.lrt" file of session_dir into a new database at db_path (which must not
 * exist unless opt->replace), written as db_path.part and renamed into place when complete.
 * Returns 0, or a negative errno-style code (-ENOENT: no such session folder, -ENODATA: no
 * Lantern raw trace in it, -EEXIST: db_path exists, -EISDIR: db_path is a folder, -ENOSPC:
 * the disk is full, -EINTR: cancelled, -EIO: SQLite failed); a damaged raw file is a warning,
 * not an error. summary may be NULL. */
int import_session(const char *session_dir, const char *db_path, const struct import_options *opt,
                   struct import_summary *summary);

/* A process's short name from its NUL-separated arguments (args[len] must be NUL): the
 * program's base name, or an interpreter's script or module (process_name.c). Writes at
 * most cap bytes with the NUL into out; returns the name's length (0: no arguments). */
size_t import_process_name(const char *args, size_t len, char *out, size_t cap);

/* The schema and the indexes, embedded from schema.sql and indexes.sql at build time. */
extern const char import_schema_sql[];
extern const char import_indexes_sql[];

#endif
