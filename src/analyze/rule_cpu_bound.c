/* cpu_bound_ranges: NVTX ranges whose thread was on the CPU most of their time while the GPUs
 * of their process idled: the CPU, not the GPU, sets their length. A thread's on-CPU time in a
 * range is its samples there x the sampling period (cpu-clock counts CPU time only); the GPU's
 * busy time comes from the timeline pass. Per range name, with the top functions of the
 * samples (host_activity.c). docs/analyze.md. */
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"
#include "common/index_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One range name's CPU-bound instances. */
struct bound_name {
    int64_t domain_id, name_id, example_id;
    int64_t instances, flagged;
    double ns, on_cpu_ns, gpu_busy_ns, cost_ns; /* of the flagged instances */
    int64_t *start, *end, *thread;              /* the flagged instances */
    size_t n, cap;
};

struct sample_times { /* one thread's sample times, sorted */
    int64_t thread, *ts;
    size_t n, cap;
};

static int load_sample_times(struct analyze_ctx *ctx, sqlite3_stmt *st, int64_t thread,
                             struct sample_times *s)
{
    s->thread = thread;
    s->n = 0;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, thread);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (index_reserve((void **)&s->ts, &s->cap, s->n, sizeof *s->ts) < 0) {
            snprintf(ctx->error, sizeof ctx->error, "cpu_bound_ranges: out of memory");
            return -ENOMEM;
        }
        s->ts[s->n++] = sqlite3_column_int64(st, 0);
    }
    return 0;
}

