/* gpu_idle (gaps in each GPU's work, broken down as HTA does into host wait, sync and other,
 * per NVTX range) and gpu_utilization (windows of the run in which a GPU was mostly idle).
 * Both read the timeline pass (timeline.c). */
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gap_class_names[GAP_CLASSES] = {"host wait", "sync", "other"};

static const char *const kind_names[] = {"kernel", "copy", "memset"};

/* The label of a range id ("(no NVTX range)" for 0), malloc'ed. */
static char *range_label(struct analyze_ctx *ctx, sqlite3_stmt *st, int64_t range_id)
{
    char *label = NULL;
    if (range_id > 0) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, range_id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            label = strdup((const char *)sqlite3_column_text(st, 0));
    }
    (void)ctx;
    return label ? label : strdup("(no NVTX range)");
}

struct labelled_idle {
    char *label;
    int64_t range_id; /* one of the ranges with this label */
    int64_t gaps, ns[GAP_CLASSES], total;
    size_t group; /* the label's number, shared by its ranges (host activity) */
};

/* The processes with work on a GPU (the ranks of the timeline pass); malloc'ed. */
static int64_t *gpu_processes(const struct analyze_timeline *t, int64_t gpu_id, size_t *n)
{
    int64_t *ids = calloc(t->rank_count ? t->rank_count : 1, sizeof *ids);
    *n = 0;
    for (size_t i = 0; ids && i < t->rank_count; i++)
        if (t->ranks[i].gpu_id == gpu_id)
            ids[(*n)++] = t->ranks[i].process_id;
    return ids;
}

/* What the host did in a GPU's host-wait gaps (those of one range label when groups is
 * given: range id + 1 -> group + 1), on the threads of the processes with work on it. */
static int describe_gaps(struct analyze_ctx *ctx, struct analyze_finding *f,
                         const struct analyze_timeline *t, const struct timeline_gpu *g,
                         const struct u64_map *groups, size_t group)
{
    if (!f || !analyze_host_asked(ctx))
        return 0;
    size_t nproc = 0, n = 0;
    int64_t *procs = gpu_processes(t, g->gpu_id, &nproc);
    int64_t *start = calloc(g->host_gap_count + 1, sizeof *start);
    int64_t *end = calloc(g->host_gap_count + 1, sizeof *end);
    int rc = -ENOMEM;
    if (procs && start && end) {
        for (size_t i = 0; i < g->host_gap_count; i++) {
            const struct timeline_gap *gap = &g->host_gaps[i];
            if (groups) {
                uint64_t *v = u64_map_find(groups, (uint64_t)gap->next_range_id + 1);
                if (!v || *v != group + 1)
                    continue;
            }
            start[n] = gap->start;
            end[n++] = gap->end;
        }
        struct analyze_host_scope scope = {.process_ids = procs,
                                           .process_count = nproc,
                                           .windows = {start, end, n},
                                           .what = "host-wait gaps"};
        rc = analyze_host_describe(ctx, f, &scope);
    } else {
        snprintf(ctx->error, sizeof ctx->error, "gpu_idle: out of memory");
    }
    free(procs);
    free(start);
    free(end);
    return rc;
}

static int by_label(const void *a, const void *b)
{
    return strcmp(((const struct labelled_idle *)a)->label,
                  ((const struct labelled_idle *)b)->label);
}

static int by_total(const void *a, const void *b)
{
    const struct labelled_idle *x = a, *y = b;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->label, y->label);
}

static int gap_evidence(struct analyze_ctx *ctx, struct analyze_finding *f,
                        const struct timeline_gap *gap)
{
    char detail[96], len[32];
    snprintf(detail, sizeof detail, "GPU idle %s before this %s: %s",
             analyze_fmt_ns(len, sizeof len, (double)(gap->end - gap->start)),
             kind_names[gap->next_kind], gap_class_names[gap->cls]);
    return timeline_op_evidence(ctx, f, gap->next_kind, gap->next_id, detail, gap->start,
                                gap->end - gap->start);
}

