/* The comparison: matches the runs' series into rows by name, summarizes each side, tests each
 * row (by its instances with one run on a side, by the runs' medians with several), controls
 * the false-discovery rate over all rows, gives each its verdict, orders them, then explains
 * the ranges that changed and checks the runs' conditions (docs/diff.md, "Statistics"). */
#include "diff/diff_internal.h"
#include "diff/diff_stats.h"
#include "model/aggregates.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bootstrap draws per row: the 2.5 % and 97.5 % percentiles then rest on 50 draws each. */
#define DIFF_BOOTSTRAP_DRAWS 2000
/* The seed every row's generator starts from, with the row's name ("lantern"). */
#define DIFF_SEED 0x6c616e7465726eull
/* The confidence of the intervals. */
#define DIFF_CONFIDENCE 0.95

/* A row while it is built: its series in each run (NULL where the run lacks it), base first. */
struct matching {
    struct diff_row *rows;
    const struct diff_series **series; /* [row * runs + run] */
    size_t count, cap;
    int runs; /* base and new together */
    struct index_map index;
};

static int row_eq(const void *array, size_t pos, const void *key)
{
    const struct diff_row *r = (const struct diff_row *)array + pos;
    const struct diff_series *s = key;
    return r->kind == s->kind && !strcmp(r->name, s->name) &&
           (r->scope == s->scope || (r->scope && s->scope && !strcmp(r->scope, s->scope)));
}

static int match_series(struct matching *m, const struct diff_series *s, int run)
{
    if (m->count == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        struct diff_row *rows = realloc(m->rows, cap * sizeof *rows);
        if (rows)
            m->rows = rows;
        const struct diff_series **series =
            realloc(m->series, cap * (size_t)m->runs * sizeof *series);
        if (series)
            m->series = series;
        if (!rows || !series)
            return -ENOMEM;
        m->cap = cap;
    }
    int added;
    long pos = index_get(&m->index, diff_row_hash(s->kind, s->scope, s->name), m->rows, row_eq, s,
                         m->count, &added);
    if (pos < 0)
        return -ENOMEM;
    if (added) {
        m->rows[pos] =
            (struct diff_row){.kind = s->kind, .unit = s->unit, .scope = s->scope, .name = s->name};
        memset(&m->series[(size_t)pos * (size_t)m->runs], 0, (size_t)m->runs * sizeof *m->series);
        m->count++;
    }
    m->series[(size_t)pos * (size_t)m->runs + (size_t)run] = s;
    return 0;
}

/* The values of one side's runs together, sorted: a run's own array when only one has any,
 * else *pool (grown as needed). */
static const double *pool_side(const struct diff_series *const *s, int runs, double **pool,
                               size_t *pool_cap, size_t *n)
{
    const struct diff_series *only = NULL;
    int with = 0;
    *n = 0;
    for (int i = 0; i < runs; i++)
        if (s[i] && s[i]->n) {
            *n += s[i]->n;
            only = s[i];
            with++;
        }
    if (with <= 1)
        return only ? only->v : NULL;
    if (*n > *pool_cap) {
        double *grown = realloc(*pool, *n * sizeof *grown);
        if (!grown)
            return NULL;
        *pool = grown;
        *pool_cap = *n;
    }
    size_t at = 0;
    for (int i = 0; i < runs; i++)
        if (s[i] && s[i]->n) {
            memcpy(*pool + at, s[i]->v, s[i]->n * sizeof(double));
            at += s[i]->n;
        }
    qsort(*pool, *n, sizeof(double), diff_compare_doubles);
    return *pool;
}

/* Work arrays every row reuses. */
struct scratch {
    double *pool[2];
    size_t pool_cap[2];
    double draws[2][DIFF_BOOTSTRAP_DRAWS];
    double change[DIFF_BOOTSTRAP_DRAWS], ratio[DIFF_BOOTSTRAP_DRAWS];
    double *medians[2]; /* runs mode: each run's median, per side */
};

