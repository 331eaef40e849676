/* nccl_sum: NCCL's collectives per type, message size, reduction and process, with the GPU time
 * of their kernels and nccl-tests' algorithm and bus bandwidths (docs/reports.md). The calls
 * are the NVTX ranges NCCL emits in its domain "NCCL" (ncclAllReduce, ...), their sizes and
 * communicators from the ranges' extended payloads (nvtx_payload_values); the GPU work is the
 * NCCL kernels (nccl_collectives.c parses their names). A call's kernels are those its thread
 * launched after it and before the next call it made: its own, or with ncclGroupStart/End
 * those of the group, launched at the group's end and shared by the group's calls in
 * proportion to their bytes. Kernels without a recorded call (NCCL_NVTX_DISABLE=1, NCCL before
 * 2.19, no API tracing) count on their own, by their name's collective, size unknown. */
#include "common/sql_query.h"
#include "model/aggregates.h"
#include "model/nccl.h"
#include "stats/cuda_query.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Temporary tables, built in this order (the connection may be read-only: TEMP is not). */
static const char nccl_sum_setup_sql[] =
    /* the payload entries NCCL names (2.19-2.21 call a Send's size "Bytes") */
    "CREATE TEMP TABLE nccl_fields(name_id INTEGER PRIMARY KEY, field TEXT);"
    "INSERT INTO temp.nccl_fields SELECT id, CASE value WHEN 'Message size [bytes]' THEN 'bytes'"
    " WHEN 'Bytes' THEN 'bytes' WHEN 'NCCL communicator ID' THEN 'comm'"
    " WHEN 'No. of ranks' THEN 'nranks' ELSE 'op' END FROM strings WHERE value IN"
    " ('Message size [bytes]', 'Bytes', 'NCCL communicator ID', 'No. of ranks',"
    " 'Reduction operation');"
    /* the calls: ranges of the domain NCCL named by a collective's API (temp.nccl_api) */
    "CREATE TEMP TABLE nccl_calls AS SELECT r.id AS range_id, r.process_id,"
    " r.start_thread_id AS thread_id, r.start_ns, a.collective,"
    " (SELECT v.value FROM nvtx_payload_values v JOIN temp.nccl_fields f ON f.name_id = v.name_id"
    "  WHERE v.range_id = r.id AND f.field = 'bytes' AND v.array_idx IS NULL) AS bytes,"
    " (SELECT v.value FROM nvtx_payload_values v JOIN temp.nccl_fields f ON f.name_id = v.name_id"
    "  WHERE v.range_id = r.id AND f.field = 'comm' AND v.array_idx IS NULL) AS comm,"
    " (SELECT coalesce(e.value, v.value) FROM nvtx_payload_values v"
    "  JOIN temp.nccl_fields f ON f.name_id = v.name_id LEFT JOIN strings e ON e.id = "
    "v.enum_name_id"
    "  WHERE v.range_id = r.id AND f.field = 'op' AND v.array_idx IS NULL) AS op,"
    " CAST(NULL AS INTEGER) AS launch_ns"
    " FROM ranges r JOIN strings s ON s.id = r.name_id JOIN temp.nccl_api a ON a.api = s.value"
    " WHERE r.domain_id IN (SELECT d.id FROM domains d JOIN strings n ON n.id = d.name_id"
    "  WHERE n.value = 'NCCL');"
    /* the kernels, with the thread and time of their launch; a kernel replayed from a CUDA
     * graph has its graph's launch, long after the calls captured in it: none */
    "CREATE TEMP TABLE nccl_kernels AS SELECT k.id, k.process_id, a.thread_id,"
    " a.start_ns AS launch_ns, k.end_ns - k.start_ns AS gpu_ns,"
    " lantern_nccl_kernel(k.name, 'collective') AS collective,"
    " lantern_nccl_kernel(k.name, 'spec') AS spec, CAST(NULL AS INTEGER) AS group_ns"
    " FROM kernel_ops k LEFT JOIN cuda_api a ON a.id = k.api_id"
    " AND (SELECT graph_id FROM kernels WHERE id = k.id) IS NULL"
    " WHERE k.name LIKE " NCCL_KERNEL_LIKE
    " AND lantern_nccl_kernel(k.name, 'collective') IS NOT NULL;"
    "CREATE INDEX temp.nccl_kernels_by_launch ON nccl_kernels(thread_id, launch_ns);"
    "CREATE INDEX temp.nccl_calls_by_start ON nccl_calls(thread_id, start_ns);"
    /* a call's group: the first NCCL launch of its thread from its start on; a kernel's: the
     * group of the last call its thread began before launching it, if a call of that group can
     * run in the kernel (an AllReduce kernel is not a Send's) */
    "UPDATE temp.nccl_calls SET launch_ns = (SELECT min(k.launch_ns) FROM temp.nccl_kernels k"
    " WHERE k.thread_id = nccl_calls.thread_id AND k.launch_ns >= nccl_calls.start_ns);"
    "UPDATE temp.nccl_kernels SET group_ns = (SELECT c.launch_ns FROM temp.nccl_calls c"
    " WHERE c.thread_id = nccl_kernels.thread_id AND c.start_ns <= nccl_kernels.launch_ns"
    " ORDER BY c.start_ns DESC LIMIT 1) WHERE thread_id IS NOT NULL;"
    "UPDATE temp.nccl_kernels SET group_ns = NULL WHERE NOT EXISTS (SELECT 1 FROM"
    " temp.nccl_calls c WHERE c.thread_id = nccl_kernels.thread_id"
    " AND c.launch_ns = nccl_kernels.group_ns"
    " AND lantern_nccl_runs(c.collective, nccl_kernels.collective));"
    "CREATE TEMP TABLE nccl_groups AS SELECT k.thread_id, k.group_ns, sum(k.gpu_ns) AS gpu_ns,"
    " (SELECT group_concat(spec, ', ') FROM (SELECT DISTINCT x.spec FROM temp.nccl_kernels x"
    "  WHERE x.thread_id = k.thread_id AND x.group_ns = k.group_ns ORDER BY x.spec)) AS spec,"
    " (SELECT count(*) FROM temp.nccl_calls c WHERE c.thread_id = k.thread_id"
    "  AND c.launch_ns = k.group_ns) AS calls,"
    " (SELECT count(c.bytes) FROM temp.nccl_calls c WHERE c.thread_id = k.thread_id"
    "  AND c.launch_ns = k.group_ns) AS known,"
    " (SELECT sum(c.bytes) FROM temp.nccl_calls c WHERE c.thread_id = k.thread_id"
    "  AND c.launch_ns = k.group_ns) AS bytes"
    " FROM temp.nccl_kernels k WHERE k.group_ns IS NOT NULL GROUP BY k.thread_id, k.group_ns;"
    /* communicators: "No. of ranks" of the communicator ranges (ncclCommInitRank, ...) */
    "CREATE TEMP TABLE nccl_inits AS SELECT r.process_id, n.value AS nranks,"
    " (SELECT c.value FROM nvtx_payload_values c JOIN temp.nccl_fields f ON f.name_id = c.name_id"
    "  WHERE c.range_id = n.range_id AND c.payload_id = n.payload_id AND f.field = 'comm') AS comm"
    " FROM nvtx_payload_values n JOIN ranges r ON r.id = n.range_id"
    " WHERE n.name_id IN (SELECT name_id FROM temp.nccl_fields WHERE field = 'nranks');"
    /* one row per call (kernels without a call: one each), with its communicator's size:
     * from its communicator's range, else the one size its process's ranges give, else the
     * processes the database holds */
    "CREATE TEMP TABLE nccl_rows AS WITH calls AS (SELECT c.*,"
    "  (SELECT min(i.nranks) FROM temp.nccl_inits i WHERE i.comm = c.comm) AS by_comm,"
    "  (SELECT CASE WHEN count(DISTINCT i.nranks) = 1 THEN min(i.nranks) END"
    "   FROM temp.nccl_inits i WHERE i.process_id = c.process_id) AS by_process"
    "  FROM temp.nccl_calls c),"
    " in_db(n) AS (SELECT count(*) FROM (SELECT process_id FROM temp.nccl_calls"
    "  UNION SELECT process_id FROM temp.nccl_kernels)),"
    " sized AS (SELECT c.*, coalesce(c.by_comm, c.by_process, (SELECT n FROM in_db)) AS ranks,"
    "  CASE WHEN c.by_comm IS NOT NULL THEN 'communicator' WHEN c.by_process IS NOT NULL"
    "  THEN 'process' ELSE 'database' END AS ranks_from FROM calls c)"
    " SELECT c.process_id, c.collective, c.op, c.ranks, c.ranks_from,"
    "  lantern_nccl_size(c.collective, c.bytes, c.ranks) AS size,"
    "  CASE WHEN g.gpu_ns IS NULL THEN NULL WHEN g.known = g.calls AND g.bytes > 0"
    "  THEN 1.0 * g.gpu_ns * c.bytes / g.bytes ELSE 1.0 * g.gpu_ns / g.calls END AS gpu_ns,"
    "  g.spec FROM sized c LEFT JOIN temp.nccl_groups g ON g.thread_id = c.thread_id"
    "  AND g.group_ns = c.launch_ns"
    " UNION ALL SELECT k.process_id, k.collective, NULL, coalesce(k.by_process,"
    "  (SELECT n FROM in_db)), CASE WHEN k.by_process IS NOT NULL THEN 'process'"
    "  ELSE 'database' END, NULL, k.gpu_ns, k.spec FROM (SELECT x.*,"
    "  (SELECT CASE WHEN count(DISTINCT i.nranks) = 1 THEN min(i.nranks) END"
    "   FROM temp.nccl_inits i WHERE i.process_id = x.process_id) AS by_process"
    "  FROM temp.nccl_kernels x WHERE x.group_ns IS NULL) k;";

