/* gpu_metrics_sum: the GPU hardware metrics (lantern profile --gpu-metrics) of each GPU, as
 * min, time-weighted mean and max of each metric over the run (first to last sample), over
 * each NVTX range name's projection on that GPU (nvtx_gpu_proj_sum's: first to last GPU
 * operation launched inside an instance), and over each kernel name's executions. The samples
 * are GPU-wide: a kernel is given whatever the whole GPU did while it ran, and the Overlapped
 * column says how much of its time other kernels ran beside it. One sorted sweep per GPU:
 * samples by start (model/gpu_metrics_series.h) against kernels, then projections, by start.
 * docs/gpu-metrics.md, "Attribution", explains the weighting. */
#include "model/gpu_metrics_kernels.h"
#include "model/gpu_metrics_series.h"
#include "model/gpu_metrics_sources.h"
#include "stats/cuda_query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every range instance's projection on each GPU it put work on, with its range name's key
 * (grouped in C by consecutive rows). */
// clang-format off
static const char projections_sql[] =
    CUDA_SQL_OPS("gpu_ops") CUDA_SQL_OP_RANGES ","
    " projected AS (SELECT range_id, gpu_id, MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns"
    "  FROM op_ranges WHERE gpu_id IS NOT NULL GROUP BY range_id, gpu_id)"
    " SELECT p.gpu_id, p.start_ns, p.end_ns, r.domain_id, r.name_id, r.style, "
    CUDA_SQL_RANGE_NAME("r") " FROM projected p JOIN ranges r ON r.id = p.range_id"
    " ORDER BY r.domain_id, r.name_id, r.style";
// clang-format on

/* The GPUs with metrics, numbered and ordered as the session header's lines
 * (gpu_metrics_sources.h). */
static const char gpus_sql[] =
    "SELECT g.id, " GPU_METRICS_SQL_GPU_INDEX " AS idx FROM gpus g"
    " WHERE g.id IN (SELECT gpu_id FROM gpu_metric_sets) ORDER BY idx IS NULL, idx, g.id";

static const struct table_column columns[] = {
    {"Scope", "scope", TABLE_TEXT}, {"Name", "name", TABLE_TEXT},
    {"GPU", "gpu", TABLE_INT},      {"Metric", "metric", TABLE_TEXT},
    {"Unit", "unit", TABLE_TEXT},   {"Instances", "instances", TABLE_INT},
    {"Time", "time_ns", TABLE_NS},  {"Sampled", "sampled_ns", TABLE_NS},
    {"Min", "min", TABLE_REAL},     {"Mean", "mean", TABLE_REAL},
    {"Max", "max", TABLE_REAL},     {"Overlapped", "overlapped_percent", TABLE_PERCENT},
};
#define NCOLUMNS ((int)(sizeof columns / sizeof columns[0]))

/* One GPU's results. */
struct gpu_result {
    int64_t gpu_id, label; /* label -1: unknown */
    int present[GPU_METRIC_COUNT];
    int64_t first_ns, last_ns;
    struct gpu_metric_acc run[GPU_METRIC_COUNT];
    struct gpu_metrics_groups ranges; /* by label: a range name's projections on the GPU */
    struct gpu_metrics_groups kernels;
};

struct projection {
    int64_t gpu_id, start, end, label;
};

struct state {
    struct stats_ctx *ctx;
    struct gpu_metrics_kernel *kernels;
    size_t kernel_count;
    struct projection *projections;
    size_t projection_count;
    char **labels; /* range labels, by group */
    size_t label_count;
    struct gpu_result *gpus;
    size_t gpu_count;
};

static int fail(struct state *st, const char *what)
{
    snprintf(st->ctx->error, sizeof st->ctx->error, "gpu_metrics_sum: %s", what);
    return -EIO;
}

static int no_memory(struct state *st)
{
    fail(st, "out of memory");
    return -ENOMEM;
}

/* ---- loading ------------------------------------------------------------------------------ */

