/* The measured columns of `lantern kernels`: where GPU metrics were recorded, each kernel
 * row's SM activity, achieved warp occupancy and Tensor Core activity, time-weighted over its
 * execution (one sweep per GPU: rows in start order against the samples,
 * model/gpu_metrics_series.h), and the Tensor Core answer they decide
 * (kernels_measured_tensor_cores) in place of the name's guess. docs/kernels.md. */
#include "model/gpu_metrics_series.h"
#include "model/kernels_load.h"
#include "model/overlap.h"

#include <errno.h>
#include <stdlib.h>

/* The kernel rows of one GPU, in start order (the rows are sorted by start). */
static size_t rows_of_gpu(const struct kernels_rows *rows, int64_t gpu_id, struct kernels_row **out)
{
    size_t n = 0;
    for (size_t i = 0; i < rows->count; i++) {
        struct kernels_row *row = &rows->rows[i];
        if (row->kind == KERNELS_ROW_KERNEL && row->gpu && row->gpu->id == gpu_id &&
            row->end_ns >= row->start_ns)
            out[n++] = row;
    }
    return n;
}

static void measure(struct kernels_row *row, const struct gpu_metric_acc *acc, int64_t shared)
{
    double *cell[] = {&row->sm_active, &row->warp_occupancy, &row->tensor_active};
    const enum gpu_metric_id metric[] = {GPU_METRIC_SM_ACTIVE, GPU_METRIC_WARP_OCCUPANCY,
                                         GPU_METRIC_TENSOR_ACTIVE};
    for (int k = 0; k < 3; k++)
        *cell[k] = gpu_metric_acc_mean(&acc[metric[k]]);
    const struct gpu_metric_acc *t = &acc[GPU_METRIC_TENSOR_ACTIVE];
    if (t->covered_ns <= 0)
        return;
    double duration = (double)(row->end_ns - row->start_ns);
    enum kernels_tc tc =
        kernels_measured_tensor_cores(row->tensor_active, (double)shared / duration,
                                      (double)t->covered_ns / (double)t->touched_ns);
    if (tc != KERNELS_TC_UNKNOWN) {
        row->tc = tc;
        row->tc_measured = 1;
    }
}

static int measure_gpu(struct kernels_state *s, int64_t gpu_id, struct kernels_row **mine)
{
    struct gpu_metrics_series series;
    int rc = gpu_metrics_series_load(s->db, gpu_id, &series);
    if (rc < 0)
        return rc;
    size_t n = rows_of_gpu(&s->rows, gpu_id, mine);
    int64_t *start = malloc((n ? n : 1) * sizeof *start), *end = malloc((n ? n : 1) * sizeof *end);
    int64_t *shared = malloc((n ? n : 1) * sizeof *shared);
    rc = start && end && shared ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        start[i] = mine[i]->start_ns;
        end[i] = mine[i]->end_ns;
    }
    if (rc == 0)
        rc = overlap_with_others(start, end, n, shared);
    struct gpu_metrics_cursor c = {0};
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (end[i] <= start[i])
            continue;
        struct gpu_metric_acc acc[GPU_METRIC_COUNT] = {{0}};
        gpu_metrics_series_add(&series, &c, start[i], end[i], acc);
        measure(mine[i], acc, shared[i]);
    }
    free(start);
    free(end);
    free(shared);
    gpu_metrics_series_release(&series);
    return rc;
}

int kernels_metrics(struct kernels_state *s)
{
    sqlite3_stmt *gpus;
    if (sqlite3_prepare_v2(s->db, "SELECT DISTINCT gpu_id FROM gpu_metric_sets ORDER BY gpu_id", -1,
                           &gpus, NULL) != SQLITE_OK)
        return -EIO;
    struct kernels_row **mine = malloc((s->rows.count ? s->rows.count : 1) * sizeof *mine);
    int rc = mine ? 0 : -ENOMEM, step;
    while (rc == 0 && (step = sqlite3_step(gpus)) == SQLITE_ROW) {
        s->rows.has_metrics = 1;
        rc = measure_gpu(s, sqlite3_column_int64(gpus, 0), mine);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(gpus);
    free(mine);
    return rc;
}
