-- lantern profile's start/stop windows (docs/long-runs.md): the samples that began inside them.
DELETE FROM gpu_metric_samples WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE gpu_metric_samples.start_ns >= w.start_ns AND gpu_metric_samples.start_ns < w.end_ns);
