/* Rules on copies and memsets: pageable_memcpy (copies to or from pageable host memory, which
 * the driver stages through a pinned buffer: slower, and never overlapped with kernels) and
 * sync_memops (synchronous copies and memsets, during which the CPU waits). */
#include "analyze/analyze_internal.h"

#include <stdlib.h>

/* The columns every evidence query of a GPU copy or memset shares (x is the row). */
#define OP_EVIDENCE_JOINS                                                                          \
    " LEFT JOIN processes p ON p.id = x.process_id LEFT JOIN cuda_api a ON a.id = x.api_id"       \
    " LEFT JOIN threads t ON t.id = a.thread_id LEFT JOIN gpus g ON g.id = x.gpu_id"             \
    " LEFT JOIN strings an ON an.id = a.name_id" ANALYZE_RANGE_JOINS("x.nvtx_range_id")

#define PAGEABLE "(x.src_kind = 'pageable' OR x.dst_kind = 'pageable')"

/* Bytes per ns of this run's pinned copies of one kind, 0 when it has none. */
static double pinned_rate(struct analyze_ctx *ctx, const char *copy_kind)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "pageable_memcpy",
        "SELECT sum(bytes) * 1.0 / sum(end_ns - start_ns) FROM memcpys WHERE copy_kind IS ?1"
        " AND (src_kind = 'pinned' OR dst_kind = 'pinned') AND end_ns > start_ns");
    double rate = 0;
    if (!st)
        return 0;
    sqlite3_bind_text(st, 1, copy_kind, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        rate = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return rate;
}

int rule_pageable_memcpy(struct analyze_ctx *ctx, struct analyze_result *res)
{
    ctx->error[0] = '\0';
    sqlite3_stmt *groups = analyze_prepare(
        ctx, "pageable_memcpy",
        "SELECT x.process_id, x.copy_kind, count(*), sum(x.end_ns - x.start_ns), sum(x.bytes),"
        " (SELECT pid FROM processes WHERE id = x.process_id)"
        " FROM memcpys x WHERE " PAGEABLE " GROUP BY x.process_id, x.copy_kind ORDER BY 4 DESC");
    sqlite3_stmt *rows = analyze_prepare(
        ctx, "pageable_memcpy",
        "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", '[CUDA memcpy ' || COALESCE(x.copy_kind, '?') || ']',"
        " printf('%.2f MB %s -> %s, %.2f GB/s%s', x.bytes / 1e6, x.src_kind, x.dst_kind,"
        "  x.bytes * 1.0 / max(1, x.end_ns - x.start_ns), CASE WHEN x.is_async THEN ', async'"
        "  ELSE '' END)"
        " FROM memcpys x" OP_EVIDENCE_JOINS " WHERE " PAGEABLE
        " AND x.process_id = ?1 AND x.copy_kind IS ?2 ORDER BY 2 DESC LIMIT 10");
    int rc = groups && rows ? 0 : -1;
    while (rc == 0 && sqlite3_step(groups) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(groups, 1);
        int64_t count = sqlite3_column_int64(groups, 2), ns = sqlite3_column_int64(groups, 3);
        double bytes = sqlite3_column_double(groups, 4);
        double pinned = pinned_rate(ctx, kind), saved;
        char total[32], rate_text[96];
        /* With pinned copies of the same kind in the run, the pageable ones could have gone
         * at their rate; without, assume pinned doubles the rate (docs/analyze.md). */
        if (pinned > 0) {
            saved = (double)ns - bytes / pinned;
            snprintf(rate_text, sizeof rate_text, "pinned copies of this run: %.2f GB/s", pinned);
        } else {
            saved = (double)ns / 2;
            snprintf(rate_text, sizeof rate_text, "pinned assumed 2x faster");
        }
        struct analyze_finding *f = analyze_add_finding(
            res, saved, NULL, "%lld %s copies with pageable host memory in pid %lld: %.2f MB in %s "
                              "(%.2f GB/s; %s)",
            (long long)count, kind ? kind : "?", (long long)sqlite3_column_int64(groups, 5),
            bytes / 1e6, analyze_fmt_ns(total, sizeof total, (double)ns),
            ns > 0 ? bytes / (double)ns : 0, rate_text);
        if (!f)
            continue;
        f->count = count;
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, sqlite3_column_int64(groups, 0));
        sqlite3_bind_text(rows, 2, kind, -1, SQLITE_TRANSIENT);
        rc = analyze_evidence_from(ctx, f, rows);
    }
    sqlite3_finalize(groups);
    sqlite3_finalize(rows);
    return ctx->error[0] ? -1 : rc;
}

