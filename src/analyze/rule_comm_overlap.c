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

struct comm {
    const struct timeline_rank *r;
    int64_t span, nccl, exposed;
    double share; /* exposed, percent of span */
};

static int by_share(const void *a, const void *b)
{
    const struct comm *x = a, *y = b;
    if (x->share != y->share)
        return x->share < y->share ? 1 : -1;
    return (x->r->process_id > y->r->process_id) - (x->r->process_id < y->r->process_id);
}

static void rank_row(struct analyze_ctx *ctx, struct analyze_finding *f, const struct comm *c)
{
    char label[160], nccl[32], exposed[32], span[32], detail[320], name[32];
    double overlapped = (double)(c->nccl - c->exposed);
    snprintf(detail, sizeof detail,
             "%s: NCCL %s, %.1f %% of it overlapped by other kernels, %s exposed = %.1f %% of "
             "its %s on the GPU",
             timeline_rank_label(c->r, label, sizeof label),
             analyze_fmt_ns(nccl, sizeof nccl, (double)c->nccl),
             c->nccl > 0 ? 100.0 * overlapped / (double)c->nccl : 0,
             analyze_fmt_ns(exposed, sizeof exposed, (double)c->exposed), c->share,
             analyze_fmt_ns(span, sizeof span, (double)c->span));
    if (c->r->rank >= 0)
        snprintf(name, sizeof name, "rank %lld", (long long)c->r->rank);
    else
        snprintf(name, sizeof name, "pid %lld", (long long)c->r->pid);
    struct analyze_evidence row = {.start_ns = c->r->first_start - ctx->start_ns,
                                   .duration_ns = c->exposed,
                                   .pid = c->r->pid,
                                   .tid = -1,
                                   .gpu = c->r->gpu_label,
                                   .stream = -1,
                                   .name = name,
                                   .detail = detail};
    analyze_add_evidence(f, &row);
}

int rule_comm_overlap(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t || !timeline_several_ranks(t, res))
        return rc;
    struct comm *v = calloc(t->rank_count, sizeof *v);
    if (!v) {
        snprintf(ctx->error, sizeof ctx->error, "comm_overlap: out of memory");
        return -1;
    }
    size_t n = 0, flagged = 0;
    int64_t least = -1;
    const struct comm *least_rank = NULL;
    for (size_t i = 0; i < t->rank_count; i++) {
        const struct timeline_rank *r = &t->ranks[i];
        int64_t span = r->last_end - r->first_start;
        if (r->nccl.total <= 0 || span <= 0)
            continue;
        struct comm *c = &v[n++];
        *c = (struct comm){.r = r,
                           .span = span,
                           .nccl = r->nccl.total,
                           .exposed = r->kernels.total - r->compute.total};
        c->share = 100.0 * (double)c->exposed / (double)span;
        flagged += c->share >= COMM_EXPOSED_MIN_SHARE;
    }
    if (n)
        qsort(v, n, sizeof *v, by_share);
    for (size_t i = 0; i < n; i++)
        if (least < 0 || v[i].exposed < least) {
            least = v[i].exposed;
            least_rank = &v[i];
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