/* Count, p10, p90, the per-run total and, in instance mode, the median of one side. */
static void summarize(struct diff_side *side, const struct diff_series *const *s, int runs,
                      const double *pooled, size_t n)
{
    long double sum = 0;
    side->count = (int64_t)n;
    side->runs = 0;
    for (int i = 0; i < runs; i++)
        side->runs += s[i] && s[i]->n;
    for (size_t i = 0; i < n; i++)
        sum += pooled[i];
    side->total = (double)(sum / runs);
    side->median = n ? aggregate_median_sorted(pooled, n) : NAN;
    side->p10 = n ? diff_quantile_sorted(pooled, n, 0.10) : NAN;
    side->p90 = n ? diff_quantile_sorted(pooled, n, 0.90) : NAN;
}

/* The draws' two-sided percentile interval at DIFF_CONFIDENCE (NaN draws left out). */
static void percentile_interval(double *draws, size_t n, double *low, double *high)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(draws[i]))
            draws[kept++] = draws[i];
    if (!kept) {
        *low = *high = NAN;
        return;
    }
    qsort(draws, kept, sizeof *draws, diff_compare_doubles);
    *low = diff_quantile_sorted(draws, kept, (1 - DIFF_CONFIDENCE) / 2);
    *high = diff_quantile_sorted(draws, kept, (1 + DIFF_CONFIDENCE) / 2);
}

/* One run per side: the instances. The p-value is Mann-Whitney U's for a change beyond the
 * threshold: new above base x (1 + t), or below base x (1 - t), the smaller of the two
 * one-sided p-values doubled; the bootstrap of both medians (diff_bootstrap_medians) gives the
 * intervals of the change and of its ratio. */
static void test_instances(struct diff_row *r, const double *a, size_t na, const double *b,
                           size_t nb, double t, struct diff_random *rng, struct scratch *w)
{
    double up = diff_mann_whitney_p(a, na, 1 + t, b, nb, 1);
    double down = t < 1 ? diff_mann_whitney_p(a, na, 1 - t, b, nb, 0) : 1; /* no -100 % */
    if (isnan(up))
        return;
    r->p = fmin(1, 2 * fmin(up, down));
    r->test = "mann-whitney";
    diff_bootstrap_medians(a, na, rng, w->draws[0], DIFF_BOOTSTRAP_DRAWS);
    diff_bootstrap_medians(b, nb, rng, w->draws[1], DIFF_BOOTSTRAP_DRAWS);
    for (size_t k = 0; k < DIFF_BOOTSTRAP_DRAWS; k++) {
        w->change[k] = w->draws[1][k] - w->draws[0][k];
        w->ratio[k] = w->draws[0][k] != 0 ? 100 * (w->draws[1][k] / w->draws[0][k] - 1) : NAN;
    }
    percentile_interval(w->change, DIFF_BOOTSTRAP_DRAWS, &r->change_low, &r->change_high);
    percentile_interval(w->ratio, DIFF_BOOTSTRAP_DRAWS, &r->percent_low, &r->percent_high);
}

/* The medians of the runs of one side that have the row, into out; returns how many. */
static int run_medians(const struct diff_series *const *s, int runs, double *out)
{
    int n = 0;
    for (int i = 0; i < runs; i++)
        if (s[i] && s[i]->n)
            out[n++] = aggregate_median_sorted(s[i]->v, s[i]->n);
    return n;
}

static double mean_of(const double *v, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    return sum / n;
}

static double variance_of(const double *v, int n, double mean)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (v[i] - mean) * (v[i] - mean);
    return sum / (n - 1);
}

/* A bootstrap mean of n runs' values around their mean, each deviation scaled by
 * sqrt(n / (n - 1)) so that the draws' variance is the unbiased s^2 / n, not (n-1)/n of it
 * (Hesterberg 2015, "expanded" resampling). */
static double expanded_mean(const double *v, int n, double mean, struct diff_random *rng)
{
    double scale = sqrt((double)n / (n - 1)), sum = 0;
    for (int i = 0; i < n; i++)
        sum += mean + scale * (v[diff_random_below(rng, (size_t)n)] - mean);
    return sum / n;
}

