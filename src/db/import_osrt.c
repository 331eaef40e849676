/* The OS runtime calls part of the importer (-t osrt): TRACE_OSRT_CALL records (the threads'
 * OSRT_CALL events) into osrt_calls, named through trace/osrt.def; each process's settings
 * and totals into osrt. Layouts: src/trace/records.def; the tables: docs/schema.md. */
#include "db/import_internal.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>

enum { SLOT_CALL, SLOT_SETTINGS, SLOT_TOTALS };

/* The function names of trace/osrt.def by number. */
#define OSRT_NAMES 64
static const char *const osrt_names[OSRT_NAMES] = {
#define OSRT_FUNCTION(ID, number, name) [number] = name,
#include "trace/osrt.def"
#undef OSRT_FUNCTION
};

static int import_call(struct import_file *f, struct trace_fields *fl)
{
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
    return import_step(f, st, "cannot store an OS runtime call: ");
}

static int import_settings(struct import_file *f, struct trace_fields *fl)
{
    struct trace_osrt_settings r;
    trace_get_osrt_settings(fl, &r);
    sqlite3_stmt *st = import_stmt(f, SLOT_SETTINGS,
                                   "INSERT INTO osrt(process_id, threshold_ns) VALUES(?, ?)"
                                   " ON CONFLICT(process_id) DO UPDATE SET"
                                   " threshold_ns = excluded.threshold_ns");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_process(f)), IMPORT_INT(r.threshold_ns));
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
    struct import_file *f = ctx;
    switch (type) {
    case TRACE_OSRT_CALL:
        return import_call(f, fl);
    case TRACE_OSRT_SETTINGS:
        return import_settings(f, fl);
    case TRACE_OSRT_TOTALS:
        return import_totals(f, fl);
    default:
        return IMPORT_RECORD_UNKNOWN;
    }
}

extern const char import_osrt_window_sql[];

const struct import_source import_source_OSRT = {
    .record = osrt_record,
    .window_sql = import_osrt_window_sql,
};
