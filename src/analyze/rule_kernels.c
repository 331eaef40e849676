/* Kernel-level rules, from what `lantern kernels` derives: tensor_cores (fp16/bf16 GEMMs and
 * convolutions that missed the Tensor Cores, with the shape that prevents it, as PyProf
 * suggests) and small_grid (grids with fewer blocks than SMs, low theoretical occupancy).
 * Measured tensor activity and achieved occupancy need GPU hardware metrics, which Lantern
 * does not record yet (issue #15): the rules say so in their note. */
#include "analyze/findings.h"
#include "analyze/thresholds.h"
#include "analyze/timeline.h"
#include "common/gpu_peaks.h"
#include "report/kernels.h"
#include "report/kernels_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char no_metrics[] =
    "measured %s needs GPU hardware metrics, which this database does not have (Lantern does "
    "not record them yet, issue #15)";

/* Share of a half-precision GEMM's time that Tensor Cores would save: 1 - fp32 peak / fp16
 * Tensor Core peak of the run's GPU; 0.5 when the peaks are unknown (docs/analyze.md). */
static double tensor_core_gain(struct analyze_ctx *ctx)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "tensor_cores",
        "SELECT peak_fp32_flops, max(COALESCE(peak_fp16_flops, 0), COALESCE(peak_bf16_flops, 0)),"
        " cc_major, cc_minor, sm_count, sm_clock_khz"
        " FROM gpus WHERE peak_fp32_flops > 0 AND peak_fp16_flops > 0 ORDER BY id LIMIT 1");
    double gain = 0.5;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        double fp32 = sqlite3_column_double(st, 0), half = sqlite3_column_double(st, 1);
        struct gpu_peaks p; /* computed from the row where it can be (common/gpu_peaks.h) */
        if (gpu_peaks_flops(sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                            sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5), &p)) {
            fp32 = p.fp32;
            half = p.fp16 > p.bf16 ? p.fp16 : p.bf16;
        }
        if (half > 0)
            gain = 1.0 - fp32 / half;
    }
    sqlite3_finalize(st);
    ctx->error[0] = '\0';
    return gain > 0 ? gain : 0.5;
}

static int is_half(enum kernels_dtype d)
{
    return d == KERNELS_DTYPE_FP16 || d == KERNELS_DTYPE_BF16;
}

/* A GEMM or convolution by its name alone (no op markers to say more). */
static int gemm_like_name(const char *name)
{
    static const char *const words[] = {"gemm", "Gemm", "GEMM", "conv", "Conv", "matmul", NULL};
    for (const char *const *w = words; *w; w++)
        if (strstr(name, *w))
            return 1;
    return 0;
}

/* Splits one CSV line in place into at most max fields; returns the count. */
static int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *out = p;
        fields[n++] = p;
        if (*p == '"') {
            char *q = p + 1;
            for (;;) {
                if (*q == '"' && q[1] == '"') {
                    *out++ = '"';
                    q += 2;
                } else if (*q == '"' || !*q) {
                    q += *q == '"';
                    break;
                } else {
                    *out++ = *q++;
                }
            }
            p = q;
        } else {
            while (*p && *p != ',')
                *out++ = *p++;
        }
        int more = *p == ',';
        if (*p)
            p++;
        *out = '\0';
        if (!more)
            break;
    }
    return n;
}

/* One group of the kernels report's no-tc rows: same op, kernel and shape. */
struct tc_group {
    char *key; /* op \x1f kernel \x1f params \x1f hint */
    int64_t count;
    double ns;
    struct analyze_evidence first[3];
    int first_count;
};

#define TC_COLUMNS "start,sil,tid,stream,device,op,kernel,params"
enum { TC_START, TC_SIL, TC_TID, TC_STREAM, TC_DEVICE, TC_OP, TC_KERNEL, TC_PARAMS, TC_HINTS };

static int64_t num_or(const char *s)
{
    return s && *s && strcmp(s, "na") ? atoll(s) : -1;
}

