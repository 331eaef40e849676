/* The GPU hardware metrics in the Perfetto export: a counter track per recorded metric under
 * each GPU's track (sm_active (%), pcie_rx (GB/s), ...), beside the kernels whose activity
 * they measure. At most PERFETTO_GPU_METRIC_POINTS points a track (gpu_metrics_tracks.h:
 * past that, means over buckets, said in the track's name). */
#include "export/gpu_metrics_tracks.h"
#include "export/perfetto_writer.h"

/* 20 s of 10 kHz samples drawn one by one; ~15 bytes a point: 45 MB a GPU at most. */
#define PERFETTO_GPU_METRIC_POINTS 200000

int perfetto_gpu_metrics_counters(struct perfetto_writer *w)
{
    unsigned metric[GPU_METRIC_COUNT];
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        metric[m] = perfetto_gpu_counter_metric(w);
    sqlite3_stmt *gpus = gpu_metrics_tracks_gpus(w->db);
    if (!gpus)
        return -1;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(gpus)) == SQLITE_ROW) {
        struct gpu_metrics_tracks t;
        if (gpu_metrics_tracks_build(w->db, sqlite3_column_int64(gpus, 0),
                                     PERFETTO_GPU_METRIC_POINTS, &t) < 0) {
            rc = -1;
            break;
        }
        if (t.bucket_ns > w->gpu_metrics_bucket_ns)
            w->gpu_metrics_bucket_ns = t.bucket_ns;
        for (int m = 0; m < GPU_METRIC_COUNT; m++) {
            const struct gpu_metric_track *k = &t.metric[m];
            if (!k->count)
                continue;
            char name[96];
            gpu_metrics_track_name(&t, m, name, sizeof name);
            perfetto_gpu_counter_track(w, t.gpu_id, metric[m], name);
            for (size_t i = 0; i < k->count && !w->write_failed; i++)
                perfetto_gpu_counter_value(w, t.gpu_id, metric[m], (uint64_t)k->ts[i], k->value[i]);
        }
        gpu_metrics_tracks_release(&t);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -1;
    sqlite3_finalize(gpus);
    return rc;
}
