/* The OS runtime calls part of the importer (-t osrt): TRACE_OSRT_CALL records (the threads'
 * OSRT_CALL events) into osrt_calls, named through trace/osrt.def, each with the backtrace
 * that follows it (TRACE_OSRT_BACKTRACE: its native addresses named here from the ELF files,
 * import_symbols.c, once per distinct text of a file); each process's settings and totals into
 * osrt. Layouts: src/trace/records.def; the tables: docs/schema.md. */
#include "common/u64_map.h"
#include "db/import_internal.h"
#include "db/import_symbols.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_CALL, SLOT_SETTINGS, SLOT_TOTALS, SLOT_STACK_TEXT, SLOT_SET_BACKTRACE };

/* A backtrace's text at most, named (longer ones are cut at a frame). */
#define OSRT_BACKTRACE_NAMED_MAX 8192u

struct osrt_session {
    struct symbol_cache *symbols; /* the ELF files' symbols, read once per session */
};

struct osrt_file {
    struct import_file *f;
    struct osrt_session *s;
    int64_t last_call;        /* osrt_calls.id of the file's last call (0: none) */
    uint64_t last_thread;     /* its thread_idx: a backtrace belongs to it */
    struct u64_map backtraces; /* the file's stack string id -> strings.id of the named text */
};

/* The function names of trace/osrt.def by number. */
#define OSRT_NAMES 64
static const char *const osrt_names[OSRT_NAMES] = {
#define OSRT_FUNCTION(ID, number, name) [number] = name,
#include "trace/osrt.def"
#undef OSRT_FUNCTION
};

static int import_call(struct osrt_file *o, struct trace_fields *fl)
{
    struct import_file *f = o->f;
    struct trace_osrt_call r;
    trace_get_osrt_call(fl, &r);
    const char *name = r.function < OSRT_NAMES ? osrt_names[r.function] : NULL;
    if (!name || r.end < r.start) {
        import_malformed(f);
        return 0;
    }
    sqlite3_stmt *st = import_stmt(f, SLOT_CALL,
                                   "INSERT INTO osrt_calls(thread_id, name_id, start_ns, end_ns,"
                                   " ret, errno) VALUES(?, ?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_thread(f, r.thread_idx)),
                    IMPORT_INT(import_string_text(f, name)),
                    IMPORT_INT(r.start), IMPORT_INT(r.end), IMPORT_INT(r.ret),
                    IMPORT_NONZERO(r.error));
    int rc = import_step(f, st, "cannot store an OS runtime call: ");
    o->last_call = rc < 0 ? 0 : sqlite3_last_insert_rowid(import_db(f));
    o->last_thread = r.thread_idx;
    return rc;
}

/* One native frame "path+0xADDRESS" (path: the frame before's when empty) as
 * "function(object)", or "object+0xADDRESS" where the file has no symbol there. */
static void name_frame(struct osrt_file *o, const char *line, size_t len, char *path,
                       size_t path_cap, char *out, size_t out_cap)
{
    const char *plus = NULL;
    for (size_t i = len; i >= 3 && !plus; i--)
        if (memcmp(line + i - 3, "+0x", 3) == 0)
            plus = line + i - 3;
    if (!plus) {
        snprintf(out, out_cap, "%.*s", (int)len, line);
        return;
    }
    if (plus > line)
        snprintf(path, path_cap, "%.*s", (int)(plus - line), line);
    uint64_t address = strtoull(plus + 3, NULL, 16);
    const char *slash = strrchr(path, '/'), *object = slash ? slash + 1 : path;
    /* a return address: the call is the instruction before it */
    const char *function = address ? symbol_lookup_address(o->s->symbols, path, address - 1)
                                   : NULL;
    if (function)
        snprintf(out, out_cap, "%s(%s)", function, object);
    else
        snprintf(out, out_cap, "%s+0x%" PRIx64, object, address);
}

/* The agent's text (the Python frames, then a line per native address) as frames joined
 * by "<-", innermost first; into named (cap bytes, NUL-terminated). */
static void name_backtrace(struct osrt_file *o, const char *text, char *named, size_t cap)
{
    const char *line_end = strchr(text, '\n');
    size_t used = (size_t)snprintf(named, cap, "%.*s",
                                   (int)(line_end ? line_end - text : (ptrdiff_t)strlen(text)),
                                   text);
    char path[4096] = "", frame[4608];
    while (line_end && used < cap) {
        const char *line = line_end + 1;
        line_end = strchr(line, '\n');
        name_frame(o, line, line_end ? (size_t)(line_end - line) : strlen(line), path,
                   sizeof path, frame, sizeof frame);
        int n = snprintf(named + used, cap - used, "%s%s", used ? "<-" : "", frame);
        if (n < 0 || (size_t)n >= cap - used) {
            named[used] = 0; /* cut at a frame */
            break;
        }
        used += (size_t)n;
    }
}

