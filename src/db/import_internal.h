/* The importer's interface to its event sources: what a source's importer (import_nvtx.c,
 * import_cuda.c, import_nvml.c, ...) is given, and what it gives back. The core (import_file.c,
 * import_processes.c, import_loop.c, import_run.c) walks the raw files and knows each
 * source only through its row in the table of sources (import_sources.c, one row per line of
 * src/trace/sources.def); a source calls the helpers below and never the other way round.
 * Not part of the public importer API (import.h). */
#ifndef LANTERN_DB_IMPORT_INTERNAL_H
#define LANTERN_DB_IMPORT_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/import.h"
#include "trace/codec.h"
#include "trace/records.h"

struct import_file; /* one raw file being imported (opaque to sources) */

/* ---- a source, as the core sees it -------------------------------------------------------- */

/* A record handler's result: 0 done (or skipped on purpose), a negative errno on failure
 * (counted per file: -ENOMEM as IMPORT_LOST_MEMORY, any other as IMPORT_LOST_FAILED),
 * IMPORT_RECORD_UNKNOWN for a type the source does not know (counted in
 * import_summary.skipped). */
#define IMPORT_RECORD_UNKNOWN 1

/* Each source's importer defines `const struct import_source import_source_<ID>` (ID as in
 * sources.def); the core calls, for every session:
 *   session_open (after the schema) -> for each file: file_open (at the file's first record
 *   of this source), record (each record of its type range), file_close (after the file's
 *   last record) -> session_finish (after every file, before indexes.sql) -> session_close.
 * Every hook but record may be NULL. */
struct import_source {
    /* The source's state for the whole session (NULL is fine); *state is passed to the hooks
     * below. Returns 0 or a negative code (the import fails). */
    int (*session_open)(sqlite3 *db, void **state);
    /* The state record() and file_close() get for one file; NULL: they get the import_file.
     * Returns NULL only when out of memory (the file's records of this source are skipped). */
    void *(*file_open)(struct import_file *f, void *session_state);
    /* One record; ctx is file_open's result (or the import_file). */
    int (*record)(void *ctx, unsigned type, struct trace_fields *fields);
    /* End of the file: write what is still held, free file_open's state. */
    void (*file_close)(void *ctx);
    /* After all files: records is how many records of this source the session had. */
    int (*session_finish)(sqlite3 *db, void *session_state, uint64_t records);
    /* Frees session_open's state; called whether the import succeeded or not. */
    void (*session_close)(void *session_state);
    /* SQL run after session_finish when the import keeps only some windows of time
     * (import_options.windows: lantern profile's start/stop, docs/long-runs.md): deletes the
     * source's rows outside every row of temp.import_windows(start_ns, end_ns). NULL: none. */
    const char *window_sql;
};

#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    extern const struct import_source import_source_##ID;
#include "trace/sources.def"
#undef SOURCE

/* Moves each NVML GPM set's samples to where they line up with the kernels of its GPU
 * (import_gpu_metrics_align.c); 0 or a negative errno. */
int import_gpu_metrics_align(sqlite3 *db);

/* ---- the file being imported ---------------------------------------------------------- */

sqlite3 *import_db(struct import_file *f);
/* The raw file's name in the session folder. */
const char *import_file_name(struct import_file *f);
/* The session's counters (a source adds its rows: ranges, marks). */
struct import_summary *import_summary_of(struct import_file *f);
/* What the importer could not import or had to set right, by reason: at the end of the file
 * each reason counted becomes one warning ("<file>: <count> <what>") and one row of
 * import_losses, which the reports' "Lost events:" line shows (model/session_losses.c). */
#define IMPORT_LOSSES(X)                                                                           \
    X(MALFORMED, "malformed records skipped")                                                      \
    X(MEMORY, "events skipped: the importer ran out of memory")                                    \
    X(FAILED, "records not stored: the importer failed (an SQL error)")                            \
    X(DUPLICATE_CHUNKS, "duplicated chunks skipped (each chunk is imported once)")                 \
    X(MISORDERED_CHUNKS, "chunks out of order (imported in their sequence order)")              \
    X(TABLE_REGISTERED_STRINGS, "NVTX registered strings past the agent's cap (no name)")         \
    X(TABLE_CATEGORIES, "NVTX category names past the agent's cap (not named)")                   \
    X(TABLE_DOMAINS, "NVTX domains past the agent's cap (in the default domain)")                 \
    X(TABLE_PAYLOAD_SCHEMAS, "NVTX payload schemas past the agent's cap (not decoded)")         \
    X(TABLE_NAMES, "NVTX names of threads and resources past the agent's cap (not named)")      \
    X(TABLE_PYTHON_FUNCTIONS, "Python code objects past --python-functions' cap (not recorded)")
