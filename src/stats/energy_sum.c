/* energy_sum: GPU energy per GPU for the whole run, each process (rank) on each GPU it used,
 * each NVTX range name, each kernel name and each lantern.h energy window: joules, average
 * watts and an error bound. The energy of an interval comes from the SQL functions of
 * src/energy/energy_db.h (the energy counter interpolated with power samples), so disjoint
 * ranges add up to their union; processes and ranges are charged only their own process's
 * GPUs (temp.energy_process_gpus, filled there), so a merged job's ranks do not each carry the
 * whole job's energy. Under it, where RAPL was sampled, CPU package energy (model/cpu_energy.h). */
#include "energy/energy_db.h"
#include "model/cpu_energy.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>

/* "train.py (rank 1)": the process_labels view (src/db/schema.sql) */
#define PROCESS_LABEL "(SELECT label FROM process_labels WHERE id = p.id)"

/* Each row: scope, name, GPU (NVML index), host, instances, time, joules, error bound, and
 * how many processes used the GPU (run rows: over the run; process rows: during that
 * process's life). Ranges and kernels are summed per name: overlapping instances (nested
 * ranges of one name, concurrent kernels, the same range on two ranks sharing a GPU) each
 * count their whole energy, as their times do. A GPU's host is its users' when they agree,
 * else the session's when it has one. */
static const char energy_query[] =
    "WITH g AS (SELECT s.gpu_id, gp.nvml_index AS gpu, min(s.ts_ns) AS first_ns,"
    "  max(s.ts_ns) AS last_ns FROM gpu_samples s JOIN gpus gp ON gp.id = s.gpu_id"
    "  GROUP BY s.gpu_id),"
    " users AS (SELECT u.gpu_id, count(*) AS processes, CASE WHEN count(DISTINCT p.host) = 1"
    "  THEN max(p.host) END AS host FROM temp.energy_process_gpus u"
    "  JOIN processes p ON p.id = u.process_id GROUP BY u.gpu_id),"
    " session_host AS (SELECT value AS host FROM meta WHERE key = 'host' AND instr(value, ',') = "
    "0),"
    " gh AS (SELECT g.*, COALESCE(users.host, (SELECT host FROM session_host)) AS host,"
    "  COALESCE(users.processes, 0) AS processes FROM g LEFT JOIN users USING (gpu_id)),"
    " run AS (SELECT gh.gpu_id, gh.gpu, gh.host, gh.processes,"
    "  max(gh.first_ns, COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_ns'),"
    "  gh.first_ns)) AS start_ns,"
    "  min(gh.last_ns, COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'end_ns'),"
    "  gh.last_ns)) AS end_ns FROM gh),"
    " rows AS ("
    " SELECT 0 AS ord, 'run' AS scope, COALESCE((SELECT value FROM meta WHERE key = 'command'),"
    "  '(run)') AS name, gpu, host, 1 AS instances, end_ns - start_ns AS total_ns,"
    "  lantern_gpu_energy_j(gpu_id, start_ns, end_ns) AS energy_j,"
    "  lantern_gpu_energy_error_j(gpu_id, start_ns, end_ns) AS error_j, processes FROM run"
    " UNION ALL SELECT 1, 'process', p.pid || ' ' || " PROCESS_LABEL ", gh.gpu, p.host, 1,"
    "  p.end_ns - p.start_ns, lantern_gpu_energy_j(gh.gpu_id, p.start_ns, p.end_ns),"
    "  lantern_gpu_energy_error_j(gh.gpu_id, p.start_ns, p.end_ns),"
    "  (SELECT count(*) FROM temp.energy_process_gpus o JOIN processes q ON q.id = o.process_id"
    "   WHERE o.gpu_id = u.gpu_id AND (q.id = p.id OR (q.start_ns < p.end_ns"
    "   AND COALESCE(q.end_ns, p.end_ns) > p.start_ns)))"
    "  FROM temp.energy_process_gpus u JOIN processes p ON p.id = u.process_id"
    "  JOIN gh ON gh.gpu_id = u.gpu_id WHERE p.end_ns IS NOT NULL"
    " UNION ALL SELECT 2, 'nvtx', CASE WHEN ds.value IS NULL THEN '' ELSE ds.value || ':' END"
    "  || COALESCE(s.value, '(unnamed)'), gh.gpu, gh.host, count(*), sum(r.end_ns - r.start_ns),"
    "  sum(lantern_gpu_energy_j(gh.gpu_id, r.start_ns, r.end_ns)),"
    "  sum(lantern_gpu_energy_error_j(gh.gpu_id, r.start_ns, r.end_ns)), NULL"
    "  FROM ranges r JOIN temp.energy_process_gpus u ON u.process_id = r.process_id"
    "  JOIN gh ON gh.gpu_id = u.gpu_id LEFT JOIN strings s ON s.id = r.name_id"
    "  LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
    "  WHERE r.end_ns IS NOT NULL GROUP BY r.domain_id, r.name_id, gh.gpu_id"
    " UNION ALL SELECT 3, 'kernel', COALESCE(dn.value, mn.value, '(unnamed kernel)'), gh.gpu,"
    "  gh.host, count(*), sum(k.end_ns - k.start_ns),"
    "  sum(lantern_gpu_energy_j(gh.gpu_id, k.start_ns, k.end_ns)),"
    "  sum(lantern_gpu_energy_error_j(gh.gpu_id, k.start_ns, k.end_ns)), NULL"
    "  FROM kernels k JOIN gh ON gh.gpu_id = k.gpu_id LEFT JOIN strings dn ON dn.id = "
    "k.demangled_id"
    "  LEFT JOIN strings mn ON mn.id = k.name_id GROUP BY 3, gh.gpu_id"
    " UNION ALL SELECT 4, 'window', COALESCE(s.value, '(unnamed)'), gh.gpu, gh.host, count(*),"
    "  sum(w.end_ns - w.start_ns), sum(w.energy_j), sum(w.error_j), NULL"
    "  FROM energy_windows w JOIN gh ON gh.gpu_id = w.gpu_id LEFT JOIN strings s ON s.id = "
    "w.name_id"
    "  WHERE w.end_ns IS NOT NULL GROUP BY w.name_id, gh.gpu_id)"
    " SELECT scope, name, gpu, host, instances, total_ns, energy_j,"
    "  CASE WHEN total_ns > 0 THEN energy_j * 1e9 / total_ns END, error_j, processes"
    " FROM rows ORDER BY ord, energy_j DESC, name";