static size_t first_at_or_after(const struct sample_times *s, int64_t ts)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ts[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The largest busy time in [start, end) of the GPUs the process worked on; -1: none. */
static double process_gpu_busy(const struct analyze_timeline *t, int64_t process_id, int64_t start,
                               int64_t end)
{
    double busy = -1;
    for (size_t i = 0; i < t->rank_count; i++) {
        if (t->ranks[i].process_id != process_id)
            continue;
        for (int g = 0; g < t->gpu_count; g++) {
            if (t->gpus[g].gpu_id != t->ranks[i].gpu_id)
                continue;
            double b = timeline_busy_between(t, &t->gpus[g], start, end);
            if (b > busy)
                busy = b;
        }
    }
    return busy;
}

static struct bound_name *name_of(struct bound_name **names, size_t *n, size_t *cap,
                                  int64_t domain_id, int64_t name_id, int64_t range_id)
{
    for (size_t i = 0; i < *n; i++)
        if ((*names)[i].domain_id == domain_id && (*names)[i].name_id == name_id)
            return &(*names)[i];
    if (index_reserve((void **)names, cap, *n, sizeof **names) < 0)
        return NULL;
    struct bound_name *b = &(*names)[(*n)++];
    memset(b, 0, sizeof *b);
    b->domain_id = domain_id;
    b->name_id = name_id;
    b->example_id = range_id;
    return b;
}

static int keep_instance(struct bound_name *b, int64_t start, int64_t end, int64_t thread)
{
    size_t cap = b->cap;
    if (index_reserve((void **)&b->start, &cap, b->n, sizeof *b->start) < 0)
        return -ENOMEM;
    int64_t *e = realloc(b->end, cap * sizeof *e);
    if (e)
        b->end = e;
    int64_t *t = realloc(b->thread, cap * sizeof *t);
    if (t)
        b->thread = t;
    if (!e || !t)
        return -ENOMEM;
    b->cap = cap;
    b->start[b->n] = start;
    b->end[b->n] = end;
    b->thread[b->n++] = thread;
    return 0;
}

static int by_cost(const void *a, const void *b)
{
    const struct bound_name *x = a, *y = b;
    if (x->cost_ns != y->cost_ns)
        return x->cost_ns < y->cost_ns ? 1 : -1;
    return (x->example_id > y->example_id) - (x->example_id < y->example_id);
}

struct window {
    int64_t start, end;
};

static int by_start(const void *a, const void *b)
{
    const struct window *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Every range of a sampled thread, folded per name (the flagged instances kept). */
static int scan_ranges(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                       struct bound_name **names, size_t *count, size_t *cap)
{
    sqlite3_stmt *ranges = analyze_prepare(
        ctx, "cpu_bound_ranges",
        "SELECT r.id, r.domain_id, ifnull(r.name_id, 0), r.process_id, r.start_thread_id,"
        " r.start_ns, r.end_ns, c.period_ns FROM ranges r"
        " JOIN threads th ON th.id = r.start_thread_id"
        " JOIN cpu_sampling c ON c.process_id = th.process_id AND c.status = 'on'"
        " WHERE r.end_ns > r.start_ns AND c.period_ns > 0 ORDER BY r.start_thread_id, r.start_ns");
    sqlite3_stmt *samples =
        analyze_prepare(ctx, "cpu_bound_ranges",
                        "SELECT ts_ns FROM cpu_samples WHERE thread_id = ? ORDER BY ts_ns");
    struct sample_times times = {.thread = -1};
    int rc = ranges && samples ? 0 : -EIO;
    while (rc == 0 && sqlite3_step(ranges) == SQLITE_ROW) {
        int64_t thread = sqlite3_column_int64(ranges, 4), start = sqlite3_column_int64(ranges, 5),
                end = sqlite3_column_int64(ranges, 6), period = sqlite3_column_int64(ranges, 7);
        if (end - start < CPU_BOUND_MIN_PERIODS * period)
            continue; /* too short for its samples to say much */
        double busy = process_gpu_busy(t, sqlite3_column_int64(ranges, 3), start, end);
        if (busy < 0)
            continue; /* a process with no GPU work launches nothing */
        if (thread != times.thread && (rc = load_sample_times(ctx, samples, thread, &times)) < 0)
            break;
        size_t in = first_at_or_after(&times, end) - first_at_or_after(&times, start);
        double ns = (double)(end - start), on_cpu = (double)in * (double)period;
        if (on_cpu > ns)
            on_cpu = ns; /* a sample's period straddles the range's edge */
        struct bound_name *b =
            name_of(names, count, cap, sqlite3_column_int64(ranges, 1),
                    sqlite3_column_int64(ranges, 2), sqlite3_column_int64(ranges, 0));
        if (!b) {
            rc = -ENOMEM;
            break;
        }
        b->instances++;
        if (100.0 * on_cpu / ns < CPU_BOUND_ON_CPU_PERCENT ||
            100.0 * busy / ns >= CPU_BOUND_GPU_BUSY_PERCENT)
            continue;
        b->flagged++;
        b->ns += ns;
        b->on_cpu_ns += on_cpu;
        b->gpu_busy_ns += busy;
        b->cost_ns += on_cpu < ns - busy ? on_cpu : ns - busy; /* CPU time the GPU waited out */
        if (keep_instance(b, start, end, thread) < 0)
            rc = -ENOMEM;
    }
    if (rc < 0 && !ctx->error[0])
        snprintf(ctx->error, sizeof ctx->error, "cpu_bound_ranges: out of memory");
    sqlite3_finalize(ranges);
    sqlite3_finalize(samples);
    free(times.ts);
    return rc;
}

/* The finding's evidence (its longest instances) and its host part (the samples of the
 * threads that ran them, in the union of their windows). */
static int describe(struct analyze_ctx *ctx, struct analyze_finding *f, struct bound_name *b)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "cpu_bound_ranges",
        "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, th.tid, NULL, NULL, " ANALYZE_RANGE_LABEL
        ", NULL, NULL FROM ranges x JOIN threads th ON th.id = x.start_thread_id"
        " JOIN processes p ON p.id = x.process_id" ANALYZE_RANGE_JOINS(
            "x.id") " WHERE x.domain_id = ?1 AND ifnull(x.name_id, 0) = ?2 AND x.start_thread_id = "
                    "?3"
                    " AND x.start_ns = ?4");
    int64_t *order = calloc(b->n, sizeof *order);
    int64_t *start = calloc(b->n, sizeof *start), *end = calloc(b->n, sizeof *end);
    int64_t threads[64];
    size_t nthreads = 0, nwin = 0;
    int rc = !st ? -EIO : order && start && end ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < b->n; i++) /* longest first, as evidence */
        order[i] = (int64_t)i;
    for (size_t k = 0; rc == 0 && k < b->n && k < ANALYZE_MAX_EVIDENCE; k++) {
        size_t best = k;
        for (size_t j = k + 1; j < b->n; j++)
            if (b->end[order[j]] - b->start[order[j]] > b->end[order[best]] - b->start[order[best]])
                best = j;
        int64_t tmp = order[k];
        order[k] = order[best];
        order[best] = tmp;
        size_t i = (size_t)order[k];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, b->domain_id);
        sqlite3_bind_int64(st, 2, b->name_id);
        sqlite3_bind_int64(st, 3, b->thread[i]);
        sqlite3_bind_int64(st, 4, b->start[i]);
        if (sqlite3_step(st) == SQLITE_ROW) {
            struct analyze_evidence e = {.start_ns = sqlite3_column_int64(st, 0) - ctx->start_ns,
                                         .duration_ns = sqlite3_column_int64(st, 1),
                                         .pid = sqlite3_column_int64(st, 2),
                                         .tid = sqlite3_column_int64(st, 3),
                                         .gpu = -1,
                                         .stream = -1,
                                         .range = (char *)sqlite3_column_text(st, 6),
                                         .detail = "CPU-bound instance"};
            analyze_add_evidence(f, &e);
        }
    }
    struct window *w = calloc(b->n ? b->n : 1, sizeof *w);
    if (!w)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < b->n; i++) { /* the threads, and the windows by start */
        size_t k = 0;
        while (k < nthreads && threads[k] != b->thread[i])
            k++;
        if (k == nthreads && nthreads < sizeof threads / sizeof threads[0])
            threads[nthreads++] = b->thread[i];
        w[i] = (struct window){b->start[i], b->end[i]};
    }
    if (rc == 0) {
        qsort(w, b->n, sizeof *w, by_start);
        for (size_t i = 0; i < b->n; i++) { /* their union */
            if (nwin && w[i].start <= end[nwin - 1]) {
                if (w[i].end > end[nwin - 1])
                    end[nwin - 1] = w[i].end;
            } else {
                start[nwin] = w[i].start;
                end[nwin++] = w[i].end;
            }
        }
        struct analyze_host_scope scope = {.thread_ids = threads,
                                           .thread_count = nthreads,
                                           .windows = {start, end, nwin},
                                           .what = "ranges"};
        rc = analyze_host_describe(ctx, f, &scope);
    } else {
        snprintf(ctx->error, sizeof ctx->error, "cpu_bound_ranges: out of memory");
    }
    sqlite3_finalize(st);
    free(w);
    free(order);
    free(start);
    free(end);
    return rc;
}