enum import_loss {
#define LOSS(ID, what) IMPORT_LOST_##ID,
    IMPORT_LOSSES(LOSS)
#undef LOSS
        IMPORT_LOSS_KINDS
};
/* Counts n of this file's losses of one kind. */
void import_lost(struct import_file *f, enum import_loss kind, uint64_t n);
/* Counts one malformed record of this file: import_lost(f, IMPORT_LOST_MALFORMED, 1). */
void import_malformed(struct import_file *f);
/* Records a warning about this file: stored in processes.import_warning, passed to
 * import_options.warn, counted in meta.import_warnings. */
void import_warn(struct import_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepared-statement slots: each source numbers its statements from 0 (an enum in its file);
 * the core keeps one bank of slots per source, so the numbers never meet. */
#define IMPORT_SLOTS 32
/* The calling source's statement in slot (0 .. IMPORT_SLOTS - 1), prepared from sql on first
 * use and reset (bindings cleared) on every call; NULL if sql does not compile (a bug: also
 * reported with import_warn). */
sqlite3_stmt *import_stmt(struct import_file *f, int slot, const char *sql);
/* Steps st to its end; on failure warns "<what><SQLite's message>" about f (what NULL: no
 * warning) and returns -EIO. st NULL (import_stmt failed): -EIO. */
int import_step(struct import_file *f, sqlite3_stmt *st, const char *what);

/* ---- strings, processes, threads (import_processes.c) ------------------------------------ */

/* strings.id of a string id of this file; 0 for 0 or an unknown id (bind NULL then). */
int64_t import_string(struct import_file *f, uint64_t file_string_id);
/* strings.id of a text the source knows itself (a name from a table), interned with the file's
 * strings; 0 when out of memory. */
int64_t import_string_text(struct import_file *f, const char *text);
/* threads.id of a thread index of this file (created, tid unknown, if the file never
 * described it). */
int64_t import_thread(struct import_file *f, uint64_t thread_idx);
/* threads.id of an OS thread id of this file's process, created if new. */
int64_t import_thread_by_tid(struct import_file *f, uint64_t os_tid);
/* processes.id of this file's process, created (pid from the file's name) if the file has
 * not described it; 0 for the launcher's own file. */
int64_t import_process(struct import_file *f);
/* processes.id of this file's process if its row exists, else 0 (never creates it); 0 for the
 * launcher's own file. */
int64_t import_known_process(struct import_file *f);

/* ---- rows and scripts (import_sql.c) ------------------------------------------------------ */

/* One value of a row to insert, in the trace's conventions: made with the IMPORT_* macros below
 * and bound with import_bind_row, so that every insert of the importer binds the same way. */
enum import_value_kind {
    IMPORT_VALUE_NULL,       /* NULL */
    IMPORT_VALUE_INT,        /* the integer */
    IMPORT_VALUE_NONZERO,    /* NULL for 0 ("none": string ids, graph ids, row ids), else it */
    IMPORT_VALUE_PLUS_ONE,   /* a value stored + 1 in the trace (0: none): NULL or the value */
    IMPORT_VALUE_REAL,       /* the double */
    IMPORT_VALUE_TEXT,       /* NULL for NULL, else the text (static: it must outlive the step) */
    IMPORT_VALUE_TEXT_COPY,  /* NULL for NULL, else a copy of the text */
    IMPORT_VALUE_BYTES,      /* NULL for no bytes, else a copy of the bytes as text */
    IMPORT_VALUE_BYTES_TEXT, /* a copy of the bytes as text, '' for none */
    IMPORT_VALUE_BLOB,       /* NULL for no bytes, else a copy of the bytes as a blob */
    IMPORT_VALUE_SQL,        /* a copy of an SQLite value (a column of another statement) */
};
struct import_value {
    enum import_value_kind kind;
    int len; /* the bytes' length; a text's: -1 up to its NUL, or n (IMPORT_TEXT_N) */
    union {
        int64_t i;
        uint64_t plus_one;
        double real;
        const void *p; /* text, bytes, sqlite3_value */
    };
};
#define IMPORT_NULL ((struct import_value){.kind = IMPORT_VALUE_NULL})
#define IMPORT_INT(v) ((struct import_value){.kind = IMPORT_VALUE_INT, .i = (int64_t)(v)})
#define IMPORT_NONZERO(v) ((struct import_value){.kind = IMPORT_VALUE_NONZERO, .i = (int64_t)(v)})
#define IMPORT_PLUS_ONE(v)                                                                         \
    ((struct import_value){.kind = IMPORT_VALUE_PLUS_ONE, .plus_one = (uint64_t)(v)})
#define IMPORT_REAL(v) ((struct import_value){.kind = IMPORT_VALUE_REAL, .real = (double)(v)})
#define IMPORT_TEXT(s) ((struct import_value){.kind = IMPORT_VALUE_TEXT, .len = -1, .p = (s)})
#define IMPORT_TEXT_N(s, n)                                                                        \
    ((struct import_value){.kind = IMPORT_VALUE_TEXT, .len = (int)(n), .p = (s)})
#define IMPORT_TEXT_COPY(s)                                                                        \
    ((struct import_value){.kind = IMPORT_VALUE_TEXT_COPY, .len = -1, .p = (s)})
/* b: a struct trace_bytes (trace/records.h) */
#define IMPORT_BYTES(b)                                                                            \
    ((struct import_value){.kind = IMPORT_VALUE_BYTES, .len = (int)(b).len, .p = (b).bytes})
#define IMPORT_BYTES_TEXT(b)                                                                       \
    ((struct import_value){.kind = IMPORT_VALUE_BYTES_TEXT, .len = (int)(b).len, .p = (b).bytes})
#define IMPORT_BLOB(b)                                                                             \
    ((struct import_value){.kind = IMPORT_VALUE_BLOB, .len = (int)(b).len, .p = (b).bytes})
#define IMPORT_SQL(value) ((struct import_value){.kind = IMPORT_VALUE_SQL, .p = (value)})

/* Binds v to st's parameter col. A bind that fails (a column past the statement's: a bug) leaves
 * its parameter NULL, as import_stmt cleared it. */
__attribute__((always_inline)) static inline void import_bind_value(sqlite3_stmt *st, int col,
                                                                    struct import_value v)
{
    switch (v.kind) {
    case IMPORT_VALUE_INT:
        sqlite3_bind_int64(st, col, v.i);
        return;
    case IMPORT_VALUE_NONZERO:
        if (v.i)
            sqlite3_bind_int64(st, col, v.i);
        else
            sqlite3_bind_null(st, col);
        return;
    case IMPORT_VALUE_PLUS_ONE:
        if (v.plus_one)
            sqlite3_bind_int64(st, col, (int64_t)(v.plus_one - 1));
        else
            sqlite3_bind_null(st, col);
        return;
    case IMPORT_VALUE_REAL:
        sqlite3_bind_double(st, col, v.real);
        return;
    case IMPORT_VALUE_TEXT:
    case IMPORT_VALUE_TEXT_COPY:
        if (v.p)
            sqlite3_bind_text(st, col, v.p, v.len,
                              v.kind == IMPORT_VALUE_TEXT ? SQLITE_STATIC : SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, col);
        return;
    case IMPORT_VALUE_BYTES:
    case IMPORT_VALUE_BYTES_TEXT:
        if (v.len || v.kind == IMPORT_VALUE_BYTES_TEXT)
            sqlite3_bind_text(st, col, v.p, v.len, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, col);
        return;
    case IMPORT_VALUE_BLOB:
        if (v.len)
            sqlite3_bind_blob(st, col, v.p, v.len, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, col);
        return;
    case IMPORT_VALUE_SQL:
        sqlite3_bind_value(st, col, v.p);
        return;
    case IMPORT_VALUE_NULL:
        sqlite3_bind_null(st, col);
        return;
    }
}

/* Binds n values held in an array to st's parameters first, first + 1, ... */
void import_bind_values(sqlite3_stmt *st, int first, const struct import_value *values, int n);

/* Binds a row, its values listed: import_bind_row(st, IMPORT_INT(pid), IMPORT_TEXT(name)) binds
 * parameters 1 and 2; import_bind_row_at starts at parameter first. It expands to one inline
 * bind per value, in the order listed (each value evaluated in turn, as statements are), so
 * that each value's kind is known where it is bound and a row costs what hand-written binds
 * cost (the NVTX importer binds 14 values per range; measured with callgrind: a loop over an
 * array of the values added ~4 % to bench_import's instructions, an unrolled one ~0.8 %). Up
 * to 24 values. */
#define import_bind_row(st, ...) import_bind_row_at(st, 1, __VA_ARGS__)

/* A source's one-line reason for sampling nothing (NVML's, RAPL's) as meta's key, through the
 * source's statement slot; 0, or -EIO warned "cannot store the <what>: ...". */
int import_meta_reason(struct import_file *f, int slot, const char *key, struct trace_bytes reason,
                       const char *what);
#define import_bind_row_at(st, first, ...)                                                         \
    do {                                                                                           \
        sqlite3_stmt *import_st_ = (st);                                                           \
        IMPORT_BIND_CAT(IMPORT_BIND_, IMPORT_BIND_COUNT(__VA_ARGS__))(first, __VA_ARGS__)          \
    } while (0)
#define IMPORT_BIND_CAT(a, b) IMPORT_BIND_CAT_(a, b)
#define IMPORT_BIND_CAT_(a, b) a##b
#define IMPORT_BIND_COUNT(...)                                                                     \
    IMPORT_BIND_NTH(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, \
                    7, 6, 5, 4, 3, 2, 1)
#define IMPORT_BIND_NTH(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16,     \
                        _17, _18, _19, _20, _21, _22, _23, _24, n, ...)                            \
    n
