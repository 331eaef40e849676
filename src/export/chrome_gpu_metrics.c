/* The GPU hardware metrics in the Chrome trace-event export: a counter per recorded metric on
 * each GPU's process row (sm_active (%), pcie_rx (GB/s), ...), one "mean" series each (every
 * value is a sample's average). At most CHROME_GPU_METRIC_POINTS points a counter
 * (gpu_metrics_tracks.h: past that, means over buckets, said in the counter's name). */
#include "export/chrome_writer.h"
#include "export/gpu_metrics_tracks.h"
#include "output/json.h"

#include <errno.h>

/* JSON spends ~90 bytes a point: 2 s of 10 kHz samples, ~27 MB a GPU at most. */
#define CHROME_GPU_METRIC_POINTS 20000

/* The GPU's process row name, as the CUDA rows name it (a GPU without CUDA work has none). */
static int write_gpu_name(struct chrome_writer *w, int64_t gpu)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db,
                           "SELECT 'GPU ' || COALESCE(g.nvml_index, (SELECT min(device) FROM"
                           " process_gpus WHERE gpu_id = g.id), '?') || ': ' ||"
                           " COALESCE(g.name, 'unknown GPU') FROM gpus g WHERE g.id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, gpu);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        chrome_event_begin(w);
        fprintf(w->out,
                "\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": {\"name\": ",
                1000000000LL + (long long)gpu);
        json_write_cstring(w->out, (const char *)sqlite3_column_text(st, 0));
        fputs("}}", w->out);
        step = SQLITE_DONE;
    }
    return chrome_finish(st, step);
}

static void write_track(struct chrome_writer *w, const struct gpu_metrics_tracks *t, int m)
{
    const struct gpu_metric_track *k = &t->metric[m];
    char name[96];
    gpu_metrics_track_name(t, m, name, sizeof name);
    for (size_t i = 0; i < k->count; i++) {
        chrome_event_begin(w);
        fputs("\"name\": ", w->out);
        json_write_cstring(w->out, name);
        fprintf(w->out,
                ", \"ph\": \"C\", \"pid\": %lld, \"ts\": ", 1000000000LL + (long long)t->gpu_id);
        chrome_write_us(w, k->ts[i]);
        fputs(", \"args\": {\"mean\": ", w->out);
        json_write_double(w->out, k->value[i]);
        fputs("}}", w->out);
    }
}

/* The GPU's row name, then its tracks. */
static int draw(void *writer, const struct gpu_metrics_tracks *t)
{
    struct chrome_writer *w = writer;
    if (write_gpu_name(w, t->gpu_id) < 0)
        return -EIO;
    for (int m = 0; m < GPU_METRIC_COUNT; m++)
        write_track(w, t, m);
    return 0;
}

int chrome_gpu_metrics_events(struct chrome_writer *w)
{
    return gpu_metrics_tracks_each(w->db, CHROME_GPU_METRIC_POINTS, draw, w,
                                   &w->gpu_metrics_bucket_ns);
}
