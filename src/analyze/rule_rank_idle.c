/* rank_idle: the rank whose GPU idles much more than the other ranks' GPUs. In a job that
 * synchronizes through NCCL, a rank that cannot keep its own GPU fed (slow input, Python,
 * host synchronizations) leaves its GPU idle, while the other ranks wait for it inside the next
 * collective, where their GPUs look busy (NCCL kernels spinning): idle time names the culprit,
 * NCCL time names its victims. Per process and GPU from the timeline pass (timeline_ranks.c). */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <stdio.h>
#include <stdlib.h>

/* Median share of v[0..n) without v[skip] (v sorted, most idle first). */
static double median_without(const struct timeline_rank_share *v, size_t n, size_t skip)
{
    size_t m = n - 1, lo = (m - 1) / 2, hi = m / 2; /* middle positions among the others */
    double a = v[lo + (lo >= skip)].share, b = v[hi + (hi >= skip)].share;
    return (a + b) / 2;
}

/* The evidence row of a rank; e->ns is its idle time. */
static void rank_row(struct analyze_ctx *ctx, struct analyze_finding *f,
                     const struct timeline_rank_share *e, double others)
{
    char label[160], idle[32], span[32], detail[320];
    snprintf(detail, sizeof detail,
             "%s: GPU idle %s of its %s (%.1f %%; the other ranks' median %.1f %%), %lld gaps "
             ">= 100 us",
             timeline_rank_label(e->r, label, sizeof label),
             analyze_fmt_ns(idle, sizeof idle, (double)e->ns),
             analyze_fmt_ns(span, sizeof span, (double)e->span), e->share, others,
             (long long)e->r->gaps);
    timeline_rank_evidence(ctx, f, e->r, e->ns, detail);
}

/* A rank's GPU idle time: its span less its work. */
static int64_t idle_ns(const struct timeline_rank *r, int64_t span)
{
    return span - r->all.total;
}

int rule_rank_idle(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t || !timeline_several_ranks(t, res))
        return rc;
    struct timeline_rank_share *v;
    long count = timeline_rank_shares(ctx, t, "rank_idle", idle_ns, &v);
    if (count < 0)
        return (int)count;
    size_t n = (size_t)count;
    if (n >= 2) {
        analyze_note(res,
                     "%zu ranks: GPU idle between each rank's first and last work from "
                     "%.1f %% to %.1f %% of it (median %.1f %%)",
                     n, v[n - 1].share, v[0].share,
                     n % 2 ? v[n / 2].share : (v[n / 2 - 1].share + v[n / 2].share) / 2);
    }
    for (size_t i = 0; n >= 2 && i < n; i++) {
        double others = median_without(v, n, i);
        if (v[i].share < RANK_IDLE_RATIO * others || v[i].share - others < RANK_IDLE_MIN_EXCESS)
            continue; /* sorted most idle first, but the median moves: look at each */
        char label[160];
        double excess = (v[i].share - others) / 100.0 * (double)v[i].span;
        struct analyze_finding *f = analyze_add_finding(
            res, excess, NULL,
            "%s: its GPU was idle %.1f %% of its span, against a median of %.1f %% on the "
            "other ranks; the others wait for it in their collectives",
            timeline_rank_label(v[i].r, label, sizeof label), v[i].share, others);
        if (!f)
            continue;
        f->count = (int64_t)n;           /* the evidence: the ranks compared */
        rank_row(ctx, f, &v[i], others); /* the culprit, then the others to compare */
        for (size_t k = 0; k < n && f->evidence_count < ANALYZE_MAX_EVIDENCE; k++)
            if (k != i)
                rank_row(ctx, f, &v[k], median_without(v, n, k));
    }
    free(v);
    return 0;
}