/* strings.id of the named text of the file's stack string id (0: none known). */
static int64_t backtrace_id(struct osrt_file *o, uint64_t stack)
{
    uint64_t *known = u64_map_find(&o->backtraces, stack);
    if (known)
        return (int64_t)*known;
    int64_t raw = import_string(o->f, stack);
    sqlite3_stmt *st = import_stmt(o->f, SLOT_STACK_TEXT, "SELECT value FROM strings WHERE id = ?");
    if (!raw || !st)
        return 0;
    sqlite3_bind_int64(st, 1, raw);
    int64_t id = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        char named[OSRT_BACKTRACE_NAMED_MAX];
        name_backtrace(o, (const char *)sqlite3_column_text(st, 0), named, sizeof named);
        id = import_string_text(o->f, named);
    }
    sqlite3_reset(st);
    if (id && u64_map_put(&o->backtraces, stack, (uint64_t)id) < 0)
        return -ENOMEM;
    return id;
}

/* The backtrace of the thread's call just before it. */
static int import_backtrace(struct osrt_file *o, struct trace_fields *fl)
{
    struct trace_osrt_backtrace r;
    trace_get_osrt_backtrace(fl, &r);
    if (!o->last_call || r.thread_idx != o->last_thread || !r.stack) {
        import_malformed(o->f);
        return 0;
    }
    int64_t id = backtrace_id(o, r.stack);
    if (id <= 0)
        return (int)id;
    sqlite3_stmt *st = import_stmt(o->f, SLOT_SET_BACKTRACE,
                                   "UPDATE osrt_calls SET backtrace_id = ? WHERE id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(id), IMPORT_INT(o->last_call));
    o->last_call = 0;
    return import_step(o->f, st, "cannot store an OS runtime backtrace: ");
}

static int import_settings(struct import_file *f, struct trace_fields *fl)
{
    struct trace_osrt_settings r;
    trace_get_osrt_settings(fl, &r);
    sqlite3_stmt *st = import_stmt(f, SLOT_SETTINGS,
                                   "INSERT INTO osrt(process_id, threshold_ns,"
                                   " backtrace_threshold_ns, backtrace_depth) VALUES(?, ?, ?, ?)"
                                   " ON CONFLICT(process_id) DO UPDATE SET"
                                   " threshold_ns = excluded.threshold_ns,"
                                   " backtrace_threshold_ns = excluded.backtrace_threshold_ns,"
                                   " backtrace_depth = excluded.backtrace_depth");
    if (!st)
        return -EIO;
    /* a file before backtraces (both fields absent) had none */
    import_bind_row(st, IMPORT_INT(import_process(f)), IMPORT_INT(r.threshold_ns),
                    IMPORT_INT(r.backtrace_threshold_ns), IMPORT_INT(r.backtrace_depth));
    return import_step(f, st, "cannot store the OS runtime settings: ");
}

static int import_totals(struct import_file *f, struct trace_fields *fl)
{
    struct trace_osrt_totals r;
    trace_get_osrt_totals(fl, &r);
    sqlite3_stmt *st = import_stmt(f, SLOT_TOTALS,
                                   "INSERT INTO osrt(process_id, seen, kept, lost)"
                                   " VALUES(?, ?, ?, ?) ON CONFLICT(process_id) DO UPDATE SET"
                                   " seen = excluded.seen, kept = excluded.kept,"
                                   " lost = excluded.lost");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_process(f)), IMPORT_INT(r.seen), IMPORT_INT(r.kept),
                    IMPORT_INT(r.lost));
    return import_step(f, st, "cannot store the OS runtime totals: ");
}

static int osrt_record(void *ctx, unsigned type, struct trace_fields *fl)
{
    struct osrt_file *o = ctx;
    switch (type) {
    case TRACE_OSRT_CALL:
        return import_call(o, fl);
    case TRACE_OSRT_BACKTRACE:
        return import_backtrace(o, fl);
    case TRACE_OSRT_SETTINGS:
        return import_settings(o->f, fl);
    case TRACE_OSRT_TOTALS:
        return import_totals(o->f, fl);
    default:
        return IMPORT_RECORD_UNKNOWN;
    }
}

static int osrt_session_open(sqlite3 *db, void **state)
{
    (void)db;
    struct osrt_session *s = calloc(1, sizeof *s);
    if (!s || !(s->symbols = symbol_cache_new())) {
        free(s);
        return -ENOMEM;
    }
    *state = s;
    return 0;
}

static void osrt_session_close(void *state)
{
    struct osrt_session *s = state;
    if (s)
        symbol_cache_free(s->symbols);
    free(s);
}

static void *osrt_file_open(struct import_file *f, void *session_state)
{
    struct osrt_file *o = calloc(1, sizeof *o);
    if (o) {
        o->f = f;
        o->s = session_state;
    }
    return o;
}

static void osrt_file_close(void *ctx)
{
    struct osrt_file *o = ctx;
    u64_map_release(&o->backtraces);
    free(o);
}

extern const char import_osrt_window_sql[];

const struct import_source import_source_OSRT = {
    .session_open = osrt_session_open,
    .file_open = osrt_file_open,
    .record = osrt_record,
    .file_close = osrt_file_close,
    .session_close = osrt_session_close,
    .window_sql = import_osrt_window_sql,
};