static int by_gpu_and_start(const void *a, const void *b)
{
    const struct projection *x = a, *y = b;
    if (x->gpu_id != y->gpu_id)
        return x->gpu_id < y->gpu_id ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

static int load_projections(struct state *st)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->ctx->db, projections_sql, -1, &q, NULL) != SQLITE_OK)
        return fail(st, sqlite3_errmsg(st->ctx->db));
    size_t cap = 0, label_cap = 0;
    int64_t last_key[3] = {0};
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t key[3] = {sqlite3_column_int64(q, 3), sqlite3_column_int64(q, 4),
                          sqlite3_column_int64(q, 5)};
        if (!st->label_count || memcmp(key, last_key, sizeof key)) {
            if (st->label_count == label_cap) {
                label_cap = label_cap ? 2 * label_cap : 64;
                char **v = realloc(st->labels, label_cap * sizeof *v);
                if (!v)
                    break;
                st->labels = v;
            }
            const char *label = (const char *)sqlite3_column_text(q, 6);
            if (!(st->labels[st->label_count++] = strdup(label ? label : "")))
                break;
            memcpy(last_key, key, sizeof key);
        }
        if (st->projection_count == cap) {
            cap = cap ? 2 * cap : 1024;
            struct projection *v = realloc(st->projections, cap * sizeof *v);
            if (!v)
                break;
            st->projections = v;
        }
        st->projections[st->projection_count++] =
            (struct projection){sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
                                sqlite3_column_int64(q, 2), (int64_t)st->label_count - 1};
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW)
        return no_memory(st);
    if (rc != SQLITE_DONE)
        return fail(st, sqlite3_errmsg(st->ctx->db));
    if (st->projection_count) /* qsort's base must not be NULL, even for 0 rows */
        qsort(st->projections, st->projection_count, sizeof *st->projections, by_gpu_and_start);
    return 0;
}

static int load_gpus(struct state *st)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->ctx->db, gpus_sql, -1, &q, NULL) != SQLITE_OK)
        return fail(st, sqlite3_errmsg(st->ctx->db));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct gpu_result *v = realloc(st->gpus, (st->gpu_count + 1) * sizeof *v);
        if (!v) {
            sqlite3_finalize(q);
            return no_memory(st);
        }
        st->gpus = v;
        struct gpu_result *g = &st->gpus[st->gpu_count++];
        memset(g, 0, sizeof *g);
        g->gpu_id = sqlite3_column_int64(q, 0);
        g->label = sqlite3_column_type(q, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : fail(st, sqlite3_errmsg(st->ctx->db));
}

/* ---- the sweep ---------------------------------------------------------------------------- */

/* The range projections on g's GPU (sorted by GPU, then start), each added to its label's
 * group. */
static int sweep_projections(struct state *st, struct gpu_result *g,
                             const struct gpu_metrics_series *s)
{
    struct gpu_metrics_cursor c = {0};
    for (size_t i = 0; i < st->projection_count; i++) {
        const struct projection *p = &st->projections[i];
        if (p->gpu_id != g->gpu_id)
            continue;
        struct gpu_metrics_group *grp = gpu_metrics_group_of(&g->ranges, p->label);
        if (!grp)
            return no_memory(st);
        gpu_metrics_group_add(grp, s, &c, p->start, p->end);
    }
    return 0;
}

static int sweep_gpu(struct state *st, struct gpu_result *g)
{
    struct gpu_metrics_series s;
    int rc = gpu_metrics_series_load(st->ctx->db, g->gpu_id, &s);
    if (rc < 0)
        return rc == -ENOMEM ? no_memory(st) : fail(st, sqlite3_errmsg(st->ctx->db));
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        g->present[m] = s.values[m] != NULL;
    if (s.count) {
        g->first_ns = s.start[0];
        g->last_ns = s.end[s.count - 1];
        struct gpu_metrics_cursor c = {0};
        gpu_metrics_series_add(&s, &c, g->first_ns, g->last_ns, g->run);
    }
    rc = gpu_metrics_kernels_sweep(st->kernels, st->kernel_count, &s, &g->kernels) < 0
             ? no_memory(st)
             : 0;
    if (rc == 0)
        rc = sweep_projections(st, g, &s);
    gpu_metrics_series_release(&s);
    return rc;
}

/* ---- output ------------------------------------------------------------------------------- */

/* One row per metric the GPU has. overlapped < 0: not a kernel row (empty cell). */
static void put_rows(struct table *t, const struct gpu_result *g, const char *scope,
                     const char *name, int64_t instances, int64_t time_ns, int64_t overlapped,
                     const struct gpu_metric_acc *acc)
{
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        if (!g->present[m])
            continue;
        /* rates print in GB/s: a column of 58900000000.00 helps no one */
        int percent = gpu_metric_is_percent(m);
        double scale = percent ? 1.0 : 1e-9;
        table_text(t, scope);
        table_text(t, name);
        if (g->label >= 0)
            table_int(t, g->label);
        else
            table_text(t, NULL);
        table_text(t, gpu_metrics[m].column);
        table_text(t, percent ? "%" : "GB/s");
        table_int(t, instances);
        table_ns(t, (double)time_ns);
        table_ns(t, (double)acc[m].covered_ns);
        if (acc[m].covered_ns > 0) {
            table_real(t, acc[m].min * scale);
            table_real(t, gpu_metric_acc_mean(&acc[m]) * scale);
            table_real(t, acc[m].max * scale);
        } else {
            table_text(t, NULL);
            table_text(t, NULL);
            table_text(t, NULL);
        }
        if (overlapped >= 0 && time_ns > 0)
            table_percent(t, 100.0 * (double)overlapped / (double)time_ns);
        else
            table_text(t, NULL);
    }
}