/* One finding per NVTX range label with idle time, most idle first. */
static int range_breakdown(struct analyze_ctx *ctx, struct analyze_result *res,
                           const struct analyze_timeline *t, const struct timeline_gpu *g)
{
    struct u64_map groups = {0}; /* range id + 1 -> its label's group + 1 */
    size_t n = g->range_count;
    if (n == 0)
        return 0;
    struct labelled_idle *items = calloc(n, sizeof *items);
    sqlite3_stmt *st = analyze_prepare(ctx, "gpu_idle",
                                       "SELECT " ANALYZE_RANGE_LABEL
                                       " FROM (SELECT ?1 AS id) q" ANALYZE_RANGE_JOINS("q.id"));
    int rc = !st ? -EIO : items ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct timeline_range_idle *r = &g->ranges[i];
        if (!(items[i].label = range_label(ctx, st, r->range_id)))
            rc = -ENOMEM;
        items[i].range_id = r->range_id;
        items[i].gaps = r->gaps;
        for (int c = 0; c < GAP_CLASSES; c++) {
            items[i].ns[c] = r->ns[c];
            items[i].total += r->ns[c];
        }
    }
    size_t merged = 0;
    if (rc == 0) { /* ranges of one name together */
        qsort(items, n, sizeof *items, by_label);
        for (size_t i = 0; i < n; i++) {
            int same = merged && !strcmp(items[merged - 1].label, items[i].label);
            if (u64_map_put(&groups, (uint64_t)items[i].range_id + 1, same ? merged : merged + 1) <
                0)
                rc = -ENOMEM;
            if (same) {
                struct labelled_idle *m = &items[merged - 1];
                m->gaps += items[i].gaps;
                m->total += items[i].total;
                for (int c = 0; c < GAP_CLASSES; c++)
                    m->ns[c] += items[i].ns[c];
                free(items[i].label);
            } else {
                items[merged] = items[i];
                items[merged].group = merged;
                merged++;
            }
        }
        qsort(items, merged, sizeof *items, by_total);
    }
    for (size_t i = 0; rc == 0 && i < merged; i++) {
        char total[32], host[32], sync[32], other[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)items[i].total, NULL,
            "GPU %lld idle %s before work launched in %s (%lld gaps): host wait %s, sync %s, "
            "other %s",
            (long long)g->label, analyze_fmt_ns(total, sizeof total, (double)items[i].total),
            items[i].label, (long long)items[i].gaps,
            analyze_fmt_ns(host, sizeof host, (double)items[i].ns[GAP_HOST]),
            analyze_fmt_ns(sync, sizeof sync, (double)items[i].ns[GAP_SYNC]),
            analyze_fmt_ns(other, sizeof other, (double)items[i].ns[GAP_OTHER]));
        if (!f)
            continue;
        f->count = items[i].gaps;
        if (items[i].ns[GAP_HOST] > 0)
            rc = describe_gaps(ctx, f, t, g, &groups, items[i].group);
        for (int k = 0; rc == 0 && k < g->top_count; k++) { /* its longest gaps */
            char *label = range_label(ctx, st, g->top[k].next_range_id);
            if (label && !strcmp(label, items[i].label))
                rc = gap_evidence(ctx, f, &g->top[k]);
            free(label);
        }
    }
    for (size_t i = 0; i < merged; i++)
        free(items[i].label);
    free(items);
    u64_map_release(&groups);
    sqlite3_finalize(st);
    return rc;
}