static void note_why_no_samples(struct analyze_ctx *ctx, struct analyze_result *res)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "cpu_bound_ranges",
        "SELECT p.pid, c.status, c.reason FROM cpu_sampling c JOIN processes p ON p.id ="
        " c.process_id WHERE c.status != 'on' ORDER BY p.id LIMIT 1");
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        const char *reason = (const char *)sqlite3_column_text(st, 2);
        analyze_note(res, "no CPU samples: sampling was off in pid %lld: %s%s%s",
                     (long long)sqlite3_column_int64(st, 0),
                     (const char *)sqlite3_column_text(st, 1), reason ? ": " : "",
                     reason ? reason : "");
    } else {
        analyze_note(res, "no CPU samples in this database");
    }
    sqlite3_finalize(st);
}

int rule_cpu_bound_ranges(struct analyze_ctx *ctx, struct analyze_result *res)
{
    if (!analyze_host_asked(ctx)) {
        if (ctx->error[0])
            return -EIO;
        analyze_note(res, "no CPU samples in this database (profile with -t cpu)");
        return 0;
    }
    if (!analyze_table_has_rows(ctx, "cpu_samples")) {
        note_why_no_samples(ctx, res);
        return 0;
    }
    int rc;
    struct analyze_timeline *t = analyze_gpu_work(ctx, res, &rc);
    if (!t)
        return rc;
    struct bound_name *names = NULL;
    size_t count = 0, cap = 0;
    rc = scan_ranges(ctx, t, &names, &count, &cap);
    if (rc == 0)
        qsort(names, count, sizeof *names, by_cost);
    sqlite3_stmt *label = analyze_prepare(ctx, "cpu_bound_ranges",
                                          "SELECT " ANALYZE_RANGE_LABEL
                                          " FROM (SELECT ?1 AS id) q" ANALYZE_RANGE_JOINS("q.id"));
    if (!label)
        rc = -EIO;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        struct bound_name *b = &names[i];
        if (!b->flagged || analyze_share(ctx, b->ns) < CPU_BOUND_MIN_SHARE)
            continue;
        sqlite3_reset(label);
        sqlite3_bind_int64(label, 1, b->example_id);
        const char *text =
            sqlite3_step(label) == SQLITE_ROW ? (const char *)sqlite3_column_text(label, 0) : NULL;
        char ns[32], cpu[32];
        struct analyze_finding *f = analyze_add_finding(
            res, b->cost_ns, NULL,
            "%s: %lld of %lld instances CPU-bound (%s): their thread on the CPU %.1f %% of the "
            "time (%s) while the GPU was busy %.1f %%",
            text ? text : "(unnamed)", (long long)b->flagged, (long long)b->instances,
            analyze_fmt_ns(ns, sizeof ns, b->ns), 100.0 * b->on_cpu_ns / b->ns,
            analyze_fmt_ns(cpu, sizeof cpu, b->on_cpu_ns), 100.0 * b->gpu_busy_ns / b->ns);
        if (!f)
            continue;
        f->count = b->flagged;
        rc = describe(ctx, f, b);
    }
    sqlite3_finalize(label);
    for (size_t i = 0; i < count; i++) {
        free(names[i].start);
        free(names[i].end);
        free(names[i].thread);
    }
    free(names);
    return rc;
}
