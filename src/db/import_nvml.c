/* The NVML part of the importer: TRACE_NVML_* records (80-99) of the launcher's raw file into
 * gpus (merged by UUID with the CUDA importer's rows) and gpu_samples; after all files, the
 * energy of each lantern.h energy window (NVTX ranges of the domain "lantern.energy") from
 * the samples, into energy_windows. */
#include "db/import_internal.h"
#include "energy/energy_db.h"
#include "trace/format.h"

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
    sqlite3_bind_int64(st, 1, (int64_t)nvml_index);
    return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

/* The bytes as text, '' when empty (NVML's strings are stored as read). */
static void bind_text(sqlite3_stmt *st, int col, const uint8_t *bytes, size_t len)
{
    sqlite3_bind_text(st, col, (const char *)bytes, (int)len, SQLITE_TRANSIENT);
}

static int import_gpu(struct import_file *f, struct trace_fields *fl)
{
    uint64_t index = trace_get_u(fl);
    const uint8_t *uuid, *name;
    size_t uuid_len = trace_get_s(fl, &uuid), name_len = trace_get_s(fl, &name);
    uint64_t power_limit = trace_get_u(fl), memory = trace_get_u(fl);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_GPU,
                    "INSERT INTO gpus(uuid, name, nvml_index, power_limit_mw, memory_bytes)"
                    " VALUES(?, ?, ?, ?, ?) ON CONFLICT(uuid) DO UPDATE SET"
                    " nvml_index = excluded.nvml_index, power_limit_mw = excluded.power_limit_mw,"
                    " name = COALESCE(gpus.name, excluded.name),"
                    " memory_bytes = COALESCE(gpus.memory_bytes, excluded.memory_bytes)");
    if (!st)
        return -1;
    bind_text(st, 1, uuid, uuid_len);
    bind_text(st, 2, name, name_len);
    sqlite3_bind_int64(st, 3, (int64_t)index);
    sqlite3_bind_int64(st, 4, (int64_t)power_limit);
    sqlite3_bind_int64(st, 5, (int64_t)memory);
    return import_step(f, st, "cannot store an NVML GPU: ");
}

static int import_power(struct import_file *f, struct trace_fields *fl)
{
    int64_t gpu = gpu_id_of(f, trace_get_u(fl));
    uint64_t ts = trace_get_ts(fl), instant = trace_get_u(fl), avg = trace_get_u(fl);
    sqlite3_stmt *st = import_stmt(
        f, SLOT_POWER,
        "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, power_avg_mw) VALUES(?, ?, ?, ?)");
    if (!gpu || !st)
        return -1;
    sqlite3_bind_int64(st, 1, gpu);
    sqlite3_bind_int64(st, 2, (int64_t)ts);
    import_bind_plus_one(st, 3, instant);
    import_bind_plus_one(st, 4, avg);
    return import_step(f, st, "cannot store a power sample: ");
}

static int import_energy(struct import_file *f, struct trace_fields *fl)
{
    int64_t gpu = gpu_id_of(f, trace_get_u(fl));
    uint64_t ts = trace_get_ts(fl), mj = trace_get_u(fl), uncertainty = trace_get_u(fl);
    sqlite3_stmt *st = import_stmt(f, SLOT_ENERGY,
                                   "INSERT INTO gpu_samples(gpu_id, ts_ns, energy_mj,"
                                   " energy_uncertainty_ns) VALUES(?, ?, ?, ?)");
    if (!gpu || !st)
        return -1;
    sqlite3_bind_int64(st, 1, gpu);
    sqlite3_bind_int64(st, 2, (int64_t)ts);
    sqlite3_bind_int64(st, 3, (int64_t)mj);
    sqlite3_bind_int64(st, 4, (int64_t)uncertainty);
    return import_step(f, st, "cannot store an energy counter update: ");
}

static int import_state(struct import_file *f, struct trace_fields *fl)
{
    int64_t gpu = gpu_id_of(f, trace_get_u(fl));
    uint64_t ts = trace_get_ts(fl);
    sqlite3_stmt *st = import_stmt(
        f, SLOT_STATE,
        "INSERT INTO gpu_samples(gpu_id, ts_ns, sm_clock_mhz, memory_clock_mhz, gpu_util,"
        " memory_util, memory_used_bytes, temperature_c, throttle_reasons)"
        " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!gpu || !st)
        return -1;
    sqlite3_bind_int64(st, 1, gpu);
    sqlite3_bind_int64(st, 2, (int64_t)ts);
    for (int col = 3; col <= 9; col++)
        import_bind_plus_one(st, col, trace_get_u(fl));
    return import_step(f, st, "cannot store a GPU state sample: ");
}

static int import_disabled(struct import_file *f, struct trace_fields *fl)
{
    const uint8_t *reason;
    size_t len = trace_get_s(fl, &reason);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_DISABLED,
                    "INSERT OR REPLACE INTO meta(key, value) VALUES('nvml_disabled_reason', ?)");
    if (!st)
        return -1;
    bind_text(st, 1, reason, len);
    return import_step(f, st, "cannot store the NVML disabled reason: ");
}

static int import_sampler(struct import_file *f, struct trace_fields *fl)
{
    static const char *const modes[] = {NULL, "acquire", "locked", "free"};
    int64_t gpu = gpu_id_of(f, trace_get_u(fl));
    sqlite3_stmt *st = import_stmt(
        f, SLOT_SAMPLER,
        "INSERT INTO nvml_sampler(gpu_id, duration_ns, energy_reads, energy_busy_ns,"
        " energy_max_ns, power_reads, power_busy_ns, power_max_ns, state_reads, state_busy_ns,"
        " state_max_ns, cpu_ns, counter_mode, counter_resets)"
        " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!gpu || !st)
        return -1;
    sqlite3_bind_int64(st, 1, gpu);
    for (int col = 2; col <= 12; col++)
        sqlite3_bind_int64(st, col, (int64_t)trace_get_u(fl));
    uint64_t mode = trace_get_u(fl);
    if (mode < sizeof modes / sizeof *modes && modes[mode])
        sqlite3_bind_text(st, 13, modes[mode], -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 13);
    sqlite3_bind_int64(st, 14, (int64_t)trace_get_u(fl));
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
        return -1;
    for (int col = 0; col < 5; col++)
        sqlite3_bind_value(st, col + 1, sqlite3_column_value(ranges, col));
    sqlite3_bind_int64(st, 6, g->gpu_id);
    if (sqlite3_column_type(ranges, 4) != SQLITE_NULL) {
        struct energy_interval e =
            energy_track_between(&g->track, (uint64_t)sqlite3_column_int64(ranges, 3),
                                 (uint64_t)sqlite3_column_int64(ranges, 4));
        sqlite3_bind_double(st, 7, e.mj / 1000);
        sqlite3_bind_double(st, 8, e.error_mj / 1000);
        sqlite3_bind_int64(st, 9, (int64_t)e.updates);
        sqlite3_bind_int64(st, 10,
                           (int64_t)(e.flags & 0x3) | (e.updates < 2 ? WINDOW_TOO_SHORT : 0));
    }
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
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
    int rc = -1;
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
    rc = !failed && step == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(ranges);
out:
    energy_db_free(gpus, n);
    return rc;
}

const struct import_source import_source_NVML = {
    .record = nvml_record,
    .session_finish = nvml_session_finish,
};
