/* small_grid: launch shapes with fewer blocks than the GPU has SMs, or a low theoretical
 * occupancy, from what `lantern kernels` derives (the occupancy calculator's rules). Achieved
 * occupancy is measured only with GPU metrics (lantern kernels' `achieved` column): the
 * rule's note says where to read it. tensor_cores, the other kernel-level rule, is
 * rule_tensor_cores.c. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"
#include "model/kernels_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct sm_info {
    int64_t gpu_id, sm_count;
    struct kernels_sm_limits limits;
};

struct shape_hit {
    const struct timeline_shape *shape;
    double cost, occupancy;
    int64_t sm_count;
};

static int by_cost(const void *a, const void *b)
{
    const struct shape_hit *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? 1 : -1;
    return x->shape->ns < y->shape->ns ? 1 : x->shape->ns > y->shape->ns ? -1 : 0;
}

int rule_small_grid(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -EIO;
    if (analyze_query_int(ctx, "SELECT count(*) FROM gpu_metric_sets", 0) > 0)
        analyze_note(res, "achieved occupancy was measured: `lantern kernels -c "
                          "kernel,occupancy,achieved` shows it beside the theoretical one");
    else
        analyze_note(res, "achieved occupancy needs GPU hardware metrics (lantern profile "
                          "--gpu-metrics)");
    if (t->kernels == 0)
        return 0;
    struct sm_info sms[TIMELINE_MAX_GPUS];
    int nsm = 0;
    sqlite3_stmt *st = analyze_prepare(
        ctx, "small_grid",
        "SELECT id, sm_count, cc_major, max_threads_per_sm, max_regs_per_sm, max_smem_per_sm,"
        " max_blocks_per_sm FROM gpus");
    if (!st)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW && nsm < TIMELINE_MAX_GPUS) {
        struct sm_info *s = &sms[nsm++];
        s->gpu_id = sqlite3_column_int64(st, 0);
        s->sm_count = sqlite3_column_int64(st, 1);
        s->limits = (struct kernels_sm_limits){.cc_major = sqlite3_column_int(st, 2),
                                               .max_threads_per_sm = sqlite3_column_int64(st, 3),
                                               .max_regs_per_sm = sqlite3_column_int64(st, 4),
                                               .max_smem_per_sm = sqlite3_column_int64(st, 5),
                                               .max_blocks_per_sm = sqlite3_column_int64(st, 6)};
    }
    sqlite3_finalize(st);
    struct shape_hit *hits = calloc(t->shape_count ? t->shape_count : 1, sizeof *hits);
    if (!hits)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->shape_count; i++) {
        const struct timeline_shape *s = &t->shapes[i];
        const struct sm_info *sm = NULL;
        for (int k = 0; k < nsm; k++)
            if (sms[k].gpu_id == s->gpu_id)
                sm = &sms[k];
        if (!sm || s->ns < SMALL_GRID_MIN_NS || s->blocks <= 0)
            continue;
        double occupancy = s->threads > 0 && s->regs >= 0
                               ? kernels_occupancy(&sm->limits, s->threads, s->regs, s->smem)
                               : -1;
        int small = sm->sm_count > 0 && s->blocks < sm->sm_count;
        if (!small && !(occupancy >= 0 && occupancy < LOW_OCCUPANCY))
            continue;
        /* a grid filling every SM would run the same blocks in blocks/SMs of the time */
        double cost = small ? (double)s->ns * (1.0 - (double)s->blocks / (double)sm->sm_count) : 0;
        hits[n++] = (struct shape_hit){s, cost, occupancy, sm->sm_count};
    }
    qsort(hits, n, sizeof *hits, by_cost);
    sqlite3_stmt *name =
        analyze_prepare(ctx, "small_grid", "SELECT value FROM strings WHERE id = ?");
    int rc = name ? 0 : -EIO;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct timeline_shape *s = hits[i].shape;
        sqlite3_reset(name);
        sqlite3_bind_int64(name, 1, s->name_id);
        const char *text =
            sqlite3_step(name) == SQLITE_ROW ? (const char *)sqlite3_column_text(name, 0) : NULL;
        char total[32], occ[48] = "unknown";
        if (hits[i].occupancy >= 0)
            snprintf(occ, sizeof occ, "%.1f %%", 100.0 * hits[i].occupancy);
        struct analyze_finding *f = analyze_add_finding(
            res, hits[i].cost, NULL,
            "%s: %lld block%s of %lld threads on a %lld-SM GPU (theoretical occupancy %s), %lld "
            "launches, %s%s",
            text ? text : "(unnamed kernel)", (long long)s->blocks, s->blocks == 1 ? "" : "s",
            (long long)s->threads, (long long)hits[i].sm_count, occ, (long long)s->count,
            analyze_fmt_ns(total, sizeof total, (double)s->ns),
            s->blocks < hits[i].sm_count ? "" : " (low occupancy; time saved not estimated)");
        if (!f)
            continue;
        f->count = s->count;
        rc = timeline_op_evidence(ctx, f, TIMELINE_KERNEL, s->first_id,
                                  "first launch of this shape", -1, -1);
    }
    sqlite3_finalize(name);
    free(hits);
    return rc;
}
