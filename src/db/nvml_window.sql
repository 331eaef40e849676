-- lantern profile's start/stop windows (docs/long-runs.md): the GPU samples taken inside them,
-- and the energy windows that began inside them.
DELETE FROM gpu_samples WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE gpu_samples.ts_ns >= w.start_ns AND gpu_samples.ts_ns < w.end_ns);
DELETE FROM energy_windows WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE energy_windows.start_ns >= w.start_ns AND energy_windows.start_ns < w.end_ns);