static double sd_of(const double *v, size_t n)
{
    double sum = 0, squares = 0;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            sum += v[i];
            kept++;
        }
    if (kept < 2)
        return NAN;
    double mean = sum / (double)kept;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            squares += (v[i] - mean) * (v[i] - mean);
    return sqrt(squares / (double)(kept - 1));
}

/* Several runs per side: each run is one value (its median), and the change is that of the
 * runs' mean. The bootstrap over runs gives the standard errors of the change and of its
 * ratio; Student's t with Welch's degrees of freedom turns them into intervals, as a
 * percentile interval from three runs would be far too narrow, and into the p-value of a
 * change beyond the threshold t (a fraction), (|ratio| - t) / its standard error (docs/diff.md). */
static void test_runs(struct diff_row *r, const double *a, int na, const double *b, int nb,
                      double threshold, struct diff_random *rng, struct scratch *w)
{
    if (na < 2 || nb < 2)
        return;
    double ma = mean_of(a, na), mb = mean_of(b, nb);
    double va = variance_of(a, na, ma) / na, vb = variance_of(b, nb, mb) / nb;
    for (size_t k = 0; k < DIFF_BOOTSTRAP_DRAWS; k++) {
        double xa = expanded_mean(a, na, ma, rng), xb = expanded_mean(b, nb, mb, rng);
        w->change[k] = xb - xa;
        w->ratio[k] = xa != 0 ? 100 * (xb / xa - 1) : NAN;
    }
    double se = sd_of(w->change, DIFF_BOOTSTRAP_DRAWS),
           se_ratio = sd_of(w->ratio, DIFF_BOOTSTRAP_DRAWS);
    double denominator = va * va / (na - 1) + vb * vb / (nb - 1);
    double df = denominator > 0 ? (va + vb) * (va + vb) / denominator : na + nb - 2;
    double t = diff_t_quantile((1 + DIFF_CONFIDENCE) / 2, df), d = mb - ma;
    r->test = "bootstrap over runs";
    r->change_low = d - t * se;
    r->change_high = d + t * se;
    r->percent_low = r->percent - t * se_ratio;
    r->percent_high = r->percent + t * se_ratio;
    /* the distance beyond the threshold, in standard errors; without a percentage (a base of
     * 0) the distance from no change */
    double beyond = isnan(r->percent) ? fabs(d) : fabs(r->percent) - 100 * threshold;
    double error = isnan(r->percent) ? se : se_ratio;
    if (error > 0)
        r->p = beyond > 0 ? diff_t_two_sided_p(beyond / error, df) : 1;
    else /* every run the same on each side: the change is exact */
        r->p = beyond > 0 ? 0 : 1;
}

static void measure_row(struct diff_row *r, const struct diff_series *const *s, int base_runs,
                        int new_runs, const struct diff_result *res, struct scratch *w)
{
    size_t n[2];
    const double *v[2];
    const struct diff_series *const *side[2] = {s, s + base_runs};
    int runs[2] = {base_runs, new_runs};
    for (int i = 0; i < 2; i++)
        v[i] = pool_side(side[i], runs[i], &w->pool[i], &w->pool_cap[i], &n[i]);
    summarize(&r->base, side[0], base_runs, v[0], n[0]);
    summarize(&r->new, side[1], new_runs, v[1], n[1]);
    r->p = r->q = NAN;
    r->change_low = r->change_high = r->percent_low = r->percent_high = NAN;
    if (!n[0] || !n[1]) {
        r->change = r->percent = NAN;
        return;
    }
    struct diff_random rng;
    diff_random_seed(&rng, DIFF_SEED ^ diff_row_hash(r->kind, r->scope, r->name));
    int present[2] = {0, 0};
    enum diff_mode mode = res->mode;
    if (mode == DIFF_MODE_RUNS)
        for (int i = 0; i < 2; i++) {
            present[i] = run_medians(side[i], runs[i], w->medians[i]);
            (i ? &r->new : &r->base)->median = mean_of(w->medians[i], present[i]);
        }
    r->change = r->new.median - r->base.median;
    r->percent = r->base.median != 0 ? 100 * (r->new.median / r->base.median - 1) : NAN;
    int single = 0; /* a figure of the whole run: one value per run */
    for (int i = 0; i < base_runs + new_runs; i++)
        single |= s[i] && s[i]->single;
    /* a base of 0 has no percentage: then the test is of any change */
    double threshold = isnan(r->percent) ? 0 : res->options.threshold_percent / 100;
    if (mode == DIFF_MODE_RUNS)
        test_runs(r, w->medians[0], present[0], w->medians[1], present[1], threshold, &rng, w);
    else if (!single)
        test_instances(r, v[0], n[0], v[1], n[1], threshold, &rng, w);
}

