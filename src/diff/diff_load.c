/* Reads one Lantern database into the series `lantern diff` compares (diff_internal.h): each
 * NVTX range's duration by domain:name (and its GPU energy where power was sampled), each
 * kernel's by short name and by innermost NVTX range, copies and memsets by kind, CUDA API
 * calls by name, the GPU metrics of each kernel name where they were recorded, and the run's
 * duration, GPU busy share and idle time. One pass per table; each id's name is read once. */
#include "common/sql_query.h"
#include "diff/diff_internal.h"
#include "diff/diff_random.h"
#include "diff/diff_stats.h"
#include "energy/energy_db.h"
#include "model/gpu_metrics_kernels.h"
#include "model/gpu_metrics_series.h"
#include "model/kernels_model.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The GPU metrics compared per kernel: what says why a kernel's time changed (its SMs' and
 * warps' use, its Tensor Cores, its memory traffic); docs/diff.md. */
static const enum gpu_metric_id diff_metrics[] = {GPU_METRIC_SM_ACTIVE, GPU_METRIC_WARP_OCCUPANCY,
                                                  GPU_METRIC_TENSOR_ACTIVE, GPU_METRIC_DRAM_BW};
#define DIFF_METRIC_COUNT (sizeof diff_metrics / sizeof diff_metrics[0])

