/* energy: NVTX ranges whose energy per unit of GPU work (joules per GPU-busy second) is worst
 * against the run's, i.e. where the GPU burns power while it has little to do; and periods
 * in which NVML said the GPU was power- or thermally throttled, with the time lost to the
 * lower clock. Energy comes from the shared model (src/energy/energy_db.h); busy time from the
 * timeline pass. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"
#include "energy/energy_db.h"
#include "model/throttle.h"

#include <stdio.h>
#include <string.h>

static int worst_ranges(struct analyze_ctx *ctx, struct analyze_result *res,
                        struct analyze_timeline *t)
{
    double run_j = 0, run_busy = 0;
    for (int g = 0; g < t->energy_count; g++) {
        run_j += energy_track_between(&t->energy[g].track, (uint64_t)ctx->start_ns,
                                      (uint64_t)ctx->end_ns)
                     .mj /
                 1000.0;
        for (int k = 0; k < t->gpu_count; k++)
            if (t->gpus[k].gpu_id == t->energy[g].gpu_id)
                run_busy += (double)t->gpus[k].busy_ns;
    }
    if (run_j <= 0 || run_busy <= 0)
        return 0;                       /* no GPU work: every range would be "worst" */
    double run_rate = run_j / run_busy; /* J per busy ns */
    if (timeline_ranges(ctx, t) < 0)
        return -1;
    sqlite3_stmt *label = analyze_prepare(ctx, "energy",
                                          "SELECT " ANALYZE_RANGE_LABEL
                                          " FROM (SELECT ?1 AS id) q" ANALYZE_RANGE_JOINS("q.id"));
    int rc = label ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < t->range_energy_count; i++) {
        const struct timeline_range_energy *r = &t->range_energy[i];
        if (100.0 * r->joules / run_j < ENERGY_MIN_SHARE)
            break; /* sorted by energy: the rest are smaller */
        double rate = r->busy_ns > 0 ? r->joules / r->busy_ns : -1;
        if (rate >= 0 && rate < ENERGY_RATIO * run_rate)
            continue;
        sqlite3_reset(label);
        sqlite3_bind_int64(label, 1, r->example_id);
        const char *text =
            sqlite3_step(label) == SQLITE_ROW ? (const char *)sqlite3_column_text(label, 0) : NULL;
        char busy[32], total[32];
        double saved_j = r->joules - r->busy_ns * run_rate;
        struct analyze_finding *f = analyze_add_finding(
            res, 0, NULL,
            "%s: %.3f J (+/- %.3f, %.1f %% of the run's GPU energy) over %s with the GPU busy "
            "only %s: %.1f J per busy second against %.1f for the run",
            text ? text : "(unnamed)", r->joules, r->error_j, 100.0 * r->joules / run_j,
            analyze_fmt_ns(total, sizeof total, r->ns),
            analyze_fmt_ns(busy, sizeof busy, r->busy_ns),
            r->busy_ns > 0 ? r->joules / r->busy_ns * 1e9 : 0, run_rate * 1e9);
        if (!f)
            continue;
        f->cost_j = saved_j > 0 ? saved_j : 0;
        f->count = r->instances;
    }
    sqlite3_finalize(label);
    return rc;
}

struct period {
    int64_t start, end;
    unsigned reasons;
    double clock_sum;
    int64_t samples;
};