/* Durations whose growth is "slower": not energy, metrics or the GPU's idle time. */
static int is_duration(const struct diff_row *r)
{
    return r->unit == DIFF_UNIT_NS && (r->kind != DIFF_KIND_RUN || !strcmp(r->name, "duration"));
}

static enum diff_verdict verdict_of(const struct diff_row *r, const struct diff_options *o)
{
    if (!r->base.count)
        return DIFF_NEW;
    if (!r->new.count)
        return DIFF_GONE;
    if (isnan(r->q))
        return DIFF_UNTESTED;
    /* the test is of a change beyond the threshold: significant means beyond it (a base of 0,
     * without a percentage, tests any change) */
    if (r->q > o->alpha || !(r->change_low > 0 || r->change_high < 0) ||
        fabs(r->percent) < o->threshold_percent)
        return DIFF_SAME;
    if (is_duration(r))
        return r->change > 0 ? DIFF_SLOWER : DIFF_FASTER;
    return r->change > 0 ? DIFF_HIGHER : DIFF_LOWER;
}

/* Changes of time first, the largest change of the time per run first; then the other
 * changes, the largest percentage first; then the rest by kind and name. */
static int order_group(const struct diff_row *r)
{
    if (r->verdict == DIFF_SAME || r->verdict == DIFF_UNTESTED)
        return 2;
    return r->unit == DIFF_UNIT_NS && r->verdict != DIFF_HIGHER && r->verdict != DIFF_LOWER ? 0 : 1;
}

static int compare_rows(const void *a, const void *b)
{
    const struct diff_row *x = a, *y = b;
    int gx = order_group(x), gy = order_group(y);
    if (gx != gy)
        return gx - gy;
    double kx = gx == 0 ? fabs(x->new.total - x->base.total) : gx == 1 ? fabs(x->percent) : 0;
    double ky = gy == 0 ? fabs(y->new.total - y->base.total) : gy == 1 ? fabs(y->percent) : 0;
    if (kx != ky && !isnan(kx) && !isnan(ky))
        return kx < ky ? 1 : -1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    int c = strcmp(x->scope ? x->scope : "", y->scope ? y->scope : "");
    return c ? c : strcmp(x->name, y->name);
}

static int mode_warnings(struct diff_result *res)
{
    if (res->mode == DIFF_MODE_RUNS)
        return res->base_runs >= 3 && res->new_runs >= 3
                   ? 0
                   : diff_warn(res, "2 runs on a side give wide intervals (Student's t with few "
                                    "degrees of freedom): 3 or more per side are recommended");
    return diff_warn(res,
                     "%s: the instances of one run are correlated (the state of the process "
                     "and machine slows or speeds them all), so a significant change may "
                     "still be run-to-run noise; profile 3 or more runs per side "
                     "(--base A1.db A2.db A3.db --new B1.db B2.db B3.db)",
                     res->base_runs == 1 && res->new_runs == 1
                         ? "one run per side"
                         : "one side has a single run, so the sides' instances are compared");
}

