/* comm_overlap: how much of each rank's communication its computation hides. Per process and
 * GPU (timeline_ranks.c): NCCL kernel time (the union of its NCCL kernels), the part of it
 * during which the same process ran other kernels on that GPU (overlapped), and the rest
 * (exposed): |NCCL| - |NCCL and compute| = |all kernels| - |compute kernels|, each a union of
 * intervals from the one pass. Exposed time includes what a rank waited inside a collective for
 * the last rank to arrive (stragglers); the rank that waits least shows the communication
 * itself, which is why the cost is the smallest exposed time of the ranks. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <stdio.h>
#include <stdlib.h>

/* The evidence row of a rank; c->ns is its exposed time. */
static void rank_row(struct analyze_ctx *ctx, struct analyze_finding *f,
                     const struct timeline_rank_share *c)
{
    char label[160], nccl[32], exposed[32], span[32], detail[320];
    int64_t total = c->r->nccl.total;
    snprintf(detail, sizeof detail,
             "%s: NCCL %s, %.1f %% of it overlapped by other kernels, %s exposed = %.1f %% of "
             "its %s on the GPU",
             timeline_rank_label(c->r, label, sizeof label),
             analyze_fmt_ns(nccl, sizeof nccl, (double)total),
             total > 0 ? 100.0 * (double)(total - c->ns) / (double)total : 0,
             analyze_fmt_ns(exposed, sizeof exposed, (double)c->ns), c->share,
             analyze_fmt_ns(span, sizeof span, (double)c->span));
    timeline_rank_evidence(ctx, f, c->r, c->ns, detail);
}

/* A rank's exposed communication; none without NCCL kernels. */
static int64_t exposed_ns(const struct timeline_rank *r, int64_t span)
{
    (void)span;
    return r->nccl.total > 0 ? r->kernels.total - r->compute.total : -1;
}

int rule_comm_overlap(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t || !timeline_several_ranks(t, res))
        return rc;
    struct timeline_rank_share *v;
    long count = timeline_rank_shares(ctx, t, "comm_overlap", exposed_ns, &v);
    if (count < 0)
        return (int)count;
    size_t n = (size_t)count, flagged = 0;
    int64_t least = -1;
    const struct timeline_rank_share *least_rank = NULL;
    for (size_t i = 0; i < n; i++) {
        flagged += v[i].share >= COMM_EXPOSED_MIN_SHARE;
        if (least < 0 || v[i].ns < least) {
            least = v[i].ns;
            least_rank = &v[i];
        }
    }
    if (n == 0)
        analyze_note(res, "no NCCL kernels (ncclDevKernel_*, ncclSymkDevKernel_*, ncclKernel_*) in "
                          "this database");
    else if (n < 2)
        analyze_note(res, "NCCL kernels on 1 rank only: nothing to compare");
    else {
        char low[32], label[160];
        analyze_note(res,
                     "%zu ranks with NCCL kernels: exposed communication from %.1f %% to "
                     "%.1f %% of their GPU span; least exposed %s (%s)",
                     n, v[n - 1].share, v[0].share, analyze_fmt_ns(low, sizeof low, (double)least),
                     timeline_rank_label(least_rank->r, label, sizeof label));
    }
    if (n >= 2 && flagged) {
        char low[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)least, NULL,
            "exposed communication (NCCL kernels not overlapped by computation) is >= %.0f %% "
            "of the GPU span on %zu of %zu ranks (worst %.1f %%); every rank has at least %s",
            COMM_EXPOSED_MIN_SHARE, flagged, n, v[0].share,
            analyze_fmt_ns(low, sizeof low, (double)least));
        for (size_t i = 0; f && i < n && v[i].share >= COMM_EXPOSED_MIN_SHARE; i++)
            rank_row(ctx, f, &v[i]);
        if (f)
            f->count = (int64_t)flagged;
    }
    free(v);
    return 0;
}