static const struct table_column energy_columns[] = {
    {"Scope", "scope", TABLE_TEXT},
    {"Name", "name", TABLE_TEXT},
    {"GPU", "gpu", TABLE_INT},
    {"Host", "host", TABLE_TEXT},
    {"Instances", "instances", TABLE_INT},
    {"Total Time", "total_ns", TABLE_NS},
    {"Energy (J)", "energy_j", TABLE_REAL},
    {"Avg Power (W)", "avg_w", TABLE_REAL},
    {"Error (J)", "error_j", TABLE_REAL},
    {"Processes", "processes", TABLE_INT}, /* > 1 on a process row: the GPU was shared */
};

/* Why there is nothing to show (ctx->note): the sampler's reason when it recorded one. */
static void no_samples(struct stats_ctx *ctx)
{
    sqlite3_stmt *st;
    const char *reason = NULL;
    if (sqlite3_prepare_v2(ctx->db, "SELECT value FROM meta WHERE key = 'nvml_disabled_reason'", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        reason = (const char *)sqlite3_column_text(st, 0);
    snprintf(ctx->note, sizeof ctx->note, "energy_sum: no GPU power samples in this database%s%s",
             reason ? ": " : " (profile with -t nvml)", reason ? reason : "");
    sqlite3_finalize(st);
}

static void write_cell(struct table *t, sqlite3_stmt *st, int col, enum table_kind kind)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL && kind != TABLE_TEXT) {
        table_text(t, NULL);
        return;
    }
    switch (kind) {
    case TABLE_TEXT:
        table_text(t, (const char *)sqlite3_column_text(st, col));
        break;
    case TABLE_INT:
        table_int(t, sqlite3_column_int64(st, col));
        break;
    case TABLE_NS:
        table_ns(t, sqlite3_column_double(st, col));
        break;
    default:
        table_real(t, sqlite3_column_double(st, col));
        break;
    }
}