#define IMPORT_BIND_1(col, v) import_bind_value(import_st_, col, v);
#define IMPORT_BIND_2(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_1((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_3(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_2((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_4(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_3((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_5(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_4((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_6(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_5((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_7(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_6((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_8(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_7((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_9(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_8((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_10(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_9((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_11(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_10((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_12(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_11((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_13(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_12((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_14(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_13((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_15(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_14((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_16(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_15((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_17(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_16((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_18(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_17((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_19(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_18((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_20(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_19((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_21(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_20((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_22(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_21((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_23(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_22((col) + 1, __VA_ARGS__)
#define IMPORT_BIND_24(col, v, ...) IMPORT_BIND_1(col, v) IMPORT_BIND_23((col) + 1, __VA_ARGS__)
/* The values as an array and its length, for import_bind_values. */
#define IMPORT_VALUES(...)                                                                         \
    (const struct import_value[]){__VA_ARGS__},                                                    \
        (int)(sizeof((const struct import_value[]){__VA_ARGS__}) / sizeof(struct import_value))

/* A named parameter of an SQL script: ":name" in the SQL takes the integer, or the text when
 * text is not NULL. The enumerations a script compares with are bound this way, so their
 * values are written once, in C (src/trace/format.h). */
struct import_sql_param {
    const char *name; /* with its ':' */
    int64_t value;
    const char *text;
};
/* Runs every statement of sql (an embedded .sql file) in turn, binding its parameters from
 * params (an array ended by a NULL name). Returns 0, or -EIO (an SQL error, an unknown
 * parameter). */