int rule_sync_memops(struct analyze_ctx *ctx, struct analyze_result *res)
{
    ctx->error[0] = '\0';
    /* the CPU's time in each synchronous call: the most an asynchronous one gives back */
    sqlite3_stmt *groups = analyze_prepare(
        ctx, "sync_memops",
        "SELECT 0, x.process_id, x.copy_kind, count(*), sum(a.end_ns - a.start_ns),"
        " sum(x.end_ns - x.start_ns), (SELECT pid FROM processes WHERE id = x.process_id)"
        " FROM memcpys x JOIN cuda_api a ON a.id = x.api_id WHERE x.is_async = 0"
        " GROUP BY x.process_id, x.copy_kind"
        " UNION ALL SELECT 1, x.process_id, 'memset', count(*), sum(a.end_ns - a.start_ns),"
        " sum(x.end_ns - x.start_ns), (SELECT pid FROM processes WHERE id = x.process_id)"
        " FROM memsets x JOIN cuda_api a ON a.id = x.api_id WHERE x.is_async = 0"
        " GROUP BY x.process_id ORDER BY 5 DESC");
    sqlite3_stmt *copies = analyze_prepare(
        ctx, "sync_memops",
        "SELECT a.start_ns, a.end_ns - a.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", an.value,"
        " printf('%.2f MB %s %s -> %s; GPU %.3f us', x.bytes / 1e6, x.copy_kind, x.src_kind,"
        "  x.dst_kind, (x.end_ns - x.start_ns) / 1e3)"
        " FROM memcpys x" OP_EVIDENCE_JOINS " WHERE x.is_async = 0 AND x.process_id = ?1"
        " AND x.copy_kind IS ?2 ORDER BY 2 DESC LIMIT 10");
    sqlite3_stmt *sets = analyze_prepare(
        ctx, "sync_memops",
        "SELECT a.start_ns, a.end_ns - a.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", an.value,"
        " printf('%.2f MB memset; GPU %.3f us', x.bytes / 1e6, (x.end_ns - x.start_ns) / 1e3)"
        " FROM memsets x" OP_EVIDENCE_JOINS " WHERE x.is_async = 0 AND x.process_id = ?1"
        " AND ?2 IS NOT NULL ORDER BY 2 DESC LIMIT 10");
    int rc = groups && copies && sets ? 0 : -1;
    while (rc == 0 && sqlite3_step(groups) == SQLITE_ROW) {
        int is_memset = sqlite3_column_int(groups, 0);
        const char *kind = (const char *)sqlite3_column_text(groups, 2);
        int64_t count = sqlite3_column_int64(groups, 3), cpu_ns = sqlite3_column_int64(groups, 4);
        char cpu[32], gpu[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)cpu_ns, NULL,
            "%lld synchronous %s%s in pid %lld: the CPU waited %s in them (GPU time %s)",
            (long long)count, is_memset ? "memsets" : kind ? kind : "?",
            is_memset ? "" : " copies", (long long)sqlite3_column_int64(groups, 6),
            analyze_fmt_ns(cpu, sizeof cpu, (double)cpu_ns),
            analyze_fmt_ns(gpu, sizeof gpu, sqlite3_column_double(groups, 5)));
        if (!f)
            continue;
        f->count = count;
        sqlite3_stmt *rows = is_memset ? sets : copies;
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, sqlite3_column_int64(groups, 1));
        sqlite3_bind_text(rows, 2, kind, -1, SQLITE_TRANSIENT);
        rc = analyze_evidence_from(ctx, f, rows);
    }
    sqlite3_finalize(groups);
    sqlite3_finalize(copies);
    sqlite3_finalize(sets);
    return ctx->error[0] ? -1 : rc;
}