/* ---- CPU package energy (RAPL, model/cpu_energy.h): a table of its own under the GPU's,
 * in the table format only, or why it was not sampled when -t rapl asked for it ---------- */

/* Each row: package, scope, name, instances, time, joules: the run (clamped to the package's
 * samples), then each NVTX range name (every process's: a package serves them all). */
static const char cpu_energy_query[] =
    "WITH pk AS (SELECT package, min(ts_ns) AS first_ns, max(ts_ns) AS last_ns"
    "  FROM cpu_energy_samples GROUP BY package),"
    " run AS (SELECT package, max(first_ns, COALESCE((SELECT CAST(value AS INTEGER) FROM meta"
    "  WHERE key = 'start_ns'), first_ns)) AS start_ns, min(last_ns, COALESCE((SELECT"
    "  CAST(value AS INTEGER) FROM meta WHERE key = 'end_ns'), last_ns)) AS end_ns FROM pk),"
    " rows AS (SELECT 0 AS ord, package, 'run' AS scope, COALESCE((SELECT value FROM meta"
    "  WHERE key = 'command'), '(run)') AS name, 1 AS instances, end_ns - start_ns AS total_ns,"
    "  lantern_cpu_energy_j(package, start_ns, end_ns) AS energy_j FROM run"
    " UNION ALL SELECT 1, pk.package, 'nvtx', CASE WHEN ds.value IS NULL THEN '' ELSE"
    "  ds.value || ':' END || COALESCE(s.value, '(unnamed)'), count(*),"
    "  sum(r.end_ns - r.start_ns), sum(lantern_cpu_energy_j(pk.package, r.start_ns, r.end_ns))"
    "  FROM ranges r CROSS JOIN pk LEFT JOIN strings s ON s.id = r.name_id"
    "  LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
    "  WHERE r.end_ns IS NOT NULL GROUP BY r.domain_id, r.name_id, pk.package)"
    " SELECT package, scope, name, instances, total_ns, energy_j,"
    "  CASE WHEN total_ns > 0 THEN energy_j * 1e9 / total_ns END"
    " FROM rows ORDER BY package, ord, energy_j DESC, name";

static const struct table_column cpu_energy_columns[] = {
    {"CPU Package", "package", TABLE_INT}, {"Scope", "scope", TABLE_TEXT},
    {"Name", "name", TABLE_TEXT},          {"Instances", "instances", TABLE_INT},
    {"Total Time", "total_ns", TABLE_NS},  {"Energy (J)", "energy_j", TABLE_REAL},
    {"Avg Power (W)", "avg_w", TABLE_REAL},
};

/* 0, or -EIO with ctx->error set. Nothing at all where RAPL was neither sampled nor asked for. */
static int print_cpu_energy(struct stats_ctx *ctx)
{
    char why[512];
    int packages = cpu_energy_register_sql(ctx->db);
    if (packages == 0 && cpu_energy_disabled_reason(ctx->db, why, sizeof why))
        fprintf(ctx->out, "\nCPU energy: not sampled: %s\n", why);
    if (packages <= 0)
        return 0;
    int ncols = (int)(sizeof cpu_energy_columns / sizeof cpu_energy_columns[0]);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctx->db, cpu_energy_query, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    fputs("\nCPU package energy (RAPL):\n", ctx->out);
    struct table *t = stats_new_table(ctx, cpu_energy_columns, ncols);
    int step = SQLITE_DONE;
    while (t && (step = sqlite3_step(st)) == SQLITE_ROW)
        for (int col = 0; col < ncols; col++)
            write_cell(t, st, col, cpu_energy_columns[col].kind);
    sqlite3_finalize(st);
    if (t && step == SQLITE_DONE && table_finish(t) == 0)
        return 0;
fail:
    snprintf(ctx->error, sizeof ctx->error, "energy_sum: %s", sqlite3_errmsg(ctx->db));
    return -EIO;
}

