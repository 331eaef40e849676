/* The importer core's own structures, shared by its files and by no source: the import run
 * (import_run.c: a session folder into one database), the file being imported and the record
 * loop (import_file.c, import_loop.c), strings, processes and threads (import_processes.c),
 * and the table of sources (import_sources.c). Sources see only import_internal.h. */
#ifndef LANTERN_DB_IMPORT_CORE_H
#define LANTERN_DB_IMPORT_CORE_H

#include "common/u64_map.h"
#include "db/import_internal.h"
#include "trace/events.h"


/* The sources of src/trace/sources.def, numbered in its order. */
enum {
#define SOURCE(ID, ...) IMPORT_SOURCE_##ID,
#include "trace/sources.def"
#undef SOURCE
    IMPORT_SOURCES
};

/* One row of the table of sources: its record types and its importer. */
struct import_source_row {
    const char *name;
    unsigned first_type, last_type;
    const struct import_source *source;
};
extern const struct import_source_row import_sources[IMPORT_SOURCES];

/* The source whose type range holds type, or -1 (the core's own records, or unknown). */
static inline int import_source_of(unsigned type)
{
    for (int i = 0; i < IMPORT_SOURCES; i++)
        if (type >= import_sources[i].first_type && type <= import_sources[i].last_type)
            return i;
    return -1;
}

/* One import run: a session folder's raw files into one database. */
struct import_run {
    sqlite3 *db;
    const struct import_options *opt;
    struct import_summary summary;
    struct u64_map string_ids; /* hash of the bytes -> strings.id (collisions chained below) */
    char **string_values;      /* strings.id -> bytes, to confirm a hash match */
    size_t *string_lengths;
    size_t strings, strings_cap;
    void *source_state[IMPORT_SOURCES];      /* import_source.session_open's */
    uint64_t source_records[IMPORT_SOURCES]; /* records of each source */
    /* what the launcher's own file says about the session */
    char *command, *host, *trace, *version;
    int have_launcher;
    int no_nvidia_device; /* the launcher saw no NVIDIA device node */
    uint64_t start_ns, end_ns, start_wall_ns, first_process_start, first_process_wall;
    int64_t exit_status; /* -1: unknown */
    uint64_t bytes_total, bytes_done;
    uint64_t lantern_files;     /* raw files with a Lantern header: none means no session */
    uint64_t truncated_strings; /* names the agent cut to TRACE_STRING_MAX */
    int cancelled;              /* import_options.cancel said stop */
};

struct import_file {
    struct import_run *s;
    const char *name; /* the raw file's name in the session folder */
    int is_launcher;
    int64_t process_id;
    sqlite3_stmt *stmts[IMPORT_SOURCES + 1][IMPORT_SLOTS]; /* [0]: the core's; [1 + source] */
    int bank; /* the bank import_stmt uses: 1 + the source being called, 0 for the core */
    struct id_vec strings, threads;
    struct u64_map thread_by_tid;
    void *source_ctx[IMPORT_SOURCES]; /* import_source.file_open's, once opened */
    uint64_t last_ts, end_ts, dropped_sum, dropped_total;
    int saw_end, clean;
    int salvaged;           /* its end was appended from its buffer file (TRACE_PROCESS_END) */
    uint64_t last_event_ns; /* the latest thread event */
    uint64_t lost[IMPORT_LOSS_KINDS]; /* import_lost's counts */
    uint64_t cut_strings; /* TRACE_STRING records the agent cut to TRACE_STRING_MAX */
    char *warning;
    /* the thread event streams: the latest TRACE_CLOCK, each thread's running ticks */
    struct trace_clock_line clock;
    struct u64_map stream_ticks;
    /* --ring: the segment read last, and the streams cut where a dump's segments begin (their
     * events are skipped up to their RESTART: docs/trace-format.md) */
    uint64_t segment;
    struct u64_map stream_cut;
};

/* ---- import_file.c ------------------------------------------------------------------------ */

/* The core's statement slot for import_losses rows (import_processes.c numbers its slots from
 * 0, far below it). */
#define IMPORT_CORE_SLOT_LOSS (IMPORT_SLOTS - 1)
/* import_stmt for the core's own statements (bank 0), whichever source is being called. */
sqlite3_stmt *import_core_stmt(struct import_file *f, int slot, const char *sql);
/* End of the file: one warning and one import_losses row per kind of loss counted (before
 * import_process_finish, which stores the warnings). */
void import_losses_finish(struct import_file *f);

/* ---- import_processes.c: the core's own records (types below the sources' ranges) -------- */

/* One record of the core's types (process, threads, strings, drops, ...); a type no one knows
 * is counted in summary.skipped. */
void import_core_record(struct import_file *f, unsigned type, struct trace_fields *fields);
/* End of the file: the process row's end, exit, drops and warning, and its import_losses. */
void import_process_finish(struct import_file *f);
/* Frees the session's interned strings. */
void import_strings_release(struct import_run *s);

/* ---- import_loop.c ------------------------------------------------------------------------ */

/* Imports one raw file (path, named name in the session folder) into s->db. */
void import_file(struct import_run *s, const char *path, const char *name);
/* Asks import_options.cancel whether to stop (a signal is pending): from the record loop and,
 * through sqlite3_progress_handler, from long SQL statements. */
int import_cancelled(void *session);

#endif
