/* tensor_cores: fp16/bf16 GEMMs and convolutions that did not run on the Tensor Cores. Where
 * GPU metrics were recorded, a kernel name's measured tensor_active decides (none measured is a
 * finding even when the name promises Tensor Cores; activity measured clears a name that looks
 * SIMT); elsewhere the kernel's name does, as `lantern kernels` reads it, and with PyTorch's
 * emit_nvtx markers the rows of `lantern kernels --hints` (whose tc is measured where it can
 * be) give the op and the shape that prevents it, as PyProf suggests. docs/analyze.md. */
#include "analyze/findings.h"
#include "analyze/timeline.h"
#include "db/gpu_peaks.h"
#include "model/gpu_metrics_kernels.h"
#include "model/gpu_metrics_series.h"
#include "model/kernels.h"
#include "model/kernels_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        struct gpu_peaks p; /* computed from the row where it can be (db/gpu_peaks.h) */
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
static int tc_from_kernels_table(struct analyze_ctx *ctx, struct analyze_result *res, double gain)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return -ENOMEM;
    struct kernels_options opt = {
        .columns = TC_COLUMNS, .format = KERNELS_FORMAT_CSV, .no_memops = 1, .hints_only = 1};
    int rc = kernels_write(ctx->db, &opt, out);
    fclose(out);
    if (rc < 0) {
        free(text);
        snprintf(ctx->error, sizeof ctx->error, "tensor_cores: the kernels report failed");
        return -EIO;
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

/* Each kernel name's Tensor Core activity, measured over its executions on every GPU with
 * metrics (model/gpu_metrics_kernels.h): groups by name_id, empty without metrics. */
static int measure_names(struct analyze_ctx *ctx, struct gpu_metrics_groups *groups, int *gpus)
{
    *gpus = 0;
    sqlite3_stmt *st = analyze_prepare(ctx, "tensor_cores",
                                       "SELECT DISTINCT gpu_id FROM gpu_metric_sets ORDER BY 1");
    if (!st)
        return -EIO;
    struct gpu_metrics_kernel *kernels = NULL;
    size_t count = 0;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        struct gpu_metrics_series s;
        if (!*gpus)
            rc = gpu_metrics_kernels_load(ctx->db, &kernels, &count);
        if (rc == 0)
            rc = gpu_metrics_series_load(ctx->db, sqlite3_column_int64(st, 0), &s);
        if (rc == 0) {
            rc = gpu_metrics_kernels_sweep(kernels, count, &s, groups);
            gpu_metrics_series_release(&s);
        }
        ++*gpus;
    }
    sqlite3_finalize(st);
    free(kernels);
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "tensor_cores: cannot read the GPU metrics: %s",
                 rc == -ENOMEM ? "out of memory" : sqlite3_errmsg(ctx->db));
    return rc;
}

/* The measured answer for a name: NO or YES where the metrics decide, else UNKNOWN
 * (kernels_measured_tensor_cores; a name's executions may share samples, so only the overlap
 * with other kernels counts against it). *tensor receives the mean. */
static enum kernels_tc measured_name(const struct gpu_metrics_groups *groups, int64_t name_id,
                                     double *tensor)
{
    const struct gpu_metrics_group *g = gpu_metrics_group_find(groups, name_id);
    if (!g)
        return KERNELS_TC_UNKNOWN;
    *tensor = gpu_metric_acc_mean(&g->acc[GPU_METRIC_TENSOR_ACTIVE]);
    if (*tensor < 0 || g->time_ns <= 0)
        return KERNELS_TC_UNKNOWN;
    return kernels_measured_tensor_cores(*tensor, (double)g->overlapped_ns / (double)g->time_ns,
                                         -1);
}

int rule_tensor_cores(struct analyze_ctx *ctx, struct analyze_result *res)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    if (!t)
        return -EIO;
    struct gpu_metrics_groups groups = {0};
    int gpus;
    int rc = measure_names(ctx, &groups, &gpus);
    if (rc < 0) {
        gpu_metrics_groups_release(&groups);
        return rc;
    }
    if (t->kernels == 0) {
        analyze_note(res, gpus ? "no kernels to judge"
                               : "measured Tensor Core activity needs GPU hardware metrics "
                                 "(lantern profile --gpu-metrics): kernels are judged by name");
        gpu_metrics_groups_release(&groups);
        return 0;
    }
    sqlite3_stmt *name =
        analyze_prepare(ctx, "tensor_cores", "SELECT value FROM strings WHERE id = ?");
    if (!name) {
        gpu_metrics_groups_release(&groups);
        return -EIO;
    }
    double gain = tensor_core_gain(ctx);
    int any_half_without = 0, measured = 0;
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
        double tensor = -1;
        enum kernels_tc by_metrics = measured_name(&groups, k->name_id, &tensor);
        enum kernels_tc by_name = kernels_name_tensor_cores(text);
        measured += by_metrics != KERNELS_TC_UNKNOWN;
        /* measured Tensor Core use overrides the name's guess; a name whose guess is yes but
         * which measured none is a finding only the metrics can make */
        enum kernels_tc tc = by_metrics != KERNELS_TC_UNKNOWN ? by_metrics : by_name;
        if (!is_half(dtype) || tc != KERNELS_TC_NO)
            continue;
        any_half_without = 1;
        if (markers || (!gemm_like_name(text) && by_name != KERNELS_TC_YES))
            continue;
        char total[32];
        struct analyze_finding *f;
        if (by_metrics == KERNELS_TC_NO)
            f = analyze_add_finding(
                res, (double)k->kernel_ns * gain, NULL,
                "%s GEMM/convolution kernel %s ran %lld times (%s) with no Tensor Core activity "
                "measured (tensor_active %.2f %% over its executions%s)",
                kernels_dtype_name(dtype), text, (long long)k->count,
                analyze_fmt_ns(total, sizeof total, (double)k->kernel_ns), tensor,
                by_name == KERNELS_TC_YES ? ", though its name says Tensor Cores" : "");
        else
            f = analyze_add_finding(
                res, (double)k->kernel_ns * gain, NULL,
                "%s GEMM/convolution kernel %s ran %lld times (%s) without Tensor Cores (from "
                "its name; shapes unknown: record them with "
                "torch.autograd.profiler.emit_nvtx(record_shapes=True))",
                kernels_dtype_name(dtype), text, (long long)k->count,
                analyze_fmt_ns(total, sizeof total, (double)k->kernel_ns));
        if (f) {
            f->count = k->count;
            rc = timeline_op_evidence(ctx, f, TIMELINE_KERNEL, k->longest_id, "longest launch", -1,
                                      -1);
        }
    }
    sqlite3_finalize(name);
    gpu_metrics_groups_release(&groups);
    if (gpus)
        analyze_note(res,
                     "Tensor Core activity measured (GPU metrics, tensor_active) for %d of %zu "
                     "kernel names; the others judged by name (their samples were shared with "
                     "concurrent kernels, or none covered them)",
                     measured, t->name_count);
    else
        analyze_note(res, "measured Tensor Core activity needs GPU hardware metrics (lantern "
                          "profile --gpu-metrics): kernels are judged by name");
    if (rc == 0 && markers && any_half_without)
        rc = tc_from_kernels_table(ctx, res, gain);
    return rc;
}