static int write_rows(struct state *st, struct table *t)
{
    sqlite3_stmt *name;
    if (sqlite3_prepare_v2(st->ctx->db, "SELECT value FROM strings WHERE id = ?", -1, &name,
                           NULL) != SQLITE_OK)
        return fail(st, sqlite3_errmsg(st->ctx->db));
    for (size_t i = 0; i < st->gpu_count; i++) {
        const struct gpu_result *g = &st->gpus[i];
        put_rows(t, g, "run", "(first to last sample)", 1, g->last_ns - g->first_ns, -1, g->run);
    }
    for (size_t i = 0; i < st->gpu_count; i++) {
        struct gpu_result *g = &st->gpus[i];
        gpu_metrics_groups_sort(&g->ranges);
        for (size_t k = 0; k < g->ranges.count; k++) {
            const struct gpu_metrics_group *r = &g->ranges.v[k];
            put_rows(t, g, "nvtx", st->labels[r->key], r->instances, r->time_ns, -1, r->acc);
        }
    }
    for (size_t i = 0; i < st->gpu_count; i++) {
        struct gpu_result *g = &st->gpus[i];
        gpu_metrics_groups_sort(&g->kernels);
        for (size_t k = 0; k < g->kernels.count; k++) {
            const struct gpu_metrics_group *r = &g->kernels.v[k];
            sqlite3_reset(name);
            sqlite3_bind_int64(name, 1, r->key);
            const char *text = sqlite3_step(name) == SQLITE_ROW
                                   ? (const char *)sqlite3_column_text(name, 0)
                                   : NULL;
            put_rows(t, g, "kernel", text ? text : "(unnamed kernel)", r->instances, r->time_ns,
                     r->overlapped_ns, r->acc);
        }
    }
    sqlite3_finalize(name);
    return 0;
}

/* Why there is nothing to show (ctx->note): the status lines when there are, else how to
 * record them. */
static void no_metrics(struct state *st)
{
    sqlite3_stmt *q;
    char why[160] = "";
    if (sqlite3_prepare_v2(st->ctx->db,
                           "SELECT code || COALESCE(': ' || reason, '') FROM gpu_metric_status"
                           " WHERE code <> 'lost' ORDER BY rowid LIMIT 1",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        snprintf(why, sizeof why, ": %s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    snprintf(st->ctx->note, sizeof st->ctx->note,
             "gpu_metrics_sum: no GPU hardware metrics in this database%s",
             why[0] ? why : " (profile with --gpu-metrics)");
}

static void state_release(struct state *st)
{
    for (size_t i = 0; i < st->gpu_count; i++) {
        gpu_metrics_groups_release(&st->gpus[i].ranges);
        gpu_metrics_groups_release(&st->gpus[i].kernels);
    }
    for (size_t i = 0; i < st->label_count; i++)
        free(st->labels[i]);
    free(st->labels);
    free(st->gpus);
    free(st->kernels);
    free(st->projections);
}

int stats_gpu_metrics_sum(struct stats_ctx *ctx)
{
    struct state st = {.ctx = ctx};
    int rc = load_gpus(&st);
    if (rc == 0 && st.gpu_count == 0) {
        no_metrics(&st);
        state_release(&st);
        return stats_empty(ctx, columns, NCOLUMNS);
    }
    if (rc == 0 && gpu_metrics_kernels_load(ctx->db, &st.kernels, &st.kernel_count) < 0)
        rc = fail(&st, sqlite3_errmsg(ctx->db));
    if (rc == 0)
        rc = load_projections(&st);
    for (size_t i = 0; rc == 0 && i < st.gpu_count; i++)
        rc = sweep_gpu(&st, &st.gpus[i]);
    struct table *t = rc == 0 ? stats_new_table(ctx, columns, NCOLUMNS) : NULL;
    if (rc == 0 && !t)
        rc = no_memory(&st);
    if (rc == 0)
        rc = write_rows(&st, t);
    if (t && table_finish(t) < 0 && rc == 0)
        rc = fail(&st, "cannot write the output");
    if (rc == 0 && ctx->format == TABLE_FORMAT_TABLE)
        fputs("\nGPU metrics are GPU-wide averages over each sample, weighted by how long it "
              "overlaps the range's\nprojection or the kernel (docs/gpu-metrics.md): a kernel "
              "that ran beside others is given the whole\nGPU's activity (Overlapped: the "
              "share of its time other kernels ran too), and one shorter than\na sample shares "
              "that sample's average with the work around it.\n",
              ctx->out);
    state_release(&st);
    return rc;
}
