/* launch_bound: kernels that run for less time than the CPU spends launching them, so the
 * GPU can never be kept busy by launching them one by one; with the run's launch rate and the
 * distribution of launch -> start delays (from the timeline pass). */
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int by_excess(const void *a, const void *b)
{
    const struct timeline_kernel_name *x = *(const struct timeline_kernel_name *const *)a,
                                      *y = *(const struct timeline_kernel_name *const *)b;
    if (x->short_excess_ns != y->short_excess_ns)
        return x->short_excess_ns < y->short_excess_ns ? 1 : -1;
    return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

static void launch_statistics(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                              struct analyze_result *res)
{
    int64_t kernel_ns = 0;
    for (size_t i = 0; i < t->name_count; i++)
        kernel_ns += t->names[i].kernel_ns;
    char call[32], kern[32], p50[32], p90[32], p99[32];
    analyze_note(
        res,
        "%lld kernel launches (%.0f per second of the run); average launch call %s, "
        "average kernel %s; launch -> start delay p50 %s, p90 %s, p99 %s",
        (long long)t->kernels, (double)t->kernels * 1e9 / (double)ctx->duration_ns,
        analyze_fmt_ns(
            call, sizeof call,
            t->launches_with_api ? (double)t->launch_ns_total / (double)t->launches_with_api : 0),
        analyze_fmt_ns(kern, sizeof kern, t->kernels ? (double)kernel_ns / (double)t->kernels : 0),
        analyze_fmt_ns(p50, sizeof p50, timeline_delay_quantile(t, 0.5)),
        analyze_fmt_ns(p90, sizeof p90, timeline_delay_quantile(t, 0.9)),
        analyze_fmt_ns(p99, sizeof p99, timeline_delay_quantile(t, 0.99)));
}

int rule_launch_bound(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -EIO;
    if (t->kernels == 0) {
        analyze_note(res, "no kernels in this database (profile with -t cuda)");
        return 0;
    }
    if (t->launches_with_api == 0) {
        analyze_note(res, "no launch calls recorded (profiled with --cuda-api=none?)");
        return 0;
    }
    launch_statistics(ctx, t, res);
    const struct timeline_kernel_name **flagged = calloc(t->name_count, sizeof *flagged);
    if (!flagged)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->name_count; i++) {
        const struct timeline_kernel_name *k = &t->names[i];
        if (k->count >= LAUNCH_MIN_KERNELS &&
            (double)k->short_count >= LAUNCH_SHORT_SHARE * (double)k->count)
            flagged[n++] = k;
    }
    qsort(flagged, n, sizeof *flagged, by_excess);
    sqlite3_stmt *name =
        analyze_prepare(ctx, "launch_bound", "SELECT value FROM strings WHERE id = ?");
    int rc = name ? 0 : -EIO;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct timeline_kernel_name *k = flagged[i];
        sqlite3_reset(name);
        sqlite3_bind_int64(name, 1, k->name_id);
        const char *text =
            sqlite3_step(name) == SQLITE_ROW ? (const char *)sqlite3_column_text(name, 0) : NULL;
        char kern[32], call[32], excess[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)k->short_excess_ns, NULL,
            "%s: %lld of %lld launches ran shorter than their launch call (average kernel %s, "
            "average launch call %s; launching exceeds running by %s)",
            text ? text : "(unnamed kernel)", (long long)k->short_count, (long long)k->count,
            analyze_fmt_ns(kern, sizeof kern, (double)k->kernel_ns / (double)k->count),
            analyze_fmt_ns(call, sizeof call, (double)k->launch_ns / (double)k->count),
            analyze_fmt_ns(excess, sizeof excess, (double)k->short_excess_ns));
        if (!f)
            continue;
        f->count = k->short_count;
        /* what the host did from the first to the last of these launches */
        struct analyze_host_scope scope = {
            .process_ids = &k->short_process_id,
            .process_count = 1,
            .windows = {&k->short_launch_start, &k->short_launch_end, 1},
            .what = "launches"};
        rc = analyze_host_describe(ctx, f, &scope);
        if (rc == 0)
            rc = timeline_op_evidence(ctx, f, TIMELINE_KERNEL, k->first_short_id,
                                      "first launch shorter than its launch call", -1, -1);
        if (rc == 0)
            rc = timeline_op_evidence(ctx, f, TIMELINE_KERNEL, k->longest_id, "longest launch", -1,
                                      -1);
    }
    sqlite3_finalize(name);
    free(flagged);
    return rc;
}