int import_exec_script(sqlite3 *db, const char *sql, const struct import_sql_param *params);

/* ---- ids of a file ---------------------------------------------------------------------- */

/* A corrupt id must not make the importer allocate gigabytes. */
#define IMPORT_MAX_FILE_IDS (1u << 24)

/* A growable array of int64 indexed by a per-file id (string ids, thread indexes, domains). */
struct id_vec {
    int64_t *v;
    size_t cap;
};

/* The slot of idx, grown (zero-filled) as needed; NULL when idx is too large or memory runs out. */
static inline int64_t *id_vec_slot(struct id_vec *a, uint64_t idx)
{
    if (idx >= IMPORT_MAX_FILE_IDS)
        return NULL;
    if (idx >= a->cap) {
        size_t cap = a->cap ? a->cap : 256;
        while (cap <= idx)
            cap *= 2;
        int64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return NULL;
        memset(v + a->cap, 0, (cap - a->cap) * sizeof *v);
        a->v = v;
        a->cap = cap;
    }
    return &a->v[idx];
}

/* The value at idx; 0 beyond the end. */
static inline int64_t id_vec_get(const struct id_vec *a, uint64_t idx)
{
    return idx < a->cap ? a->v[idx] : 0;
}

/* ranges.style (docs/schema.md): shared by the NVTX importer and the CUDA attribution. */
enum import_range_style { IMPORT_RANGE_PUSH_POP = 0, IMPORT_RANGE_START_END = 1 };

#endif