static const char nccl_sum_cleanup_sql[] =
    "DROP TABLE IF EXISTS temp.nccl_api; DROP TABLE IF EXISTS temp.nccl_fields;"
    "DROP TABLE IF EXISTS temp.nccl_calls; DROP TABLE IF EXISTS temp.nccl_kernels;"
    "DROP TABLE IF EXISTS temp.nccl_groups; DROP TABLE IF EXISTS temp.nccl_inits;"
    "DROP TABLE IF EXISTS temp.nccl_rows;";

#define NCCL_ROW_KEY(x)                                                                            \
    x ".process_id = r.process_id AND " x ".collective = r.collective AND " x ".op IS r.op AND " x \
      ".size IS r.size AND " x ".ranks IS r.ranks AND " x ".ranks_from = r.ranks_from"

// clang-format off
static const char nccl_sum_sql[] =
    "SELECT 100.0 * sum(r.gpu_ns) / (SELECT sum(gpu_ns) FROM temp.nccl_rows), sum(r.gpu_ns),"
    " count(*), avg(r.gpu_ns), lantern_median(r.gpu_ns), min(r.gpu_ns), max(r.gpu_ns),"
    " lantern_stddev(r.gpu_ns), r.size, r.size / avg(r.gpu_ns),"
    " r.size / avg(r.gpu_ns) * lantern_nccl_busbw(r.collective, r.ranks), r.ranks, r.ranks_from,"
    " r.op, (SELECT group_concat(spec, ', ') FROM (SELECT DISTINCT x.spec FROM temp.nccl_rows x"
    "  WHERE " NCCL_ROW_KEY("x") " AND x.spec IS NOT NULL ORDER BY x.spec)),"
    " r.collective, (SELECT label FROM process_labels WHERE id = r.process_id) AS process"
    " FROM temp.nccl_rows r GROUP BY r.process_id, r.collective, r.op, r.size, r.ranks,"
    " r.ranks_from ORDER BY process, r.process_id, r.collective, r.size, r.op";
