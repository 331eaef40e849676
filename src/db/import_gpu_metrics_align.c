/* Lines NVML GPM's samples up with the kernels, at the end of an import. GPM's counters lag the
 * refresh time each snapshot carries by an offset that is fixed within a run but differs
 * between runs (42, 60 and 90 ms measured on H200s, driver 580): a GEMM's Tensor Core activity
 * showed up in the samples of the phase after it. Where CUDA was traced, the kernels say when
 * the GPU was busy, and the graphics engine's activity (gr_active: any kernel running) must
 * follow them: the importer tries every lag from 0 to ALIGN_MAX_NS and moves the set's samples
 * back by the one that fits best, when it fits clearly better than none. A run without
 * kernels on that GPU, or without changes in activity to go by, keeps its samples where the
 * refreshes put them, with a status saying so (docs/gpu-metrics.md, "NVML GPM"). */
#include "db/import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ALIGN_STEP_NS 1000000ll
#define ALIGN_MAX_NS 150000000ll
/* The best lag must explain the samples this much better than none (its mean squared
 * misfit at most this share of no lag's), and by at least ALIGN_MIN_GAIN (%²): else the
 * activity did not change enough to tell. */
#define ALIGN_MAX_RATIO 0.5
#define ALIGN_MIN_GAIN 4.0

struct piece { /* of the union of a GPU's kernels, with the busy time before it */
    int64_t start, end, before;
};

struct busy {
    struct piece *p;
    size_t n;
};

struct sample {
    int64_t start, end;
    double active; /* gr_active (or sm_active), % */
};

/* Busy nanoseconds before t. */
static int64_t busy_until(const struct busy *b, int64_t t)
{
    size_t lo = 0, hi = b->n; /* the pieces starting at or before t: [0, lo) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->p[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return 0;
    const struct piece *p = &b->p[lo - 1];
    return p->before + (p->end < t ? p->end : t) - p->start;
}

/* Mean squared difference between the samples and the kernels' busy share, the samples
 * taken to describe [start - lag, end - lag). */
static double misfit(const struct sample *s, size_t n, const struct busy *b, int64_t lag)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = s[i].start - lag, e = s[i].end - lag;
        double share = 100.0 * (double)(busy_until(b, e) - busy_until(b, a)) / (double)(e - a);
        acc += (s[i].active - share) * (s[i].active - share);
    }
    return acc / (double)n;
}

static int load_busy(sqlite3 *db, int64_t gpu_id, struct busy *b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT start_ns, end_ns FROM kernels WHERE gpu_id = ? AND"
                           " end_ns > start_ns ORDER BY start_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    import_bind_row(st, IMPORT_INT(gpu_id));
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t a = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        struct piece *last = b->n ? &b->p[b->n - 1] : NULL;
        if (last && a <= last->end) { /* overlaps the last piece: extends it */
            if (e > last->end)
                last->end = e;
            continue;
        }
        if (b->n == cap) {
            cap = cap ? 2 * cap : 1024;
            struct piece *grown = realloc(b->p, cap * sizeof *grown);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            b->p = grown;
            last = b->n ? &b->p[b->n - 1] : NULL;
        }
        b->p[b->n++] = (struct piece){a, e, last ? last->before + last->end - last->start : 0};
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_samples(sqlite3 *db, int64_t set_id, struct sample **out, size_t *n)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT start_ns, end_ns, COALESCE(gr_active, sm_active) FROM"
                           " gpu_metric_samples WHERE set_id = ? AND end_ns > start_ns AND"
                           " COALESCE(gr_active, sm_active) IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    import_bind_row(st, IMPORT_INT(set_id));
    size_t cap = 0;
    int rc = 0;
    *out = NULL;
    *n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            struct sample *s = realloc(*out, cap * sizeof *s);
            if (!s) {
                rc = -ENOMEM;
                break;
            }
            *out = s;
        }
        (*out)[(*n)++] = (struct sample){sqlite3_column_int64(st, 0),
                                         sqlite3_column_int64(st, 1),
                                         sqlite3_column_double(st, 2)};
    }
    sqlite3_finalize(st);
    return rc;
}

static int put_status(sqlite3 *db, int64_t gpu_id, const char *code, const char *reason)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO gpu_metric_status(gpu_id, source, code, count, reason)"
                           " VALUES(?, 'NVML GPM', ?, 0, ?)",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    import_bind_row(st, IMPORT_INT(gpu_id), IMPORT_TEXT(code), IMPORT_TEXT_COPY(reason));
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

/* Aligns one set, saying what it did in gpu_metric_status; 0 or a negative errno (-EIO: an
 * SQLite error, -ENOMEM). */
static int align_set(sqlite3 *db, int64_t set_id, int64_t gpu_id)
{
    struct busy b = {0};
    struct sample *s = NULL;
    size_t n = 0;
    int rc = load_busy(db, gpu_id, &b);
    if (rc == 0)
        rc = load_samples(db, set_id, &s, &n);
    if (rc == 0 && n && b.n) {
        int64_t best_lag = 0;
        double none = misfit(s, n, &b, 0), best = none;
        for (int64_t lag = ALIGN_STEP_NS; lag <= ALIGN_MAX_NS; lag += ALIGN_STEP_NS) {
            double m = misfit(s, n, &b, lag);
            if (m < best) {
                best = m;
                best_lag = lag;
            }
        }
        char reason[200];
        if (best_lag && best <= ALIGN_MAX_RATIO * none && none - best >= ALIGN_MIN_GAIN) {
            sqlite3_stmt *st;
            rc = sqlite3_prepare_v2(db,
                                    "UPDATE gpu_metric_samples SET start_ns = start_ns - ?1,"
                                    " end_ns = end_ns - ?1 WHERE set_id = ?2",
                                    -1, &st, NULL) == SQLITE_OK
                     ? 0
                     : -EIO;
            if (rc == 0) {
                import_bind_row(st, IMPORT_INT(best_lag), IMPORT_INT(set_id));
                rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
                sqlite3_finalize(st);
            }
            snprintf(reason, sizeof reason,
                     "samples moved %.0f ms earlier to line up with the kernels (GPM's counters"
                     " lag their refresh; gr_active off by %.1f points rms before, %.1f after)",
                     (double)best_lag / 1e6, sqrt(none), sqrt(best));
            if (rc == 0)
                rc = put_status(db, gpu_id, "aligned", reason);
        } else if (best_lag) {
            rc = put_status(db, gpu_id, "unaligned",
                            "the kernels' activity changed too little to line the samples up"
                            " with (they may lag by up to 100 ms)");
        }
    } else if (rc == 0 && n) {
        rc = put_status(db, gpu_id, "unaligned",
                        "no kernels on this GPU to line the samples up with (they may lag by up"
                        " to 100 ms)");
    }
    free(b.p);
    free(s);
    return rc;
}

int import_gpu_metrics_align(sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, gpu_id FROM gpu_metric_sets WHERE source = 'NVML GPM'"
                           " AND gpu_id IS NOT NULL ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = align_set(db, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    return rc;
}
