/* sync_api: the synchronizing calls (cudaDeviceSynchronize, cudaStreamSynchronize,
 * cudaEventSynchronize, cudaStreamWaitEvent and their driver twins: the cuda_syncs table) and
 * the CPU time each thread spent blocked in them, per function. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>

/* The launching call of a wait: the runtime call when there is one, else the driver call. */
#define SYNC_CALL                                                                                  \
    "(SELECT a2.id FROM cuda_api a2 WHERE a2.process_id = s.process_id AND a2.correlation_id ="    \
    " s.correlation_id ORDER BY a2.api LIMIT 1)"

int rule_sync_api(struct analyze_ctx *ctx, struct analyze_result *res)
{
    ctx->error[0] = '\0';
    if (!analyze_table_has_rows(ctx, "cuda_api")) {
        analyze_note(res, "no CUDA API calls in this database (profile with -t cuda)");
        return 0;
    }
    sqlite3_stmt *groups = analyze_prepare(
        ctx, "sync_api",
        "SELECT s.process_id, s.thread_id, COALESCE(n.value, s.sync_kind) AS name, count(*),"
        " sum(s.end_ns - s.start_ns), max(s.end_ns - s.start_ns), p.pid, t.tid"
        " FROM cuda_syncs s LEFT JOIN cuda_api a ON a.id = " SYNC_CALL
        " LEFT JOIN strings n ON n.id = a.name_id LEFT JOIN processes p ON p.id = s.process_id"
        " LEFT JOIN threads t ON t.id = s.thread_id"
        " GROUP BY s.process_id, s.thread_id, 3 ORDER BY 5 DESC"); /* 3: not processes.name */
    sqlite3_stmt *rows = analyze_prepare(
        ctx, "sync_api",
        "SELECT s.start_ns, s.end_ns - s.start_ns, p.pid, t.tid, NULL, s.stream,"
        " " ANALYZE_RANGE_LABEL ", COALESCE(n.value, s.sync_kind), s.sync_kind || ' wait'"
        " FROM cuda_syncs s LEFT JOIN cuda_api a ON a.id = " SYNC_CALL
        " LEFT JOIN strings n ON n.id = a.name_id LEFT JOIN processes p ON p.id = s.process_id"
        " LEFT JOIN threads t ON t.id = s.thread_id" ANALYZE_RANGE_JOINS(
            "a.nvtx_range_id") " WHERE s.process_id = ?1 AND s.thread_id IS ?2 AND "
                               "COALESCE(n.value, s.sync_kind) IS ?3"
                               " ORDER BY 2 DESC LIMIT 10");
    int rc = groups && rows ? 0 : -EIO;
    while (rc == 0 && sqlite3_step(groups) == SQLITE_ROW) {
        int64_t count = sqlite3_column_int64(groups, 3), ns = sqlite3_column_int64(groups, 4);
        if (analyze_share(ctx, (double)ns) < SYNC_API_MIN_SHARE)
            continue;
        const char *name = (const char *)sqlite3_column_text(groups, 2);
        char total[32], longest[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)ns, NULL,
            "%s: %lld calls blocked thread %lld (pid %lld) for %s (longest %s)", name ? name : "?",
            (long long)count, (long long)sqlite3_column_int64(groups, 7),
            (long long)sqlite3_column_int64(groups, 6),
            analyze_fmt_ns(total, sizeof total, (double)ns),
            analyze_fmt_ns(longest, sizeof longest, sqlite3_column_double(groups, 5)));
        if (!f)
            continue;
        f->count = count;
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, sqlite3_column_int64(groups, 0));
        if (sqlite3_column_type(groups, 1) == SQLITE_NULL)
            sqlite3_bind_null(rows, 2);
        else
            sqlite3_bind_int64(rows, 2, sqlite3_column_int64(groups, 1));
        sqlite3_bind_text(rows, 3, name, -1, SQLITE_TRANSIENT);
        rc = analyze_evidence_from(ctx, f, rows);
    }
    sqlite3_finalize(groups);
    sqlite3_finalize(rows);
    return ctx->error[0] ? -EIO : rc;
}