uint64_t diff_row_hash(enum diff_kind kind, const char *scope, const char *name)
{
    return diff_hash_text(diff_hash_text(0xcbf29ce484222325ull ^ (uint64_t)kind, scope), name);
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

struct series_key {
    enum diff_kind kind;
    const char *scope, *name;
};

static int series_eq(const void *array, size_t pos, const void *key)
{
    const struct diff_series *s = (const struct diff_series *)array + pos;
    const struct series_key *k = key;
    return s->kind == k->kind && same_text(s->scope, k->scope) && same_text(s->name, k->name);
}

struct diff_series *diff_run_series(struct diff_run *run, enum diff_kind kind, const char *scope,
                                    const char *name)
{
    struct series_key key = {kind, scope, name};
    int added;
    if (index_reserve((void **)&run->series, &run->cap, run->count, sizeof *run->series) < 0)
        return NULL;
    long pos = index_get(&run->index, diff_row_hash(kind, scope, name), run->series, series_eq,
                         &key, run->count, &added);
    if (pos < 0)
        return NULL;
    struct diff_series *s = &run->series[pos];
    if (!added)
        return s;
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->unit = diff_kinds[kind].unit;
    s->scope = scope ? strdup(scope) : NULL;
    s->name = strdup(name);
    run->count++; /* counted even when a copy failed, so that diff_run_free frees it */
    return s->name && (!scope || s->scope) ? s : NULL;
}

static int series_push(struct diff_series *s, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        double *grown = realloc(s->v, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 0;
}

/* Up to three database ids -> a position in run->series: each id's name is read and its
 * series found once, not once per row of the table. */
struct id_entry {
    int64_t id[3];
    size_t pos;
};

struct id_cache {
    struct index_map index;
    struct id_entry *v;
    size_t n, cap;
};

static int id_eq(const void *array, size_t pos, const void *key)
{
    return !memcmp(((const struct id_entry *)array)[pos].id, key, sizeof(int64_t[3]));
}

/* The entry of ids, added (pos unset: the caller sets it when *added) when new; NULL when out
 * of memory. */
static struct id_entry *id_cache_get(struct id_cache *c, int64_t a, int64_t b, int64_t k,
                                     int *added)
{
    int64_t id[3] = {a, b, k};
    if (index_reserve((void **)&c->v, &c->cap, c->n, sizeof *c->v) < 0)
        return NULL;
    long pos = index_get(&c->index, index_mix(index_mix(index_mix(1, a), b), k), c->v, id_eq, id,
                         c->n, added);
    if (pos < 0)
        return NULL;
    if (*added) {
        memcpy(c->v[pos].id, id, sizeof id);
        c->n++;
    }
    return &c->v[pos];
}

static void id_cache_release(struct id_cache *c)
{
    index_release(&c->index);
    free(c->v);
}

/* A GPU operation's time, for the run's GPU busy share. */
struct interval {
    int64_t start, end;
};

/* What a load keeps between tables: the caches of names by id, the statement reading names,
 * the GPU operations' intervals. */
struct loader {
    struct diff_run *run;
    struct id_cache ranges;        /* (domain_id, name_id) -> range series */
    struct id_cache kernels;       /* (name_id) -> kernel series */
    struct id_cache range_kernels; /* (kernel name_id, domain_id, name_id) -> series */
    struct id_cache apis;          /* (name_id) -> API series */
    sqlite3_stmt *string, *domain;
    struct interval *busy; /* every kernel, copy and memset */
    size_t busy_count, busy_cap;
    char *error;
    size_t error_size;
};

static char *column_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return strdup(t ? (const char *)t : "");
}

/* strings.value of id, malloc'd, or NULL (id 0 or unknown) with *failed untouched; *failed
 * set when the query or the copy failed. */
static char *string_of(struct loader *l, int64_t id, int *failed)
{
    sqlite3_reset(l->string);
    sqlite3_bind_int64(l->string, 1, id);
    int step = sqlite3_step(l->string);
    if (step == SQLITE_DONE)
        return NULL;
    char *s = step == SQLITE_ROW ? column_text(l->string, 0) : NULL;
    if (!s)
        *failed = 1;
    return s;
}

/* "domain:name", ":name" in the default domain, as nvtx_sum labels a range. */
static char *range_label(struct loader *l, int64_t domain_id, int64_t name_id)
{
    int failed = 0;
    char *domain = NULL, *name = name_id ? string_of(l, name_id, &failed) : NULL, *label = NULL;
    sqlite3_reset(l->domain);
    sqlite3_bind_int64(l->domain, 1, domain_id);
    if (!failed && sqlite3_step(l->domain) == SQLITE_ROW)
        domain = column_text(l->domain, 0);
    if (!failed && asprintf(&label, "%s:%s", domain ? domain : "", name ? name : "(unnamed)") < 0)
        label = NULL;
    free(domain);
    free(name);
    return label;
}

/* The position of a range's series by its ids, made when new. -ENOMEM when out of memory. */
static long range_series(struct loader *l, int64_t domain_id, int64_t name_id)
{
    int added;
    struct id_entry *e = id_cache_get(&l->ranges, domain_id, name_id, 0, &added);
    if (!e || !added)
        return e ? (long)e->pos : -ENOMEM;
    char *label = range_label(l, domain_id, name_id);
    struct diff_series *s = label ? diff_run_series(l->run, DIFF_KIND_RANGE, NULL, label) : NULL;
    free(label);
    if (!s)
        return -ENOMEM;
    s->domain_id = domain_id;
    s->name_id = name_id;
    e->pos = (size_t)(s - l->run->series);
    return (long)e->pos;
}

/* The position of the series of kind named by strings id name_id (a kernel: its short name),
 * through cache; unnamed: `unnamed`. -ENOMEM when out of memory. */
static long named_series(struct loader *l, struct id_cache *cache, enum diff_kind kind,
                         int64_t name_id, const char *unnamed)
{
    int added, failed = 0;
    struct id_entry *e = id_cache_get(cache, name_id, 0, 0, &added);
    if (!e || !added)
        return e ? (long)e->pos : -ENOMEM;
    char *name = name_id ? string_of(l, name_id, &failed) : NULL, *shown = name;
    if (name && kind == DIFF_KIND_KERNEL) { /* the short name is never the longer */
        shown = malloc(strlen(name) + 1);
        if (shown)
            kernels_name_short(name, shown, strlen(name) + 1);
    }
    struct diff_series *s = failed || (name && !shown)
                                ? NULL
                                : diff_run_series(l->run, kind, NULL, shown ? shown : unnamed);
    if (shown != name)
        free(shown);
    free(name);
    if (!s)
        return -ENOMEM;
    e->pos = (size_t)(s - l->run->series);
    return (long)e->pos;
}

/* Runs a query whose rows fill series: row() is called for each and returns 0 or a
 * negative errno. */
static int each_row(struct loader *l, const char *sql, int (*row)(struct loader *, sqlite3_stmt *))
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(l->run->db, sql, -1, &q, NULL) != SQLITE_OK) {
        snprintf(l->error, l->error_size, "%s", sqlite3_errmsg(l->run->db));
        return -EIO;
    }
    int step, rc = 0;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW)
        rc = row(l, q);
    if (rc == 0 && step != SQLITE_DONE) {
        snprintf(l->error, l->error_size, "%s", sqlite3_errmsg(l->run->db));
        rc = -EIO;
    } else if (rc < 0 && !l->error[0]) {
        snprintf(l->error, l->error_size, "out of memory");
    }
    sqlite3_finalize(q);
    return rc;
}