int rule_gpu_idle(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    for (int i = 0; i < t->gpu_count; i++) {
        const struct timeline_gpu *g = &t->gpus[i];
        if (g->first_start < 0 || g->long_gap_count == 0)
            continue;
        char total[32], span[32], host[32], sync[32], other[32], all[32];
        int64_t active = g->last_end - g->first_start;
        struct analyze_finding *f = analyze_add_finding(
            res, (double)g->long_gap_ns, NULL,
            "GPU %lld: %lld gaps >= 100 us, %s idle in %s between its first and last work "
            "(%.1f %%; all gaps %s): host wait %s, sync %s, other %s",
            (long long)g->label, (long long)g->long_gap_count,
            analyze_fmt_ns(total, sizeof total, (double)g->long_gap_ns),
            analyze_fmt_ns(span, sizeof span, (double)active),
            active > 0 ? 100.0 * (double)g->long_gap_ns / (double)active : 0,
            analyze_fmt_ns(all, sizeof all, (double)g->gap_ns),
            analyze_fmt_ns(host, sizeof host, (double)g->long_gap_class_ns[GAP_HOST]),
            analyze_fmt_ns(sync, sizeof sync, (double)g->long_gap_class_ns[GAP_SYNC]),
            analyze_fmt_ns(other, sizeof other, (double)g->long_gap_class_ns[GAP_OTHER]));
        if (!f)
            continue;
        f->count = g->long_gap_count;
        rc = 0;
        for (int k = 0; rc == 0 && k < g->top_count; k++)
            rc = gap_evidence(ctx, f, &g->top[k]);
        if (rc == 0 && g->long_gap_class_ns[GAP_HOST] > 0)
            rc = describe_gaps(ctx, f, t, g, NULL, 0);
        if (rc == 0)
            rc = range_breakdown(ctx, res, t, g);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A stretch of consecutive low windows. */
struct stretch {
    int64_t start, ns;
    double busy;
};

static int by_idle(const void *a, const void *b)
{
    const struct stretch *x = a, *y = b;
    double ix = (double)x->ns - x->busy, iy = (double)y->ns - y->busy;
    return ix < iy ? 1 : ix > iy ? -1 : (x->start > y->start) - (x->start < y->start);
}

/* What the host did in the low windows (stretches in time order), on the threads of the
 * processes with work on the GPU. */
static int describe_stretches(struct analyze_ctx *ctx, struct analyze_finding *f,
                              const struct analyze_timeline *t, const struct timeline_gpu *g,
                              const struct stretch *stretches, int count)
{
    size_t nproc = 0;
    int64_t *procs = gpu_processes(t, g->gpu_id, &nproc);
    int64_t start[UTIL_WINDOWS], end[UTIL_WINDOWS];
    for (int k = 0; k < count; k++) {
        start[k] = stretches[k].start;
        end[k] = stretches[k].start + stretches[k].ns;
    }
    struct analyze_host_scope scope = {.process_ids = procs,
                                       .process_count = nproc,
                                       .windows = {start, end, (size_t)count},
                                       .what = "low windows"};
    int rc = procs ? analyze_host_describe(ctx, f, &scope) : -ENOMEM;
    if (!procs)
        snprintf(ctx->error, sizeof ctx->error, "gpu_utilization: out of memory");
    free(procs);
    return rc;
}

int rule_gpu_utilization(struct analyze_ctx *ctx, struct analyze_result *res)
{
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    int64_t window = (ctx->duration_ns + UTIL_WINDOWS - 1) / UTIL_WINDOWS;
    if (window < 1)
        window = 1;
    for (int i = 0; i < t->gpu_count; i++) {
        const struct timeline_gpu *g = &t->gpus[i];
        if (g->first_start < 0)
            continue;
        struct stretch stretches[UTIL_WINDOWS];
        int count = 0, low = 0, windows = 0;
        double idle = 0, busy_low = 0, ns_low = 0;
        for (int w = 0; w < UTIL_WINDOWS; w++) {
            int64_t s = ctx->start_ns + w * window, e = s + window;
            if (s < g->first_start) /* only the GPU's active span counts */
                s = g->first_start;
            if (e > g->last_end)
                e = g->last_end;
            if (e <= s)
                continue;
            windows++;
            double busy = timeline_busy_between(t, g, s, e);
            if (100.0 * busy / (double)(e - s) >= UTIL_LOW_PERCENT)
                continue;
            low++;
            idle += (double)(e - s) - busy;
            busy_low += busy;
            ns_low += (double)(e - s);
            if (count && stretches[count - 1].start + stretches[count - 1].ns == s) {
                stretches[count - 1].ns += e - s;
                stretches[count - 1].busy += busy;
            } else {
                stretches[count++] = (struct stretch){s, e - s, busy};
            }
        }
        if (low == 0)
            continue;
        char window_text[32], idle_text[32];
        struct analyze_finding *f = analyze_add_finding(
            res, idle, NULL,
            "GPU %lld was busy < %.0f %% in %d of the %d windows of %s in its active span "
            "(%.1f %% busy in them; %s idle)",
            (long long)g->label, UTIL_LOW_PERCENT, low, windows,
            analyze_fmt_ns(window_text, sizeof window_text, (double)window),
            ns_low > 0 ? 100.0 * busy_low / ns_low : 0,
            analyze_fmt_ns(idle_text, sizeof idle_text, idle));
        if (!f)
            continue;
        f->count = count; /* stretches of consecutive low windows */
        rc = analyze_host_asked(ctx) ? describe_stretches(ctx, f, t, g, stretches, count) : 0;
        if (rc < 0)
            return rc;
        qsort(stretches, (size_t)count, sizeof *stretches, by_idle);
        for (int k = 0; k < count && k < ANALYZE_MAX_EVIDENCE; k++) {
            char detail[64];
            snprintf(detail, sizeof detail, "GPU busy %.1f %% of this stretch",
                     100.0 * stretches[k].busy / (double)stretches[k].ns);
            struct analyze_evidence e = {.start_ns = stretches[k].start - ctx->start_ns,
                                         .duration_ns = stretches[k].ns,
                                         .pid = -1,
                                         .tid = -1,
                                         .gpu = g->label,
                                         .stream = -1,
                                         .detail = detail};
            analyze_add_evidence(f, &e);
        }
    }
    return 0;
}