// clang-format on

static const struct table_column nccl_sum_columns[] = {
    STATS_DURATION_COLUMNS("Calls", "calls"),
    {"Size (B)", "size_bytes", TABLE_INT},
    {"AlgBW (GB/s)", "algbw_gbps", TABLE_REAL},
    {"BusBW (GB/s)", "busbw_gbps", TABLE_REAL},
    {"Ranks", "ranks", TABLE_INT},
    {"Ranks From", "ranks_from", TABLE_TEXT},
    {"Op", "op", TABLE_TEXT},
    {"Kernel", "kernel", TABLE_TEXT},
    {"Collective", "collective", TABLE_TEXT},
    {"Process", "process", TABLE_TEXT},
};

/* temp.nccl_api from the table of collectives: the ranges that are calls, each API with its
 * *Config twin (ncclAllReduceConfig: NCCL 2.29's per-call configuration, a range of its own). */
static int nccl_fill_api(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db, "CREATE TEMP TABLE nccl_api(api TEXT PRIMARY KEY, collective TEXT)", NULL,
                     NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.nccl_api VALUES(?1, ?2), (?1 || 'Config', ?2)", -1,
                           &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    for (const struct nccl_collective *c = nccl_collectives; c->name && rc == 0; c++) {
        if (!c->api)
            continue;
        sqlite3_bind_text(st, 1, c->api, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c->name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* What the output lacks, said on stderr (CSV and JSON stay clean). */
static void nccl_note(struct stats_ctx *ctx)
{
    int64_t calls = sql_query_int(ctx->db, "SELECT count(*) FROM temp.nccl_calls", 0),
            kernels = sql_query_int(ctx->db, "SELECT count(*) FROM temp.nccl_kernels", 0);
    if (!calls && !kernels)
        snprintf(ctx->note, sizeof ctx->note,
                 "no NCCL activity: no NVTX range of the domain NCCL (nvtx in -t, NCCL 2.19+ "
                 "without NCCL_NVTX_DISABLE) and no NCCL kernel (-t cuda)");
    else if (!kernels)
        snprintf(ctx->note, sizeof ctx->note,
                 "no NCCL kernel was recorded (-t cuda, on a GPU): GPU times and bandwidths "
                 "are unknown");
    else if (!calls)
        snprintf(ctx->note, sizeof ctx->note,
                 "no NVTX range of NCCL's calls (NCCL_NVTX_DISABLE=1, NCCL before 2.19, or -t "
                 "without nvtx): times by kernel, sizes unknown");
}

int stats_nccl_sum(struct stats_ctx *ctx)
{
    sqlite3_exec(ctx->db, nccl_sum_cleanup_sql, NULL, NULL, NULL);
    int rc = -EIO;
    if (aggregate_sql_register(ctx->db) < 0 || nccl_sql_register(ctx->db) < 0 ||
        nccl_fill_api(ctx->db) < 0 ||
        sqlite3_exec(ctx->db, nccl_sum_setup_sql, NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(ctx->error, sizeof ctx->error, "nccl_sum: %s", sqlite3_errmsg(ctx->db));
        goto done;
    }
    rc = stats_cuda_query(ctx, "nccl_sum", nccl_sum_columns,
                          sizeof nccl_sum_columns / sizeof *nccl_sum_columns, nccl_sum_sql);
    ctx->note[0] = 0;
    if (rc == 0)
        nccl_note(ctx);
done:
    sqlite3_exec(ctx->db, nccl_sum_cleanup_sql, NULL, NULL, NULL);
    return rc;
}
