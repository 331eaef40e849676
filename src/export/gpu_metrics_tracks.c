/* gpu_metrics_tracks.h: a GPU's samples (model/gpu_metrics_series.h: sorted, disjoint) turned
 * into counter-track points, thinned to a bucket width when there are too many. */
#include "export/gpu_metrics_tracks.h"
#include "model/gpu_metrics_series.h"
#include "output/table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void tracks_release(struct gpu_metrics_tracks *t)
{
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        free(t->metric[m].ts);
        free(t->metric[m].value);
    }
}

struct builder {
    struct gpu_metric_track *track;
    size_t cap;
    int failed;
    double area; /* the bucket being summed */
    int64_t covered, first;
    int open; /* a bucket holds samples */
};

static void point(struct builder *b, int64_t ts, double value)
{
    struct gpu_metric_track *t = b->track;
    if (t->count && t->value[t->count - 1] == value)
        return; /* the counter already reads it */
    if (t->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        int64_t *ts_grown = realloc(t->ts, cap * sizeof *ts_grown);
        if (ts_grown)
            t->ts = ts_grown;
        double *v_grown = realloc(t->value, cap * sizeof *v_grown);
        if (v_grown)
            t->value = v_grown;
        if (!ts_grown || !v_grown) {
            b->failed = 1;
            return;
        }
        b->cap = cap;
    }
    t->ts[t->count] = ts;
    t->value[t->count++] = value;
}

static void close_bucket(struct builder *b, double scale)
{
    if (b->open)
        point(b, b->first, b->area / (double)b->covered * scale);
    b->open = 0;
    b->area = 0;
    b->covered = 0;
}

/* One metric's points: bucket 0 puts a point at every sample's start. */
static void build_track(const struct gpu_metrics_series *s, int m, int64_t bucket, double scale,
                        struct builder *b)
{
    const double *v = s->values[m];
    int64_t bucket_of_open = -1, last_end = 0;
    int measured = 0; /* the previous sample had the metric */
    for (size_t i = 0; i < s->count; i++) {
        /* a gap: more than half the previous sample's length without a measurement */
        int gap =
            measured && (isnan(v[i]) || s->start[i] - last_end > (last_end - s->start[i - 1]) / 2);
        int64_t k = bucket ? (s->start[i] - s->start[0]) / bucket : (int64_t)i;
        if (gap || (b->open && k != bucket_of_open))
            close_bucket(b, scale);
        if (gap)
            point(b, last_end, 0);
        measured = !isnan(v[i]);
        if (!measured)
            continue;
        if (!b->open) {
            b->open = 1;
            b->first = s->start[i];
            bucket_of_open = k;
        }
        int64_t d = s->end[i] - s->start[i];
        b->area += v[i] * (double)d;
        b->covered += d;
        last_end = s->end[i];
    }
    close_bucket(b, scale);
    if (measured)
        point(b, last_end, 0); /* nothing measured after the last sample */
}

/* Builds gpu_id's tracks. 0, -ENOMEM or -EIO. */
static int tracks_build(sqlite3 *db, int64_t gpu_id, size_t max_points,
                        struct gpu_metrics_tracks *t)
{
    struct gpu_metrics_series s;
    *t = (struct gpu_metrics_tracks){.gpu_id = gpu_id};
    int rc = gpu_metrics_series_load(db, gpu_id, &s);
    if (rc < 0)
        return rc;
    if (s.count > max_points) {
        /* a whole number of samples a bucket (k x their mean spacing): a width between two
         * would average one sample here and two there */
        int64_t span = s.end[s.count - 1] - s.start[0];
        size_t k = (s.count + max_points - 1) / max_points;
        t->bucket_ns = (int64_t)((double)span / (double)s.count * (double)k + 0.5);
    }
    for (int m = 0; m < GPU_METRIC_COUNT && rc == 0; m++) {
        if (!s.values[m])
            continue;
        struct builder b = {.track = &t->metric[m]};
        build_track(&s, m, t->bucket_ns, gpu_metric_is_percent(m) ? 1.0 : 1e-9, &b);
        if (b.failed)
            rc = -ENOMEM;
    }
    gpu_metrics_series_release(&s);
    if (rc < 0)
        tracks_release(t);
    return rc;
}

int gpu_metrics_tracks_each(sqlite3 *db, size_t max_points,
                            int (*draw)(void *arg, const struct gpu_metrics_tracks *t), void *arg,
                            int64_t *widest_bucket_ns)
{
    sqlite3_stmt *gpus;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT m.gpu_id FROM gpu_metric_sets m WHERE EXISTS"
                           " (SELECT 1 FROM gpu_metric_samples s WHERE s.set_id = m.id)"
                           " ORDER BY m.gpu_id",
                           -1, &gpus, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(gpus)) == SQLITE_ROW) {
        struct gpu_metrics_tracks t;
        if ((rc = tracks_build(db, sqlite3_column_int64(gpus, 0), max_points, &t)) < 0)
            break;
        if (t.bucket_ns > *widest_bucket_ns)
            *widest_bucket_ns = t.bucket_ns;
        rc = draw(arg, &t) ? -EIO : 0;
        tracks_release(&t);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(gpus);
    return rc;
}

void gpu_metrics_track_name(const struct gpu_metrics_tracks *t, int metric, char *out, size_t size)
{
    const char *unit = gpu_metric_is_percent(metric) ? "%" : "GB/s";
    if (!t->bucket_ns) {
        snprintf(out, size, "%s (%s)", gpu_metrics[metric].column, unit);
        return;
    }
    char width[32];
    table_format_duration(width, sizeof width, (double)t->bucket_ns);
    snprintf(out, size, "%s (%s, mean per %s)", gpu_metrics[metric].column, unit, width);
}
