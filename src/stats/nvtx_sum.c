/* nvtx_sum: time spent in each NVTX range, per name, domain and style, in the manner of
 * nsys's nvtx_sum: sorted by total time, Time % of the sum of all rows, and the statistics
 * of the instances' durations. Ranges that never ended are left out (the header counts them). */
#include "energy/energy_db.h"
#include "model/aggregates.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct range_group {
    char *label; /* "domain:name", ":name" in the default domain (as nsys prints it) */
    int style;
    double total, avg, med, min, max, stddev;
    int64_t count;
    double energy_j; /* GPU energy of the instances, when the database has power samples */
    int has_energy;  /* some instance's process had a sampled GPU (energy_db.h) */
};

struct durations {
    double *v; /* integer ns: exact in a double */
    size_t n, cap;
    double energy_j;
    int has_energy;
};

static int durations_push(struct durations *d, double v)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        double *grown = realloc(d->v, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        d->v = grown;
        d->cap = cap;
    }
    d->v[d->n++] = v;
    return 0;
}

/* Statistics of durations sorted ascending (median and standard deviation: aggregates.h). */
static void summarize(const struct durations *d, struct range_group *g)
{
    long double sum = 0;
    for (size_t i = 0; i < d->n; i++)
        sum += d->v[i];
    g->count = (int64_t)d->n;
    g->energy_j = d->energy_j;
    g->has_energy = d->has_energy;
    g->total = (double)sum;
    g->avg = (double)(sum / d->n);
    g->min = d->v[0];
    g->max = d->v[d->n - 1];
    g->med = aggregate_median_sorted(d->v, d->n);
    g->stddev = aggregate_stddev(d->v, d->n);
}

static int compare_groups(const void *a, const void *b)
{
    const struct range_group *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    int c = strcmp(x->label, y->label);
    return c ? c : x->style - y->style;
}

struct group_list {
    struct range_group *v;
    size_t n, cap;
};

static int groups_add(struct group_list *l, const struct durations *d, const char *domain,
                      const char *name, int style)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct range_group *grown = realloc(l->v, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        l->v = grown;
        l->cap = cap;
    }
    struct range_group *g = &l->v[l->n];
    summarize(d, g);
    g->style = style;
    if (asprintf(&g->label, "%s:%s", domain ? domain : "", name ? name : "(unnamed)") < 0)
        return -ENOMEM;
    l->n++;
    return 0;
}

static const char query[] =
    "SELECT r.domain_id, ifnull(r.name_id, 0), r.style, r.end_ns - r.start_ns, ds.value, s.value, "
    /* the range's own process's GPUs (src/energy/energy_db.h): NULL when it has none; one
     * search per range whatever the number of GPUs of a merged job */
    "lantern_process_energy_j(r.process_id, r.start_ns, r.end_ns) "
    "FROM ranges r LEFT JOIN strings s ON s.id = r.name_id "
    "LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id "
    "WHERE r.end_ns IS NOT NULL ORDER BY 1, 2, 3, 4";

/* One pass over the ranges sorted by (domain, name, style, duration) makes the groups. */
static int collect_groups(struct stats_ctx *ctx, struct group_list *groups)
{
    sqlite3_stmt *st = NULL;
    struct durations d = {0};
    char *domain = NULL, *name = NULL;
    int64_t key[3] = {-1, -1, -1}, rc = -EIO, step;
    if (sqlite3_prepare_v2(ctx->db, query, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t row[3] = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                          sqlite3_column_int64(st, 2)};
        if (memcmp(row, key, sizeof key) != 0) {
            if (d.n && (rc = groups_add(groups, &d, domain, name, (int)key[2])) < 0)
                goto fail;
            d.n = 0;
            d.energy_j = 0;
            d.has_energy = 0;
            memcpy(key, row, sizeof key);
            free(domain);
            free(name);
            domain = sqlite3_column_text(st, 4) ? strdup((const char *)sqlite3_column_text(st, 4))
                                                : NULL;
            name = sqlite3_column_text(st, 5) ? strdup((const char *)sqlite3_column_text(st, 5))
                                              : NULL;
        }
        if ((rc = durations_push(&d, (double)sqlite3_column_int64(st, 3))) < 0)
            goto fail;
        if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
            d.energy_j += sqlite3_column_double(st, 6);
            d.has_energy = 1;
        }
    }
    rc = step != SQLITE_DONE ? -EIO : d.n ? groups_add(groups, &d, domain, name, (int)key[2]) : 0;
fail:
    if (rc)
        snprintf(ctx->error, sizeof ctx->error, "nvtx_sum: %s", sqlite3_errmsg(ctx->db));
    sqlite3_finalize(st);
    free(d.v);
    free(domain);
    free(name);
    return (int)rc;
}

static const struct table_column columns[] = {
    STATS_DURATION_COLUMNS("Instances", "instances"),
    {"Style", "style", TABLE_TEXT},
    {"Range", "range", TABLE_TEXT},
    {"Energy (J)", "energy_j", TABLE_REAL}, /* only when the database has GPU power samples */
};

int stats_nvtx_sum(struct stats_ctx *ctx)
{
    struct group_list groups = {0};
    int gpus_sampled = energy_db_register_sql(ctx->db);
    int rc = gpus_sampled < 0 ? -EIO : collect_groups(ctx, &groups);
    if (gpus_sampled < 0)
        snprintf(ctx->error, sizeof ctx->error, "nvtx_sum: %s", sqlite3_errmsg(ctx->db));
    if (rc == 0) {
        if (groups.n) /* qsort's array must not be NULL, even empty */
            qsort(groups.v, groups.n, sizeof *groups.v, compare_groups);
        double all = 0;
        for (size_t i = 0; i < groups.n; i++)
            all += groups.v[i].total;
        int ncols = (int)(sizeof columns / sizeof columns[0]) - (gpus_sampled ? 0 : 1);
        struct table *t = stats_new_table(ctx, columns, ncols);
        for (size_t i = 0; t && i < groups.n; i++) {
            const struct range_group *g = &groups.v[i];
            table_percent(t, all > 0 ? 100.0 * g->total / all : 0);
            table_ns(t, g->total);
            table_int(t, g->count);
            table_ns(t, g->avg);
            table_ns(t, g->med);
            table_ns(t, g->min);
            table_ns(t, g->max);
            table_ns(t, g->stddev);
            table_text(t, g->style ? "StartEnd" : "PushPop");
            table_text(t, g->label);
            if (gpus_sampled && g->has_energy)
                table_real(t, g->energy_j);
            else if (gpus_sampled)
                table_text(t, NULL); /* no instance ran in a process with a sampled GPU */
        }
        if (!t || table_finish(t) < 0) {
            snprintf(ctx->error, sizeof ctx->error, "nvtx_sum: cannot write the table");
            rc = t ? -EIO : -ENOMEM;
        }
        if (rc == 0 && !groups.n)
            stats_why_nothing(ctx->db, ctx->note, sizeof ctx->note);
    }
    for (size_t i = 0; i < groups.n; i++)
        free(groups.v[i].label);
    free(groups.v);
    return rc;
}
