/* The NVML part of the importer: TRACE_NVML_* records (80-99) of the launcher's raw file into
 * gpus (merged by UUID with the CUDA importer's rows) and gpu_samples; after all files, the
 * energy of each lantern.h energy window (NVTX ranges of the domain "lantern.energy") from
 * the samples, into energy_windows. Record layouts: src/trace/records.def (read with its
 * generated decoders). */
#include "db/import_internal.h"
#include "energy/energy_db.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <string.h>

enum {
    SLOT_GPU,
    SLOT_GPU_ID,
    SLOT_POWER,
    SLOT_ENERGY,
    SLOT_STATE,
    SLOT_DISABLED,
    SLOT_SAMPLER,
};

/* gpus.id of an NVML index (0 when the file never described that GPU). */
static int64_t gpu_id_of(struct import_file *f, uint64_t nvml_index)
{
    sqlite3_stmt *st = import_stmt(f, SLOT_GPU_ID, "SELECT id FROM gpus WHERE nvml_index = ?");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_INT(nvml_index));
    return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

/* The statement of slot with its first parameter bound to the gpus.id of an NVML index; NULL
 * when the file never described that GPU (or sql does not compile). */
static sqlite3_stmt *gpu_stmt(struct import_file *f, int slot, const char *sql, uint64_t nvml_index)
{
    int64_t gpu = gpu_id_of(f, nvml_index);
    sqlite3_stmt *st = import_stmt(f, slot, sql);
    if (!gpu || !st)
        return NULL;
    import_bind_row(st, IMPORT_INT(gpu));
    return st;
}

static int import_gpu(struct import_file *f, struct trace_fields *fl)
{
    struct trace_nvml_gpu g;
    trace_get_nvml_gpu(fl, &g);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_GPU,
                    "INSERT INTO gpus(uuid, name, nvml_index, power_limit_mw, memory_bytes)"
                    " VALUES(?, ?, ?, ?, ?) ON CONFLICT(uuid) DO UPDATE SET"
                    " nvml_index = excluded.nvml_index, power_limit_mw = excluded.power_limit_mw,"
                    " name = COALESCE(gpus.name, excluded.name),"
                    " memory_bytes = COALESCE(gpus.memory_bytes, excluded.memory_bytes)");
    if (!st)
        return -EIO;
    /* NVML's strings are stored as read: '' when empty */
    import_bind_row(st, IMPORT_BYTES_TEXT(g.uuid), IMPORT_BYTES_TEXT(g.name), IMPORT_INT(g.gpu),
                    IMPORT_INT(g.power_limit_mw), IMPORT_INT(g.memory_bytes));
    return import_step(f, st, "cannot store an NVML GPU: ");
}

static int import_power(struct import_file *f, struct trace_fields *fl)
{
    struct trace_nvml_power p;
    trace_get_nvml_power(fl, &p);
    sqlite3_stmt *st = gpu_stmt(
        f, SLOT_POWER,
        "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, power_avg_mw) VALUES(?, ?, ?, ?)", p.gpu);
    if (!st)
        return -EIO;
    import_bind_row_at(st, 2, IMPORT_INT(p.ts), IMPORT_PLUS_ONE(p.power_mw),
                       IMPORT_PLUS_ONE(p.power_avg_mw));
    return import_step(f, st, "cannot store a power sample: ");
}

static int import_energy(struct import_file *f, struct trace_fields *fl)
{
    struct trace_nvml_energy e;
    trace_get_nvml_energy(fl, &e);
    sqlite3_stmt *st = gpu_stmt(f, SLOT_ENERGY,
                                "INSERT INTO gpu_samples(gpu_id, ts_ns, energy_mj,"
                                " energy_uncertainty_ns) VALUES(?, ?, ?, ?)",
                                e.gpu);
    if (!st)
        return -EIO;
    import_bind_row_at(st, 2, IMPORT_INT(e.ts), IMPORT_INT(e.energy_mj),
                       IMPORT_INT(e.uncertainty_ns));
    return import_step(f, st, "cannot store an energy counter update: ");
}

