/* The GPU hardware metrics in the Perfetto export: a counter track per recorded metric under
 * each GPU's track (sm_active (%), pcie_rx (GB/s), ...), beside the kernels whose activity
 * they measure. At most PERFETTO_GPU_METRIC_POINTS points a track (gpu_metrics_tracks.h:
 * past that, means over buckets, said in the track's name). */
#include "export/gpu_metrics_tracks.h"
#include "export/perfetto_writer.h"

/* 20 s of 10 kHz samples drawn one by one; ~15 bytes a point: 45 MB a GPU at most. */
#define PERFETTO_GPU_METRIC_POINTS 200000

struct drawing {
    struct perfetto_writer *w;
    unsigned metric[GPU_METRIC_COUNT]; /* the writer's counter numbers */
};

/* A counter track per recorded metric under the GPU's track, and its points. */
static int draw(void *drawing, const struct gpu_metrics_tracks *t)
{
    struct drawing *d = drawing;
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        const struct gpu_metric_track *k = &t->metric[m];
        if (!k->count)
            continue;
        char name[96];
        gpu_metrics_track_name(t, m, name, sizeof name);
        perfetto_gpu_counter_track(d->w, t->gpu_id, d->metric[m], name);
        for (size_t i = 0; i < k->count && !d->w->write_failed; i++)
            perfetto_gpu_counter_value(d->w, t->gpu_id, d->metric[m], (uint64_t)k->ts[i],
                                       k->value[i]);
    }
    return 0;
}

int perfetto_gpu_metrics_counters(struct perfetto_writer *w)
{
    struct drawing d = {.w = w};
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        d.metric[m] = perfetto_gpu_counter_metric(w);
    return gpu_metrics_tracks_each(w->db, PERFETTO_GPU_METRIC_POINTS, draw, &d,
                                   &w->gpu_metrics_bucket_ns);
}