/* Runs `lantern kernels --hints` (CSV) into memory and groups its no-tc rows. */
static int tc_from_kernels_report(struct analyze_ctx *ctx, struct analyze_result *res, double gain)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return -1;
    struct kernels_options opt = {
        .columns = TC_COLUMNS, .format = KERNELS_FORMAT_CSV, .no_memops = 1, .hints_only = 1};
    int rc = kernels_report(ctx->db, &opt, out);
    fclose(out);
    if (rc < 0) {
        free(text);
        snprintf(ctx->error, sizeof ctx->error, "tensor_cores: the kernels report failed");
        return -1;
    }
    struct tc_group groups[ANALYZE_MAX_FINDINGS];
    int ngroups = 0;
    int64_t left_out = 0;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save); /* the header */
    while (line && (line = strtok_r(NULL, "\n", &save))) {
        char *f[TC_HINTS + 2];
        if (csv_split(line, f, TC_HINTS + 1) != TC_HINTS + 1 || !strstr(f[TC_HINTS], "no-tc"))
            continue;
        const char *hint = strstr(f[TC_HINTS], "no-tc-align8") ? "no-tc-align8" : "no-tc";
        char key[1024];
        snprintf(key, sizeof key, "%s\x1f%s\x1f%s\x1f%s", f[TC_OP], f[TC_KERNEL], f[TC_PARAMS],
                 hint);
        struct tc_group *g = NULL;
        for (int k = 0; k < ngroups && !g; k++)
            if (!strcmp(groups[k].key, key))
                g = &groups[k];
        if (!g) {
            if (ngroups == ANALYZE_MAX_FINDINGS) {
                left_out++;
                continue;
            }
            g = &groups[ngroups++];
            memset(g, 0, sizeof *g);
            g->key = strdup(key);
        }
        int64_t sil = num_or(f[TC_SIL]);
        g->count++;
        g->ns += sil > 0 ? (double)sil : 0;
        if (g->first_count < 3) {
            int64_t start = num_or(f[TC_START]);
            g->first[g->first_count++] =
                (struct analyze_evidence){.start_ns = start >= 0 ? start - ctx->start_ns : -1,
                                          .duration_ns = sil,
                                          .pid = -1,
                                          .tid = num_or(f[TC_TID]),
                                          .gpu = num_or(f[TC_DEVICE]),
                                          .stream = num_or(f[TC_STREAM]),
                                          .range = strdup(f[TC_OP]),
                                          .name = strdup(f[TC_KERNEL]),
                                          .detail = strdup(f[TC_PARAMS])};
        }
    }
    free(text);
    for (int k = 0; k < ngroups; k++) {
        struct tc_group *g = &groups[k];
        char *parts[4] = {g->key, "", "", ""};
        for (int p = 1; p < 4; p++) { /* a key cut by snprintf lacks its last parts */
            char *sep = strchr(parts[p - 1], '\x1f');
            if (!sep)
                break;
            *sep = '\0';
            parts[p] = sep + 1;
        }
        int align = !strcmp(parts[3], "no-tc-align8");
        char total[32];
        struct analyze_finding *f = analyze_add_finding(
            res, g->ns * gain, NULL, "%s (%s) ran %s without Tensor Cores %lld times, %s%s",
            parts[0], parts[2], parts[1], (long long)g->count,
            analyze_fmt_ns(total, sizeof total, g->ns),
            align ? ": a dimension is not a multiple of 8" : "");
        if (f) {
            f->count = g->count;
            for (int e = 0; e < g->first_count; e++)
                analyze_add_evidence(f, &g->first[e]);
        }
        for (int e = 0; e < g->first_count; e++) {
            free(g->first[e].range);
            free(g->first[e].name);
            free(g->first[e].detail);
        }
        free(g->key);
    }
    res->more += left_out;
    return 0;
}

int rule_tensor_cores(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -1;
    analyze_note(res, no_metrics, "Tensor Core activity");
    if (t->kernels == 0)
        return 0;
    sqlite3_stmt *name =
        analyze_prepare(ctx, "tensor_cores", "SELECT value FROM strings WHERE id = ?");
    if (!name)
        return -1;
    double gain = tensor_core_gain(ctx);
    int any_half_simt = 0, rc = 0;
    /* PyTorch's emit_nvtx op markers give the shapes; without them, names alone */
    int markers =
        analyze_query_int(ctx, "SELECT 1 FROM strings WHERE value LIKE 'aten::%' LIMIT 1", 0) == 1;
    for (size_t i = 0; i < t->name_count; i++) {
        const struct timeline_kernel_name *k = &t->names[i];
        sqlite3_reset(name);
        sqlite3_bind_int64(name, 1, k->name_id);
        if (sqlite3_step(name) != SQLITE_ROW || !sqlite3_column_text(name, 0))
            continue;
        const char *text = (const char *)sqlite3_column_text(name, 0);
        enum kernels_dtype dtype = kernels_name_dtype(text);
        if (!is_half(dtype) || kernels_name_tensor_cores(text) != KERNELS_TC_NO)
            continue;
        any_half_simt = 1;
        if (markers || !gemm_like_name(text))
            continue;
        char total[32];
        struct analyze_finding *f = analyze_add_finding(
            res, (double)k->kernel_ns * gain, NULL,
            "%s GEMM/convolution kernel %s ran %lld times (%s) without Tensor Cores (shapes "
            "unknown: record them with torch.autograd.profiler.emit_nvtx(record_shapes=True))",
            kernels_dtype_name(dtype), text, (long long)k->count,
            analyze_fmt_ns(total, sizeof total, (double)k->kernel_ns));
        if (f) {
            f->count = k->count;
            rc = timeline_op_evidence(ctx, f, TIMELINE_KERNEL, k->longest_id, "longest launch", -1,
                                      -1);
        }
    }
    sqlite3_finalize(name);
    if (rc == 0 && markers && any_half_simt)
        rc = tc_from_kernels_report(ctx, res, gain);
    return rc;
}

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
        return -1;
    analyze_note(res, no_metrics, "achieved occupancy");
    if (t->kernels == 0)
        return 0;
    struct sm_info sms[TIMELINE_MAX_GPUS];
    int nsm = 0;
    sqlite3_stmt *st = analyze_prepare(
        ctx, "small_grid",
        "SELECT id, sm_count, cc_major, max_threads_per_sm, max_regs_per_sm, max_smem_per_sm,"
        " max_blocks_per_sm FROM gpus");
    if (!st)
        return -1;
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
        return -1;
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
    int rc = name ? 0 : -1;
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
