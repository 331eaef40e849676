/* The GPU-metric samples of one GPU as step functions (gpu_metrics_series.h): loaded in one
 * query, sorted and made disjoint, with per-block sums so that a long interval is added
 * block by block rather than sample by sample. */
#include "model/gpu_metrics_series.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* In the index's order (set, start): no sort in SQLite; the sets are merged here. */
static const char samples_sql[] = "SELECT s.start_ns, s.end_ns"
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition) ", s." column
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
                                  " FROM gpu_metric_samples s JOIN gpu_metric_sets m"
                                  " ON m.id = s.set_id WHERE m.gpu_id = ?1"
                                  " AND s.end_ns > s.start_ns ORDER BY s.set_id, s.start_ns";
static const char count_sql[] = "SELECT count(*) FROM gpu_metric_samples s JOIN gpu_metric_sets m"
                                " ON m.id = s.set_id WHERE m.gpu_id = ?1 AND s.end_ns > s.start_ns";

void gpu_metrics_series_release(struct gpu_metrics_series *s)
{
    free(s->start);
    free(s->end);
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        free(s->values[m]);
        free(s->blocks[m]);
    }
    memset(s, 0, sizeof *s);
}

static int64_t count_samples(sqlite3 *db, int64_t gpu_id)
{
    sqlite3_stmt *st;
    int64_t n = -EIO;
    if (sqlite3_prepare_v2(db, count_sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, gpu_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int allocate(struct gpu_metrics_series *s, size_t n)
{
    size_t cap = n ? n : 1;
    s->start = malloc(cap * sizeof *s->start);
    s->end = malloc(cap * sizeof *s->end);
    int ok = s->start && s->end;
    for (int m = 0; m < GPU_METRIC_COUNT && ok; m++)
        ok = (s->values[m] = malloc(cap * sizeof *s->values[m])) != NULL;
    return ok ? 0 : -ENOMEM;
}

static int read_rows(sqlite3_stmt *st, struct gpu_metrics_series *s, size_t n)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && s->count < n) {
        s->start[s->count] = sqlite3_column_int64(st, 0);
        s->end[s->count] = sqlite3_column_int64(st, 1);
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            s->values[m][s->count] = sqlite3_column_type(st, 2 + m) == SQLITE_NULL
                                         ? NAN
                                         : sqlite3_column_double(st, 2 + m);
        s->count++;
    }
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

static int by_time(const void *a, const void *b, void *series)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const struct gpu_metrics_series *s = series;
    if (s->start[x] != s->start[y])
        return s->start[x] < s->start[y] ? -1 : 1;
    if (s->end[x] != s->end[y])
        return s->end[x] < s->end[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* Puts the samples of several sets in time order (one set: already). 0 or -ENOMEM. */
static int sort_samples(struct gpu_metrics_series *s)
{
    size_t i = 1;
    while (i < s->count && (s->start[i - 1] < s->start[i] ||
                            (s->start[i - 1] == s->start[i] && s->end[i - 1] <= s->end[i])))
        i++;
    if (i >= s->count)
        return 0;
    size_t *order = malloc(s->count * sizeof *order);
    int64_t *t = malloc(s->count * sizeof *t);
    double *v = malloc(s->count * sizeof *v);
    int rc = order && t && v ? 0 : -ENOMEM;
    if (rc == 0) {
        for (i = 0; i < s->count; i++)
            order[i] = i;
        qsort_r(order, s->count, sizeof *order, by_time, s);
        int64_t *times[2] = {s->start, s->end};
        for (int k = 0; k < 2; k++) {
            for (i = 0; i < s->count; i++)
                t[i] = times[k][order[i]];
            memcpy(times[k], t, s->count * sizeof *t);
        }
        for (int m = 0; m < GPU_METRIC_COUNT; m++) {
            for (i = 0; i < s->count; i++)
                v[i] = s->values[m][order[i]];
            memcpy(s->values[m], v, s->count * sizeof *v);
        }
    }
    free(order);
    free(t);
    free(v);
    return rc;
}

/* Makes the sorted samples disjoint: one beginning inside the previous starts at its end, or
 * goes when nothing is left of it. */
static void clip_samples(struct gpu_metrics_series *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->count; i++) {
        int64_t start = s->start[i];
        if (kept && start < s->end[kept - 1]) {
            s->clipped++;
            start = s->end[kept - 1];
            if (s->end[i] <= start)
                continue;
        }
        s->start[kept] = start;
        s->end[kept] = s->end[i];
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            s->values[m][kept] = s->values[m][i];
        kept++;
    }
    s->count = kept;
}

/* Drops the metrics no sample has (their arrays would be all NaN) and sums the blocks of the
 * others. 0 or -ENOMEM. */
static int build_blocks(struct gpu_metrics_series *s)
{
    size_t nblocks = s->count / GPU_METRICS_BLOCK;
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        size_t i = 0;
        while (i < s->count && isnan(s->values[m][i]))
            i++;
        if (i == s->count) {
            free(s->values[m]);
            s->values[m] = NULL;
            continue;
        }
        s->blocks[m] = calloc(nblocks ? nblocks : 1, sizeof *s->blocks[m]);
        if (!s->blocks[m])
            return -ENOMEM;
        for (size_t b = 0; b < nblocks; b++) {
            struct gpu_metrics_block *k = &s->blocks[m][b];
            k->min = INFINITY;
            k->max = -INFINITY;
            for (size_t j = b * GPU_METRICS_BLOCK; j < (b + 1) * GPU_METRICS_BLOCK; j++) {
                double v = s->values[m][j];
                if (isnan(v))
                    continue;
                int64_t d = s->end[j] - s->start[j];
                k->area += v * (double)d;
                k->covered_ns += d;
                k->min = v < k->min ? v : k->min;
                k->max = v > k->max ? v : k->max;
            }
        }
    }
    return 0;
}

int gpu_metrics_series_load(sqlite3 *db, int64_t gpu_id, struct gpu_metrics_series *s)
{
    memset(s, 0, sizeof *s);
    s->gpu_id = gpu_id;
    int64_t n = count_samples(db, gpu_id);
    if (n < 0)
        return (int)n;
    int rc = allocate(s, (size_t)n);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db, samples_sql, -1, &st, NULL) != SQLITE_OK)
        rc = -EIO;
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, gpu_id);
        rc = read_rows(st, s, (size_t)n);
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = sort_samples(s);
    if (rc == 0) {
        clip_samples(s);
        rc = build_blocks(s);
    }
    if (rc < 0)
        gpu_metrics_series_release(s);
    return rc;
}