/* Keeps a GPU operation's interval (columns start and start + 1 of q). */
static int busy_push(struct loader *l, sqlite3_stmt *q, int start)
{
    if (index_reserve((void **)&l->busy, &l->busy_cap, l->busy_count, sizeof *l->busy) < 0)
        return -ENOMEM;
    l->busy[l->busy_count++] =
        (struct interval){sqlite3_column_int64(q, start), sqlite3_column_int64(q, start + 1)};
    return 0;
}

static int range_row(struct loader *l, sqlite3_stmt *q)
{
    long pos = range_series(l, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1));
    return pos < 0 ? -1 : series_push(&l->run->series[pos], (double)sqlite3_column_int64(q, 2));
}

static int energy_row(struct loader *l, sqlite3_stmt *q)
{
    if (sqlite3_column_type(q, 2) == SQLITE_NULL) /* its process had no sampled GPU */
        return 0;
    long pos = range_series(l, sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1));
    if (pos < 0)
        return -ENOMEM;
    struct diff_series *s =
        diff_run_series(l->run, DIFF_KIND_ENERGY, NULL, l->run->series[pos].name);
    return s ? series_push(s, sqlite3_column_double(q, 2)) : -ENOMEM;
}

static int kernel_row(struct loader *l, sqlite3_stmt *q)
{
    int64_t name_id = sqlite3_column_int64(q, 0);
    double ns = (double)sqlite3_column_int64(q, 1);
    long pos = named_series(l, &l->kernels, DIFF_KIND_KERNEL, name_id, "(unnamed kernel)");
    if (pos < 0 || series_push(&l->run->series[pos], ns) < 0 || busy_push(l, q, 4) < 0)
        return -ENOMEM;
    if (sqlite3_column_type(q, 2) == SQLITE_NULL) /* launched outside any NVTX range */
        return 0;
    int64_t domain_id = sqlite3_column_int64(q, 2), range_name_id = sqlite3_column_int64(q, 3);
    int added;
    struct id_entry *e = id_cache_get(&l->range_kernels, name_id, domain_id, range_name_id, &added);
    if (!e)
        return -ENOMEM;
    if (added) {
        long range = range_series(l, domain_id, range_name_id);
        if (range < 0)
            return -ENOMEM;
        /* the names are the series' own strings: they stay where they are when the series
         * array grows */
        struct diff_series *s = diff_run_series(
            l->run, DIFF_KIND_RANGE_KERNEL, l->run->series[range].name, l->run->series[pos].name);
        if (!s)
            return -ENOMEM;
        e->pos = (size_t)(s - l->run->series);
    }
    return series_push(&l->run->series[e->pos], ns);
}

static int copy_row(struct loader *l, sqlite3_stmt *q)
{
    const char *name = (const char *)sqlite3_column_text(q, 0);
    struct diff_series *s = diff_run_series(l->run, DIFF_KIND_COPY, NULL, name ? name : "?");
    return s && series_push(s, (double)sqlite3_column_int64(q, 1)) == 0 ? busy_push(l, q, 2) : -ENOMEM;
}

static int api_row(struct loader *l, sqlite3_stmt *q)
{
    long pos = named_series(l, &l->apis, DIFF_KIND_API, sqlite3_column_int64(q, 0), "(unnamed)");
    return pos < 0 ? -1 : series_push(&l->run->series[pos], (double)sqlite3_column_int64(q, 1));
}

/* A figure of the whole run, as a series of one value. */
static int run_figure(struct diff_run *run, const char *name, double v, enum diff_unit unit)
{
    struct diff_series *s = diff_run_series(run, DIFF_KIND_RUN, NULL, name);
    if (!s)
        return -ENOMEM;
    s->single = 1;
    s->unit = unit;
    return series_push(s, v);
}

