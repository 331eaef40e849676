/* Rules on copies and memsets: pageable_memcpy (copies to or from pageable host memory, which
 * the driver stages through a pinned buffer: slower, and never overlapped with kernels) and
 * sync_memops (synchronous copies and memsets, during which the CPU waits). Both read the
 * counts and the longest rows the timeline pass kept per process and kind. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The columns every evidence query of a GPU copy or memset shares (x is the row). */
#define OP_EVIDENCE_JOINS                                                                          \
    " LEFT JOIN processes p ON p.id = x.process_id LEFT JOIN cuda_api a ON a.id = x.api_id"        \
    " LEFT JOIN threads t ON t.id = a.thread_id LEFT JOIN gpus g ON g.id = x.gpu_id"               \
    " LEFT JOIN strings an ON an.id = a.name_id" ANALYZE_RANGE_JOINS("x.nvtx_range_id")

/* Bytes per ns of this run's pinned copies of one kind, 0 when it has none. */
static double pinned_rate(const struct analyze_timeline *t, const char *kind)
{
    for (int k = 0; k < t->pinned_kinds; k++)
        if (!strcmp(t->pinned[k].kind, kind) && t->pinned[k].ns > 0)
            return t->pinned[k].bytes / t->pinned[k].ns;
    return 0;
}

/* Group indices sorted by a key, largest first. */
static int sorted_groups(const struct analyze_timeline *t, int sync, int *order)
{
    int n = 0;
    for (int g = 0; g < t->copy_groups; g++) {
        const struct timeline_copies *c = &t->copies[g];
        int64_t key = sync ? c->sync_api_ns : c->pageable_ns;
        if (!(sync ? c->sync_count : c->pageable_count))
            continue;
        int i = n++;
        while (i > 0) {
            const struct timeline_copies *p = &t->copies[order[i - 1]];
            if ((sync ? p->sync_api_ns : p->pageable_ns) >= key)
                break;
            order[i] = order[i - 1];
            i--;
        }
        order[i] = g;
    }
    return n;
}

static int64_t pid_of(struct analyze_ctx *ctx, int64_t process_id)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pid FROM processes WHERE id = %lld", (long long)process_id);
    return analyze_query_int(ctx, sql, -1);
}

/* The evidence rows of the ids in top, in its order, from a query with ?1 = id. */
static int top_evidence(struct analyze_ctx *ctx, struct analyze_finding *f, sqlite3_stmt *st,
                        const struct timeline_top *top)
{
    for (int i = 0; i < top->count; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, top->id[i]);
        if (analyze_evidence_from(ctx, f, st) < 0)
            return -EIO;
    }
    return 0;
}

int rule_pageable_memcpy(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    sqlite3_stmt *rows = analyze_prepare(
        ctx, "pageable_memcpy",
        "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", '[CUDA memcpy ' || COALESCE(x.copy_kind, '?') || ']',"
        " printf('%.2f MB %s -> %s, %.2f GB/s%s', x.bytes / 1e6, x.src_kind, x.dst_kind,"
        "  x.bytes * 1.0 / max(1, x.end_ns - x.start_ns), CASE WHEN x.is_async THEN ', async'"
        "  ELSE '' END)"
        " FROM memcpys x" OP_EVIDENCE_JOINS " WHERE x.id = ?1");
    if (!rows)
        return -EIO;
    int order[TIMELINE_MAX_COPY_GROUPS];
    rc = 0;
    int n = sorted_groups(t, 0, order);
    for (int i = 0; rc == 0 && i < n; i++) {
        const struct timeline_copies *c = &t->copies[order[i]];
        double pinned = pinned_rate(t, c->kind), saved, ns = (double)c->pageable_ns;
        char total[32], rate_text[96];
        /* With pinned copies of the same kind in the run, the pageable ones could have gone
         * at their rate; without, assume pinned doubles the rate (docs/analyze.md). */
        if (pinned > 0) {
            saved = ns - c->pageable_bytes / pinned;
            snprintf(rate_text, sizeof rate_text, "pinned copies of this run: %.2f GB/s", pinned);
        } else {
            saved = ns / 2;
            snprintf(rate_text, sizeof rate_text, "pinned assumed 2x faster");
        }
        struct analyze_finding *f = analyze_add_finding(
            res, saved, NULL,
            "%lld %s copies with pageable host memory in pid %lld: %.2f MB in %s (%.2f GB/s; %s)",
            (long long)c->pageable_count, c->kind, (long long)pid_of(ctx, c->process_id),
            c->pageable_bytes / 1e6, analyze_fmt_ns(total, sizeof total, ns),
            ns > 0 ? c->pageable_bytes / ns : 0, rate_text);
        if (!f)
            continue;
        f->count = c->pageable_count;
        rc = top_evidence(ctx, f, rows, &c->pageable_top);
    }
    sqlite3_finalize(rows);
    return rc;
}

int rule_sync_memops(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    sqlite3_stmt *copies = analyze_prepare(
        ctx, "sync_memops",
        "SELECT a.start_ns, a.end_ns - a.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", an.value,"
        " printf('%.2f MB %s %s -> %s; GPU %.3f us', x.bytes / 1e6, x.copy_kind, x.src_kind,"
        "  x.dst_kind, (x.end_ns - x.start_ns) / 1e3)"
        " FROM memcpys x" OP_EVIDENCE_JOINS " WHERE x.id = ?1");
    sqlite3_stmt *sets = analyze_prepare(
        ctx, "sync_memops",
        "SELECT a.start_ns, a.end_ns - a.start_ns, p.pid, t.tid, COALESCE(g.nvml_index, x.device),"
        " x.stream, " ANALYZE_RANGE_LABEL ", an.value,"
        " printf('%.2f MB memset; GPU %.3f us', x.bytes / 1e6, (x.end_ns - x.start_ns) / 1e3)"
        " FROM memsets x" OP_EVIDENCE_JOINS " WHERE x.id = ?1");
    int order[TIMELINE_MAX_COPY_GROUPS];
    rc = copies && sets ? 0 : -EIO;
    int n = rc == 0 ? sorted_groups(t, 1, order) : 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        const struct timeline_copies *c = &t->copies[order[i]];
        int is_memset = !strcmp(c->kind, "memset");
        char cpu[32], gpu[32];
        /* the CPU's time in each synchronous call: the most an asynchronous one gives back */
        struct analyze_finding *f = analyze_add_finding(
            res, (double)c->sync_api_ns, NULL,
            "%lld synchronous %s%s in pid %lld: the CPU waited %s in them (GPU time %s)",
            (long long)c->sync_count, is_memset ? "memsets" : c->kind, is_memset ? "" : " copies",
            (long long)pid_of(ctx, c->process_id),
            analyze_fmt_ns(cpu, sizeof cpu, (double)c->sync_api_ns),
            analyze_fmt_ns(gpu, sizeof gpu, (double)c->sync_gpu_ns));
        if (!f)
            continue;
        f->count = c->sync_count;
        rc = top_evidence(ctx, f, is_memset ? sets : copies, &c->sync_top);
    }
    sqlite3_finalize(copies);
    sqlite3_finalize(sets);
    return rc;
}
