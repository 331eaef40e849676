/* alloc_in_loop: device, host and managed allocations and frees made inside NVTX ranges that
 * repeat or hold many of them (the NVTX blog's lesson: cudaMalloc in a loop costs time, and
 * cudaFree synchronizes the device; a pool allocator makes both nearly free). */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>

/* Runtime and driver functions that allocate or free memory through the driver. The
 * stream-ordered ones (cudaMallocAsync, cuMemAllocAsync) use a pool and are left out. */
#define ALLOC_NAMES                                                                                \
    "('cudaMalloc', 'cudaFree', 'cudaMallocHost', 'cudaFreeHost', 'cudaHostAlloc',"                \
    " 'cudaMallocManaged', 'cudaMallocPitch', 'cudaMalloc3D', 'cudaMallocArray', 'cudaFreeArray'," \
    " 'cuMemAlloc', 'cuMemAlloc_v2', 'cuMemFree', 'cuMemFree_v2', 'cuMemAllocHost',"               \
    " 'cuMemAllocHost_v2', 'cuMemFreeHost', 'cuMemHostAlloc', 'cuMemAllocManaged',"                \
    " 'cuMemAllocPitch', 'cuMemAllocPitch_v2')"

/* The allocation calls, a driver call made inside a runtime call (same correlation) once. */
#define ALLOC_CALLS                                                                                \
    "alloc AS (SELECT a.* FROM cuda_api a WHERE a.name_id IN (SELECT id FROM strings WHERE"        \
    " value IN " ALLOC_NAMES ") AND a.nvtx_range_id IS NOT NULL AND NOT (a.api = 1 AND EXISTS"     \
    " (SELECT 1 FROM cuda_api r WHERE r.process_id = a.process_id AND r.correlation_id ="          \
    " a.correlation_id AND r.api = 0)))"

int rule_alloc_in_loop(struct analyze_ctx *ctx, struct analyze_result *res)
{
    ctx->error[0] = '\0';
    if (!analyze_table_has_rows(ctx, "cuda_api")) {
        analyze_note(res, "no CUDA API calls in this database (profile with -t cuda)");
        return 0;
    }
    sqlite3_stmt *groups = analyze_prepare(
        ctx, "alloc_in_loop",
        "WITH " ALLOC_CALLS ", per_range AS (SELECT r.process_id, r.domain_id, r.name_id,"
        "  r.id, count(*) AS calls, sum(c.end_ns - c.start_ns) AS ns"
        "  FROM alloc c JOIN ranges r ON r.id = c.nvtx_range_id GROUP BY r.id)"
        " SELECT q.process_id, q.domain_id, q.name_id, sum(q.calls), count(*), sum(q.ns),"
        "  max(q.calls), (SELECT " ANALYZE_RANGE_LABEL
        " FROM (SELECT q.id AS id) x" ANALYZE_RANGE_JOINS(
            "x.id") "), (SELECT pid FROM processes WHERE id = q.process_id)"
                    " FROM per_range q GROUP BY q.process_id, q.domain_id, q.name_id ORDER BY 6 "
                    "DESC");
    sqlite3_stmt *rows = analyze_prepare(
        ctx, "alloc_in_loop",
        "WITH " ALLOC_CALLS " SELECT c.start_ns, c.end_ns - c.start_ns, p.pid, t.tid, NULL, NULL,"
        " " ANALYZE_RANGE_LABEL ", n.value, NULL FROM alloc c JOIN ranges r ON r.id ="
        " c.nvtx_range_id LEFT JOIN strings rs ON rs.id = r.name_id LEFT JOIN domains rd ON"
        " rd.id = r.domain_id LEFT JOIN strings rds ON rds.id = rd.name_id"
        " LEFT JOIN strings n ON n.id = c.name_id LEFT JOIN processes p ON p.id = c.process_id"
        " LEFT JOIN threads t ON t.id = c.thread_id"
        " WHERE r.process_id = ?1 AND r.domain_id = ?2 AND r.name_id IS ?3"
        " ORDER BY 2 DESC LIMIT 10");
    int rc = groups && rows ? 0 : -EIO;
    while (rc == 0 && sqlite3_step(groups) == SQLITE_ROW) {
        int64_t calls = sqlite3_column_int64(groups, 3),
                instances = sqlite3_column_int64(groups, 4);
        int64_t ns = sqlite3_column_int64(groups, 5);
        /* many in one range name, or calls in several instances of it: a loop */
        if (calls < ALLOC_MIN_CALLS_ONE_RANGE && instances < ALLOC_MIN_REPEATS)
            continue;
        const char *label = (const char *)sqlite3_column_text(groups, 7);
        char total[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)ns, NULL,
            "%lld allocation/free calls inside %s (%lld instance%s with calls, up to %lld in "
            "one) in pid %lld took %s",
            (long long)calls, label ? label : "(unnamed)", (long long)instances,
            instances == 1 ? "" : "s", (long long)sqlite3_column_int64(groups, 6),
            (long long)sqlite3_column_int64(groups, 8),
            analyze_fmt_ns(total, sizeof total, (double)ns));
        if (!f)
            continue;
        f->count = calls;
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, sqlite3_column_int64(groups, 0));
        sqlite3_bind_int64(rows, 2, sqlite3_column_int64(groups, 1));
        if (sqlite3_column_type(groups, 2) == SQLITE_NULL)
            sqlite3_bind_null(rows, 3);
        else
            sqlite3_bind_int64(rows, 3, sqlite3_column_int64(groups, 2));
        rc = analyze_evidence_from(ctx, f, rows);
    }
    sqlite3_finalize(groups);
    sqlite3_finalize(rows);
    return ctx->error[0] ? -EIO : rc;
}
