-- lantern profile's start/stop windows (docs/long-runs.md): the CPU energy samples taken inside
-- them.
DELETE FROM cpu_energy_samples WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_energy_samples.ts_ns >= w.start_ns AND cpu_energy_samples.ts_ns < w.end_ns);