static int compare_intervals(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    return x->start != y->start ? (x->start > y->start) - (x->start < y->start)
                                : (x->end > y->end) - (x->end < y->end);
}

/* The run's duration, and where it had GPU work the share of it in which some GPU was busy
 * (the union of every kernel, copy and memset) and the rest, idle. */
static int load_run_figures(struct loader *l)
{
    sqlite3 *db = l->run->db;
    int64_t start = sql_query_int(db, "SELECT value FROM meta WHERE key = 'start_ns'", -1);
    int64_t end = sql_query_int(db, "SELECT value FROM meta WHERE key = 'end_ns'", -1);
    if (start < 0 || end <= start)
        return 0;
    double duration = (double)(end - start);
    if (run_figure(l->run, "duration", duration, DIFF_UNIT_NS) < 0)
        return -ENOMEM;
    if (!l->busy_count)
        return 0;
    /* sorted by start, an operation adds what it reaches past every earlier one's end */
    qsort(l->busy, l->busy_count, sizeof *l->busy, compare_intervals);
    int64_t busy = 0, reach = INT64_MIN;
    for (size_t i = 0; i < l->busy_count; i++) {
        int64_t from = l->busy[i].start > reach ? l->busy[i].start : reach;
        if (l->busy[i].end > from)
            busy += l->busy[i].end - from;
        if (l->busy[i].end > reach)
            reach = l->busy[i].end;
    }
    if (run_figure(l->run, "GPU busy", 100.0 * (double)busy / duration, DIFF_UNIT_PERCENT) < 0 ||
        run_figure(l->run, "GPU idle", duration - (double)busy, DIFF_UNIT_NS) < 0)
        return -ENOMEM;
    return 0;
}

/* Each kernel name's GPU metrics over its executions (model/gpu_metrics_kernels.h, the
 * attribution every report shares), merged by short name: one value per run. */
static int load_metrics(struct loader *l)
{
    sqlite3 *db = l->run->db;
    if (sql_query_int(db, "SELECT EXISTS (SELECT 1 FROM gpu_metric_sets)", 0) == 0)
        return 0;
    struct gpu_metrics_kernel *k = NULL;
    size_t n = 0;
    struct gpu_metrics_groups groups = {0};
    sqlite3_stmt *gpus = NULL;
    struct gpu_metric_acc *acc = NULL; /* [kernel series][metric], by the series' position */
    size_t series_count = l->run->count;
    int rc = gpu_metrics_kernels_load(db, &k, &n);
    if (rc == 0 && sqlite3_prepare_v2(db, "SELECT DISTINCT gpu_id FROM gpu_metric_sets", -1, &gpus,
                                      NULL) != SQLITE_OK)
        rc = -EIO;
    while (rc == 0 && sqlite3_step(gpus) == SQLITE_ROW) {
        struct gpu_metrics_series s;
        if ((rc = gpu_metrics_series_load(db, sqlite3_column_int64(gpus, 0), &s)) < 0)
            break;
        rc = gpu_metrics_kernels_sweep(k, n, &s, &groups);
        gpu_metrics_series_release(&s);
    }
    if (rc == 0 && !(acc = calloc(series_count * DIFF_METRIC_COUNT + 1, sizeof *acc)))
        rc = -ENOMEM;
    for (size_t g = 0; rc == 0 && g < groups.count; g++) {
        int added;
        struct id_entry *e = id_cache_get(&l->kernels, groups.v[g].key, 0, 0, &added);
        if (!e || added) { /* every kernel was loaded before: a new name is a changed database */
            rc = -EBADMSG;
            break;
        }
        for (size_t m = 0; m < DIFF_METRIC_COUNT; m++) {
            const struct gpu_metric_acc *from = &groups.v[g].acc[diff_metrics[m]];
            acc[e->pos * DIFF_METRIC_COUNT + m].area += from->area;
            acc[e->pos * DIFF_METRIC_COUNT + m].covered_ns += from->covered_ns;
        }
    }
    for (size_t pos = 0; rc == 0 && pos < series_count; pos++)
        for (size_t m = 0; rc == 0 && m < DIFF_METRIC_COUNT; m++) {
            double mean = gpu_metric_acc_mean(&acc[pos * DIFF_METRIC_COUNT + m]);
            if (mean < 0)
                continue;
            struct diff_series *s =
                diff_run_series(l->run, DIFF_KIND_METRIC, gpu_metrics[diff_metrics[m]].column,
                                l->run->series[pos].name);
            if (!s || series_push(s, mean) < 0)
                rc = -ENOMEM;
            else
                s->single = 1;
        }
    if (rc < 0 && !l->error[0])
        snprintf(l->error, l->error_size, "GPU metrics: %s", sqlite3_errmsg(db));
    sqlite3_finalize(gpus);
    free(acc);
    gpu_metrics_groups_release(&groups);
    free(k);
    return rc;
}