/* Throttled periods per GPU: runs of samples whose reasons hold a slowdown bit. */
static int throttling(struct analyze_ctx *ctx, struct analyze_result *res)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "energy",
        "SELECT s.gpu_id, s.ts_ns, s.throttle_reasons, s.sm_clock_mhz, NULL,"
        " COALESCE(g.nvml_index, g.id - 1) FROM gpu_samples s LEFT JOIN gpus g ON g.id = s.gpu_id"
        " WHERE s.throttle_reasons IS NOT NULL ORDER BY s.gpu_id, s.ts_ns");
    sqlite3_stmt *clock = analyze_prepare(
        ctx, "energy", "SELECT max(sm_clock_mhz) FROM gpu_samples WHERE gpu_id = ?1");
    if (!st || !clock) {
        sqlite3_finalize(st);
        sqlite3_finalize(clock);
        return -1;
    }
    int64_t gpu = -1, label = -1;
    double max_clock = 0;
    struct period cur = {0}, top[ANALYZE_MAX_EVIDENCE];
    int open = 0, ntop = 0;
    int64_t periods = 0;
    double lost = 0, throttled = 0;
    unsigned all = 0;
    int step;
    for (;;) {
        step = sqlite3_step(st);
        int row = step == SQLITE_ROW;
        int64_t g = row ? sqlite3_column_int64(st, 0) : -2;
        int64_t ts = row ? sqlite3_column_int64(st, 1) : 0;
        unsigned reasons = row ? (unsigned)sqlite3_column_int64(st, 2) & THROTTLE_MASK : 0;
        if (open && (!row || g != gpu || !reasons)) { /* the period ends at this sample */
            if (row && g == gpu)
                cur.end = ts;
            periods++;
            double avg = cur.samples ? cur.clock_sum / (double)cur.samples : 0;
            double ns = (double)(cur.end - cur.start);
            throttled += ns;
            if (max_clock > 0 && avg > 0)
                lost += ns * (1.0 - avg / max_clock);
            all |= cur.reasons;
            if (ntop < ANALYZE_MAX_EVIDENCE)
                top[ntop++] = cur;
            open = 0;
        }
        if (!row || g != gpu) { /* a GPU's periods are complete */
            if (periods) {
                char reasons_text[128], total[32];
                throttle_text(all, reasons_text, sizeof reasons_text);
                struct analyze_finding *f = analyze_add_finding(
                    res, lost, NULL,
                    "GPU %lld was throttled (%s) for %s in %lld period%s; the lower SM clock "
                    "cost about the time shown",
                    (long long)label, reasons_text, analyze_fmt_ns(total, sizeof total, throttled),
                    (long long)periods, periods == 1 ? "" : "s");
                for (int k = 0; f && k < ntop; k++) {
                    char name[128], detail[96];
                    throttle_text(top[k].reasons, name, sizeof name);
                    snprintf(detail, sizeof detail, "SM clock %.0f MHz (max in the run %.0f MHz)",
                             top[k].samples ? top[k].clock_sum / (double)top[k].samples : 0,
                             max_clock);
                    struct analyze_evidence e = {.start_ns = top[k].start - ctx->start_ns,
                                                 .duration_ns = top[k].end - top[k].start,
                                                 .pid = -1,
                                                 .tid = -1,
                                                 .gpu = label,
                                                 .stream = -1,
                                                 .name = name,
                                                 .detail = detail};
                    analyze_add_evidence(f, &e);
                }
                if (f)
                    f->count = periods;
            }
            if (!row)
                break;
            gpu = g;
            label = sqlite3_column_int64(st, 5);
            sqlite3_reset(clock);
            sqlite3_bind_int64(clock, 1, g);
            max_clock = sqlite3_step(clock) == SQLITE_ROW ? sqlite3_column_double(clock, 0) : 0;
            periods = 0;
            lost = throttled = 0;
            all = 0;
            ntop = 0;
        }
        if (reasons) {
            if (!open) {
                cur = (struct period){.start = ts, .end = ts};
                open = 1;
            }
            cur.end = ts;
            cur.reasons |= reasons;
            cur.clock_sum += sqlite3_column_double(st, 3);
            cur.samples++;
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(clock);
    if (step != SQLITE_DONE) {
        snprintf(ctx->error, sizeof ctx->error, "energy: %s", sqlite3_errmsg(ctx->db));
        return -1;
    }
    return 0;
}

int rule_energy(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -1;
    if (t->energy_count == 0) {
        sqlite3_stmt *st = analyze_prepare(
            ctx, "energy", "SELECT value FROM meta WHERE key = 'nvml_disabled_reason'");
        const char *why =
            st && sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        analyze_note(res, "no GPU power samples in this database%s%s",
                     why ? ": " : " (profile with -t nvml)", why ? why : "");
        sqlite3_finalize(st);
        ctx->error[0] = '\0';
        return 0;
    }
    int rc = worst_ranges(ctx, res, t);
    if (rc == 0)
        rc = throttling(ctx, res);
    return rc;
}