static int import_state(struct import_file *f, struct trace_fields *fl)
{
    struct trace_nvml_state g;
    trace_get_nvml_state(fl, &g);
    sqlite3_stmt *st =
        gpu_stmt(f, SLOT_STATE,
                 "INSERT INTO gpu_samples(gpu_id, ts_ns, sm_clock_mhz, memory_clock_mhz, gpu_util,"
                 " memory_util, memory_used_bytes, temperature_c, throttle_reasons)"
                 " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 g.gpu);
    if (!st)
        return -EIO;
    import_bind_row_at(st, 2, IMPORT_INT(g.ts), IMPORT_PLUS_ONE(g.sm_clock_mhz),
                       IMPORT_PLUS_ONE(g.memory_clock_mhz), IMPORT_PLUS_ONE(g.gpu_util),
                       IMPORT_PLUS_ONE(g.memory_util), IMPORT_PLUS_ONE(g.memory_used_bytes),
                       IMPORT_PLUS_ONE(g.temperature_c), IMPORT_PLUS_ONE(g.throttle_reasons));
    return import_step(f, st, "cannot store a GPU state sample: ");
}

static int import_disabled(struct import_file *f, struct trace_fields *fl)
{
    struct trace_nvml_disabled d;
    trace_get_nvml_disabled(fl, &d);
    return import_meta_reason(f, SLOT_DISABLED, "nvml_disabled_reason", d.reason,
                              "NVML disabled reason");
}

static int import_sampler(struct import_file *f, struct trace_fields *fl)
{
    static const char *const modes[] = {NULL, "acquire", "locked", "free"};
    struct trace_nvml_sampler r;
    trace_get_nvml_sampler(fl, &r);
    sqlite3_stmt *st = gpu_stmt(
        f, SLOT_SAMPLER,
        "INSERT INTO nvml_sampler(gpu_id, duration_ns, energy_reads, energy_busy_ns,"
        " energy_max_ns, power_reads, power_busy_ns, power_max_ns, state_reads, state_busy_ns,"
        " state_max_ns, cpu_ns, counter_mode, counter_resets)"
        " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        r.gpu);
    if (!st)
        return -EIO;
    uint64_t mode = r.counter_mode;
    import_bind_row_at(
        st, 2, IMPORT_INT(r.duration_ns), IMPORT_INT(r.energy_calls), IMPORT_INT(r.energy_busy_ns),
        IMPORT_INT(r.energy_max_ns), IMPORT_INT(r.power_calls), IMPORT_INT(r.power_busy_ns),
        IMPORT_INT(r.power_max_ns), IMPORT_INT(r.state_calls), IMPORT_INT(r.state_busy_ns),
        IMPORT_INT(r.state_max_ns), IMPORT_INT(r.cpu_ns),
        IMPORT_TEXT(mode < sizeof modes / sizeof *modes ? modes[mode] : NULL),
        IMPORT_INT(r.counter_resets));
    return import_step(f, st, "cannot store the NVML sampler's footprint: ");
}

static int nvml_record(void *ctx, unsigned type, struct trace_fields *fields)
{
    struct import_file *f = ctx;
    switch (type) {
    case TRACE_NVML_GPU:
        return import_gpu(f, fields);
    case TRACE_NVML_POWER:
        return import_power(f, fields);
    case TRACE_NVML_ENERGY:
        return import_energy(f, fields);
    case TRACE_NVML_STATE:
        return import_state(f, fields);
    case TRACE_NVML_DISABLED:
        return import_disabled(f, fields);
    case TRACE_NVML_SAMPLER:
        return import_sampler(f, fields);
    default:
        return 0; /* a newer sampler's record: skipped */
    }
}

/* ---- energy windows ------------------------------------------------------------------------ */

#define WINDOW_TOO_SHORT 0x4 /* as LANTERN_ENERGY_TOO_SHORT: fewer than 2 counter updates */

static int insert_window(sqlite3 *db, sqlite3_stmt *ranges, const struct energy_db_gpu *g)
{
    static const char sql[] =
        "INSERT INTO energy_windows(process_id, thread_id, name_id, start_ns, end_ns, gpu_id,"
        " energy_j, error_j, counter_updates, flags) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    import_bind_row(st, IMPORT_SQL(sqlite3_column_value(ranges, 0)),
                    IMPORT_SQL(sqlite3_column_value(ranges, 1)),
                    IMPORT_SQL(sqlite3_column_value(ranges, 2)),
                    IMPORT_SQL(sqlite3_column_value(ranges, 3)),
                    IMPORT_SQL(sqlite3_column_value(ranges, 4)), IMPORT_INT(g->gpu_id));
    if (sqlite3_column_type(ranges, 4) != SQLITE_NULL) {
        struct energy_interval e =
            energy_track_between(&g->track, (uint64_t)sqlite3_column_int64(ranges, 3),
                                 (uint64_t)sqlite3_column_int64(ranges, 4));
        import_bind_row_at(st, 7, IMPORT_REAL(e.mj / 1000), IMPORT_REAL(e.error_mj / 1000),
                           IMPORT_INT(e.updates),
                           IMPORT_INT((e.flags & 0x3) | (e.updates < 2 ? WINDOW_TOO_SHORT : 0)));
    }
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int nvml_session_finish(sqlite3 *db, void *state, uint64_t records)
{
    (void)state;
    (void)records; /* energy windows come from NVTX ranges and any samples there are */
    struct energy_db_gpu *gpus;
    int n = energy_db_load(db, &gpus);
    if (n <= 0)
        return n;
    sqlite3_stmt *ranges;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           "SELECT r.process_id, r.start_thread_id, r.name_id, r.start_ns, r.end_ns"
                           " FROM ranges r JOIN domains d ON d.id = r.domain_id"
                           " JOIN strings s ON s.id = d.name_id WHERE s.value = 'lantern.energy'"
                           " ORDER BY r.start_ns",
                           -1, &ranges, NULL) != SQLITE_OK)
        goto out;
    int step = SQLITE_DONE, failed = 0;
    while (!failed && (step = sqlite3_step(ranges)) == SQLITE_ROW)
        for (int i = 0; i < n && !failed; i++)
            failed = insert_window(db, ranges, &gpus[i]) != 0;
    rc = !failed && step == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(ranges);
out:
    energy_db_free(gpus, n);
    return rc;
}

extern const char import_nvml_window_sql[];

const struct import_source import_source_NVML = {
    .record = nvml_record,
    .session_finish = nvml_session_finish,
    .window_sql = import_nvml_window_sql,
};