/* Below the table: what the sampling itself cost, per GPU (nvml_sampler; absent in databases
 * from before it was recorded), so that nobody reads the energy without knowing how hard the
 * driver was polled for it. */
static void print_footprint(struct stats_ctx *ctx)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            ctx->db,
            "SELECT g.nvml_index, f.duration_ns, f.energy_reads, f.energy_busy_ns,"
            " f.energy_max_ns, f.power_reads + f.state_reads, f.power_busy_ns + f.state_busy_ns,"
            " f.cpu_ns, COALESCE(f.counter_mode, 'not read'), f.counter_resets"
            " FROM nvml_sampler f JOIN gpus g ON g.id = f.gpu_id WHERE f.duration_ns > 0"
            " ORDER BY g.nvml_index",
            -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double secs = (double)sqlite3_column_int64(st, 1) / 1e9, ns = secs * 1e9;
        fprintf(ctx->out,
                "Sampling GPU %lld: energy counter %.1f reads/s (in flight %.2f %% of the time, "
                "longest %.1f ms; %s, %lld resets), power and state %.0f reads/s (%.2f %%), "
                "CPU %.2f %%\n",
                (long long)sqlite3_column_int64(st, 0), (double)sqlite3_column_int64(st, 2) / secs,
                100.0 * (double)sqlite3_column_int64(st, 3) / ns,
                (double)sqlite3_column_int64(st, 4) / 1e6, (const char *)sqlite3_column_text(st, 8),
                (long long)sqlite3_column_int64(st, 9), (double)sqlite3_column_int64(st, 5) / secs,
                100.0 * (double)sqlite3_column_int64(st, 6) / ns,
                100.0 * (double)sqlite3_column_int64(st, 7) / ns);
    }
    sqlite3_finalize(st);
}

int stats_energy_sum(struct stats_ctx *ctx)
{
    int gpus = energy_db_register_sql(ctx->db);
    int ncols = (int)(sizeof energy_columns / sizeof energy_columns[0]);
    if (gpus < 0) {
        snprintf(ctx->error, sizeof ctx->error, "energy_sum: %s", sqlite3_errmsg(ctx->db));
        return -EIO;
    }
    if (gpus == 0) {
        no_samples(ctx);
        int rc = stats_empty(ctx, energy_columns, ncols);
        return rc == 0 && ctx->format == TABLE_FORMAT_TABLE ? print_cpu_energy(ctx) : rc;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ctx->db, energy_query, -1, &st, NULL) != SQLITE_OK) {
        snprintf(ctx->error, sizeof ctx->error, "energy_sum: %s", sqlite3_errmsg(ctx->db));
        return -EIO;
    }
    struct table *t = stats_new_table(ctx, energy_columns, ncols);
    int step = SQLITE_DONE;
    while (t && (step = sqlite3_step(st)) == SQLITE_ROW)
        for (int col = 0; col < ncols; col++)
            write_cell(t, st, col, energy_columns[col].kind);
    int rc = t && step == SQLITE_DONE ? 0 : -EIO;
    if (rc)
        snprintf(ctx->error, sizeof ctx->error, "energy_sum: %s", sqlite3_errmsg(ctx->db));
    sqlite3_finalize(st);
    if (t && table_finish(t) < 0 && !rc) {
        snprintf(ctx->error, sizeof ctx->error, "energy_sum: cannot write the table");
        rc = -EIO;
    }
    if (!rc && ctx->format == TABLE_FORMAT_TABLE) {
        putc('\n', ctx->out);
        print_footprint(ctx);
        rc = print_cpu_energy(ctx);
    }
    return rc;
}
