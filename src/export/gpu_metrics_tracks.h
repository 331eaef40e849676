/* The GPU hardware metrics as the timeline exports draw them (perfetto_gpu_metrics.c,
 * chrome_gpu_metrics.c share it): per GPU and recorded metric, the points of one counter
 * track. 10 kHz x 15 metrics is 9 million values a minute, more than a viewer can hold, so a
 * track gets at most max_points: past that, each point is the time-weighted mean of the samples
 * starting in one bucket of bucket_ns (the track's name says so, and `lantern export` prints
 * it). Where no sample measured the GPU (a gap: samples lost or not started) the track reads 0
 * from the last sample's end; a value equal to the one before is not repeated (a counter holds
 * its value until the next point). docs/export.md, "GPU metrics". */
#ifndef LANTERN_EXPORT_GPU_METRICS_TRACKS_H
#define LANTERN_EXPORT_GPU_METRICS_TRACKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/gpu_metrics.h"

struct gpu_metric_track {
    int64_t *ts;   /* CLOCK_MONOTONIC ns */
    double *value; /* in the track's unit: % or GB/s */
    size_t count;  /* 0: the GPU has no sample of the metric */
};

struct gpu_metrics_tracks {
    int64_t gpu_id;
    int64_t bucket_ns; /* 0: a point per sample; else the width each point is the mean over */
    struct gpu_metric_track metric[GPU_METRIC_COUNT];
};

/* Builds the tracks of each GPU with metric samples in turn, in gpus.id order, each track of
 * at most max_points points (plus two per gap), and hands them to draw(arg, tracks);
 * *widest_bucket_ns becomes the widest bucket, if wider. Returns 0, or -EIO: SQLite's error (the
 * database's message says why) or a draw that returned nonzero; -ENOMEM: out of memory. */
int gpu_metrics_tracks_each(sqlite3 *db, size_t max_points,
                            int (*draw)(void *arg, const struct gpu_metrics_tracks *t), void *arg,
                            int64_t *widest_bucket_ns);

/* The track's name: "sm_active (%)", "pcie_rx (GB/s)", and when thinned
 * "sm_active (%, mean per 6.4 ms)". */
void gpu_metrics_track_name(const struct gpu_metrics_tracks *t, int metric, char *out, size_t size);

#endif
