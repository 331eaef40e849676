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

#include <errno.h>
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
    int rc = timeline_ranges(ctx, t);
    if (rc < 0)
        return rc;
    sqlite3_stmt *label = analyze_prepare(ctx, "energy",
                                          "SELECT " ANALYZE_RANGE_LABEL
                                          " FROM (SELECT ?1 AS id) q" ANALYZE_RANGE_JOINS("q.id"));
    rc = label ? 0 : -EIO;
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

/* One GPU's throttled periods so far: their count, the time they lasted and lost to the lower
 * clock, their reasons, and the first ANALYZE_MAX_EVIDENCE of them. */
struct gpu_throttle {
    int64_t label; /* the GPU's NVML index */
    double max_clock;
    int64_t periods;
    double lost, throttled;
    unsigned all;
    struct period top[ANALYZE_MAX_EVIDENCE];
    int ntop;
};

/* Counts a period that ended into its GPU's totals. */
static void throttle_period_end(struct gpu_throttle *g, const struct period *cur)
{
    g->periods++;
    double avg = cur->samples ? cur->clock_sum / (double)cur->samples : 0;
    double ns = (double)(cur->end - cur->start);
    g->throttled += ns;
    if (g->max_clock > 0 && avg > 0)
        g->lost += ns * (1.0 - avg / g->max_clock);
    g->all |= cur->reasons;
    if (g->ntop < ANALYZE_MAX_EVIDENCE)
        g->top[g->ntop++] = *cur;
}

/* The finding of a GPU whose periods are complete, with one evidence row per period kept. */
static void throttle_finding(struct analyze_ctx *ctx, struct analyze_result *res,
                             const struct gpu_throttle *g)
{
    char reasons_text[128], total[32];
    throttle_text(g->all, reasons_text, sizeof reasons_text);
    struct analyze_finding *f = analyze_add_finding(
        res, g->lost, NULL,
        "GPU %lld was throttled (%s) for %s in %lld period%s; the lower SM clock "
        "cost about the time shown",
        (long long)g->label, reasons_text, analyze_fmt_ns(total, sizeof total, g->throttled),
        (long long)g->periods, g->periods == 1 ? "" : "s");
    for (int k = 0; f && k < g->ntop; k++) {
        const struct period *p = &g->top[k];
        char name[128], detail[96];
        throttle_text(p->reasons, name, sizeof name);
        snprintf(detail, sizeof detail, "SM clock %.0f MHz (max in the run %.0f MHz)",
                 p->samples ? p->clock_sum / (double)p->samples : 0, g->max_clock);
        struct analyze_evidence e = {.start_ns = p->start - ctx->start_ns,
                                     .duration_ns = p->end - p->start,
                                     .pid = -1,
                                     .tid = -1,
                                     .gpu = g->label,
                                     .stream = -1,
                                     .name = name,
                                     .detail = detail};
        analyze_add_evidence(f, &e);
    }
    if (f)
        f->count = g->periods;
}

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
        return -EIO;
    }
    int64_t gpu = -1;
    struct gpu_throttle g = {.label = -1};
    struct period cur = {0};
    int open = 0;
    int step;
    for (;;) {
        step = sqlite3_step(st);
        int row = step == SQLITE_ROW;
        int64_t id = row ? sqlite3_column_int64(st, 0) : -2;
        int64_t ts = row ? sqlite3_column_int64(st, 1) : 0;
        unsigned reasons = row ? (unsigned)sqlite3_column_int64(st, 2) & THROTTLE_MASK : 0;
        if (open && (!row || id != gpu || !reasons)) { /* the period ends at this sample */
            if (row && id == gpu)
                cur.end = ts;
            throttle_period_end(&g, &cur);
            open = 0;
        }
        if (!row || id != gpu) { /* a GPU's periods are complete */
            if (g.periods)
                throttle_finding(ctx, res, &g);
            if (!row)
                break;
            gpu = id;
            g.label = sqlite3_column_int64(st, 5);
            sqlite3_reset(clock);
            sqlite3_bind_int64(clock, 1, id);
            g.max_clock = sqlite3_step(clock) == SQLITE_ROW ? sqlite3_column_double(clock, 0) : 0;
            g.periods = 0;
            g.lost = g.throttled = 0;
            g.all = 0;
            g.ntop = 0;
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
        return -EIO;
    }
    return 0;
}

int rule_energy(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -EIO;
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