static int load(struct loader *l)
{
    sqlite3 *db = l->run->db;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?1", -1, &l->string, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT s.value FROM domains d JOIN strings s ON s.id = d.name_id"
                           " WHERE d.id = ?1",
                           -1, &l->domain, NULL) != SQLITE_OK) {
        snprintf(l->error, l->error_size, "%s", sqlite3_errmsg(db));
        return -EIO;
    }
    int sampled = energy_db_register_sql(db);
    if (sampled < 0) {
        snprintf(l->error, l->error_size, "energy: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    int rc = each_row(l,
                      "SELECT domain_id, ifnull(name_id, 0), end_ns - start_ns FROM ranges"
                      " WHERE end_ns IS NOT NULL",
                      range_row);
    if (rc == 0 && sampled)
        rc = each_row(l,
                      "SELECT domain_id, ifnull(name_id, 0),"
                      " lantern_process_energy_j(process_id, start_ns, end_ns) FROM ranges"
                      " WHERE end_ns IS NOT NULL",
                      energy_row);
    if (rc == 0)
        rc = each_row(l,
                      "SELECT ifnull(k.demangled_id, ifnull(k.name_id, 0)), k.end_ns - k.start_ns,"
                      " r.domain_id, ifnull(r.name_id, 0), k.start_ns, k.end_ns FROM kernels k"
                      " LEFT JOIN ranges r ON r.id = k.nvtx_range_id",
                      kernel_row);
    if (rc == 0)
        rc = each_row(l,
                      "SELECT name, end_ns - start_ns, start_ns, end_ns FROM gpu_ops"
                      " WHERE kind IN ('memcpy', 'memset')",
                      copy_row);
    if (rc == 0)
        rc = each_row(l, "SELECT ifnull(name_id, 0), end_ns - start_ns FROM cuda_api", api_row);
    if (rc == 0)
        rc = load_metrics(l);
    if (rc == 0)
        rc = load_run_figures(l);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < l->run->count; i++)
        qsort(l->run->series[i].v, l->run->series[i].n, sizeof(double), diff_compare_doubles);
    return diff_facts_load(l->run, l->error, l->error_size);
}

int diff_run_load(sqlite3 *db, const char *path, struct diff_run **out, char *error, size_t size)
{
    struct diff_run *run = calloc(1, sizeof *run);
    *out = NULL;
    if (!run) {
        snprintf(error, size, "out of memory");
        return -ENOMEM;
    }
    run->db = db;
    run->path = path;
    error[0] = '\0';
    struct loader l = {.run = run, .error = error, .error_size = size};
    int rc = load(&l);
    sqlite3_finalize(l.string);
    sqlite3_finalize(l.domain);
    id_cache_release(&l.ranges);
    id_cache_release(&l.kernels);
    id_cache_release(&l.range_kernels);
    id_cache_release(&l.apis);
    free(l.busy);
    if (rc < 0) {
        if (!error[0])
            snprintf(error, size, "out of memory");
        diff_run_free(run);
        return rc;
    }
    *out = run;
    return 0;
}

void diff_run_free(struct diff_run *run)
{
    if (!run)
        return;
    for (size_t i = 0; i < run->count; i++) {
        free(run->series[i].scope);
        free(run->series[i].name);
        free(run->series[i].v);
    }
    free(run->series);
    index_release(&run->index);
    diff_facts_release(&run->facts);
    free(run);
}
