/* The importer: turns a session folder of raw trace files (docs/trace-format.md) into a
 * Lantern SQLite database (src/db/schema.sql). import.c walks the files and handles the
 * process, thread and NVTX records; other sources plug in below (import_cuda.c, import_nvml.c). */
#ifndef LANTERN_DB_IMPORT_H
#define LANTERN_DB_IMPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"

/* The schema the importer writes (meta.schema_version, docs/schema.md), which the CLI reads. */
#define IMPORT_SCHEMA_VERSION 2

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

/* ---- helpers for the source modules (import_cuda.c, import_nvml.c) ----------------------- */

struct import_file; /* one raw file being imported */

/* Prepared-statement slots: each module caches its statements in its own range. */
enum {
    IMPORT_SLOT_CORE = 0,  /* 0-15: import.c */
    IMPORT_SLOT_CUDA = 16, /* 16-47: import_cuda.c */
    IMPORT_SLOT_NVML = 48, /* 48-63: import_nvml.c */
    IMPORT_SLOTS = 64,
};

sqlite3 *import_db(struct import_file *f);
/* The statement in slot, prepared from sql on first use and reset (bindings cleared) on
 * every call; NULL if sql does not compile (a bug: also reported with import_warn). */
sqlite3_stmt *import_stmt(struct import_file *f, int slot, const char *sql);
/* strings.id of a string id of this file; 0 for 0 or an unknown id (bind NULL then). */
int64_t import_string(struct import_file *f, uint64_t file_string_id);
/* threads.id of a thread index of this file (created, tid unknown, if the file never
 * described it). */
int64_t import_thread(struct import_file *f, uint64_t thread_idx);
/* threads.id of an OS thread id of this file's process, created if new. */
int64_t import_thread_by_tid(struct import_file *f, uint64_t os_tid);
/* processes.id of this file's process; 0 for the launcher's own file. */
int64_t import_process(struct import_file *f);
/* Records a warning about this file: stored in processes.import_warning, passed to
 * import_options.warn, counted in meta.import_warnings. */
void import_warn(struct import_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The source modules' entry points, called by import.c: a record of their type range,
 * and once after all files (correlation, attribution). Return 0 or a negative code. */
int import_cuda_record(struct import_file *f, unsigned type, struct trace_fields *fields);
int import_cuda_finish(sqlite3 *db);
int import_cuda_resource_name(struct import_file *f,
                              struct trace_fields *fields); /* TRACE_NAME_RESOURCE */
int import_nvml_record(struct import_file *f, unsigned type, struct trace_fields *fields);
int import_nvml_finish(sqlite3 *db);

#endif