static int compare(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                   int new_count, struct diff_result *res, struct matching *m, struct scratch *w)
{
    struct diff_run *const *runs[2] = {base, new};
    int counts[2] = {base_count, new_count};
    for (int side = 0, at = 0; side < 2; side++)
        for (int i = 0; i < counts[side]; i++, at++)
            for (size_t k = 0; k < runs[side][i]->count; k++)
                if (match_series(m, &runs[side][i]->series[k], at) < 0)
                    return -ENOMEM;
    for (size_t i = 0; i < m->count; i++)
        measure_row(&m->rows[i], m->series + i * (size_t)m->runs, base_count, new_count, res, w);
    res->rows = m->rows;
    res->count = m->count;
    m->rows = NULL;
    double *p = malloc((res->count ? res->count : 1) * sizeof *p);
    double *q = malloc((res->count ? res->count : 1) * sizeof *q);
    int rc = p && q ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < res->count; i++)
        p[i] = res->rows[i].p;
    if (rc == 0)
        rc = diff_fdr_adjust(p, res->count, q);
    for (size_t i = 0; rc == 0 && i < res->count; i++) {
        res->rows[i].q = q[i];
        res->rows[i].verdict = verdict_of(&res->rows[i], &res->options);
        res->verdicts[res->rows[i].verdict]++;
    }
    free(p);
    free(q);
    if (rc == 0 && res->count)
        qsort(res->rows, res->count, sizeof *res->rows, compare_rows);
    if (rc == 0)
        rc = mode_warnings(res);
    if (rc == 0)
        rc = diff_checks(base, base_count, new, new_count, res);
    return rc;
}

int diff_compare(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                 int new_count, const struct diff_options *options, struct diff_result *out,
                 char *error, size_t size)
{
    memset(out, 0, sizeof *out);
    out->options = *options;
    out->base_runs = base_count;
    out->new_runs = new_count;
    out->mode = base_count >= 2 && new_count >= 2 ? DIFF_MODE_RUNS : DIFF_MODE_INSTANCES;
    out->base_paths = malloc((size_t)base_count * sizeof *out->base_paths);
    out->new_paths = malloc((size_t)new_count * sizeof *out->new_paths);
    struct matching m = {.runs = base_count + new_count};
    struct scratch *w = calloc(1, sizeof *w);
    if (w) {
        w->medians[0] = malloc((size_t)base_count * sizeof(double));
        w->medians[1] = malloc((size_t)new_count * sizeof(double));
    }
    int rc = out->base_paths && out->new_paths && w && w->medians[0] && w->medians[1] ? 0 : -ENOMEM;
    for (int i = 0; rc == 0 && i < base_count; i++)
        out->base_paths[i] = base[i]->path;
    for (int i = 0; rc == 0 && i < new_count; i++)
        out->new_paths[i] = new[i]->path;
    if (rc == 0)
        rc = compare(base, base_count, new, new_count, out, &m, w);
    if (rc == 0)
        rc = diff_explain(base, base_count, new, new_count, out, error, size);
    else
        snprintf(error, size, "out of memory");
    free(m.rows);
    free(m.series);
    index_release(&m.index);
    for (int i = 0; w && i < 2; i++) {
        free(w->pool[i]);
        free(w->medians[i]);
    }
    free(w);
    if (rc < 0)
        diff_result_release(out);
    return rc;
}

void diff_result_release(struct diff_result *result)
{
    for (size_t i = 0; i < result->count; i++) {
        for (size_t k = 0; k < result->rows[i].part_count; k++)
            free(result->rows[i].parts[k].name);
        free(result->rows[i].parts);
        free(result->rows[i].explanation);
    }
    free(result->rows);
    for (size_t i = 0; i < result->check_count; i++)
        free(result->checks[i].text);
    free(result->checks);
    for (size_t i = 0; i < result->warning_count; i++)
        free(result->warnings[i]);
    free(result->warnings);
    free(result->base_paths);
    free(result->new_paths);
    memset(result, 0, sizeof *result);
}
