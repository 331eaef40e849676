/* The GPU-metric samples of one GPU as step functions (gpu_metrics_series.h): loaded in one
 * query, sorted and made disjoint, with per-block sums so that a long interval is added
 * block by block rather than sample by sample. */
#include "common/gpu_metrics_series.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char samples_sql[] = "SELECT s.start_ns, s.end_ns"
#define GPU_METRIC(ID, column, unit, gpm_id, gpm_scale, cupti, definition) ", s." column
#include "trace/gpu_metrics.def"
#undef GPU_METRIC
                                  " FROM gpu_metric_samples s JOIN gpu_metric_sets m"
                                  " ON m.id = s.set_id WHERE m.gpu_id = ?"
                                  " AND s.end_ns > s.start_ns ORDER BY s.start_ns, s.end_ns";

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

/* Grows every array to hold cap samples; 0 or -ENOMEM. */
static int grow(struct gpu_metrics_series *s, size_t cap)
{
    int64_t *start = realloc(s->start, cap * sizeof *start);
    if (start)
        s->start = start;
    int64_t *end = realloc(s->end, cap * sizeof *end);
    if (end)
        s->end = end;
    int ok = start && end;
    for (int m = 0; m < GPU_METRIC_COUNT && ok; m++) {
        double *v = realloc(s->values[m], cap * sizeof *v);
        if (v)
            s->values[m] = v;
        ok = v != NULL;
    }
    return ok ? 0 : -ENOMEM;
}

/* Reads the rows; a row overlapping the previous starts at its end (or is left out). */
static int read_samples(sqlite3_stmt *st, struct gpu_metrics_series *s)
{
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
        if (s->count && start < s->end[s->count - 1]) {
            s->clipped++;
            start = s->end[s->count - 1];
            if (end <= start)
                continue;
        }
        if (s->count == cap && grow(s, cap = cap ? 2 * cap : 1024) < 0)
            return -ENOMEM;
        s->start[s->count] = start;
        s->end[s->count] = end;
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            s->values[m][s->count] = sqlite3_column_type(st, 2 + m) == SQLITE_NULL
                                         ? NAN
                                         : sqlite3_column_double(st, 2 + m);
        s->count++;
    }
    return rc == SQLITE_DONE ? 0 : -EIO;
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
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, samples_sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, gpu_id);
    int rc = read_samples(st, s);
    sqlite3_finalize(st);
    if (rc == 0)
        rc = build_blocks(s);
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