static void add_value(struct gpu_metric_acc *a, double v, int64_t overlap, int64_t duration)
{
    if (a->covered_ns == 0) {
        a->min = v;
        a->max = v;
    }
    a->area += v * (double)overlap;
    a->covered_ns += overlap;
    a->touched_ns += duration;
    a->min = v < a->min ? v : a->min;
    a->max = v > a->max ? v : a->max;
}

static void add_block(struct gpu_metric_acc *a, const struct gpu_metrics_block *b)
{
    if (b->covered_ns == 0)
        return;
    if (a->covered_ns == 0) {
        a->min = b->min;
        a->max = b->max;
    }
    a->area += b->area;
    a->covered_ns += b->covered_ns;
    a->touched_ns += b->covered_ns; /* whole samples */
    a->min = b->min < a->min ? b->min : a->min;
    a->max = b->max > a->max ? b->max : a->max;
}

void gpu_metrics_series_add(const struct gpu_metrics_series *s, struct gpu_metrics_cursor *c,
                            int64_t from, int64_t to, struct gpu_metric_acc *acc)
{
    size_t i = c->first;
    while (i < s->count && s->end[i] <= from) /* ends are sorted: the samples are disjoint */
        i++;
    c->first = i;
    while (i < s->count && s->start[i] < to) {
        size_t last = i + GPU_METRICS_BLOCK - 1;
        if (i % GPU_METRICS_BLOCK == 0 && last < s->count && s->start[i] >= from &&
            s->end[last] <= to) {
            for (int m = 0; m < GPU_METRIC_COUNT; m++)
                if (s->blocks[m])
                    add_block(&acc[m], &s->blocks[m][i / GPU_METRICS_BLOCK]);
            i += GPU_METRICS_BLOCK;
            continue;
        }
        int64_t lo = s->start[i] > from ? s->start[i] : from;
        int64_t hi = s->end[i] < to ? s->end[i] : to;
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            if (s->values[m] && !isnan(s->values[m][i]))
                add_value(&acc[m], s->values[m][i], hi - lo, s->end[i] - s->start[i]);
        i++;
    }
}
