-- lantern profile's start/stop windows (docs/long-runs.md): the CPU samples and GIL waits
-- taken inside them; each process's sample count is then its windows' (its lost samples,
-- threads and the writer's time stay the whole run's, as the sampler totals them at the
-- process's end).
DELETE FROM cpu_samples WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_samples.ts_ns >= w.start_ns AND cpu_samples.ts_ns < w.end_ns);
DELETE FROM cpu_gil_waits WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_gil_waits.ts_ns >= w.start_ns AND cpu_gil_waits.ts_ns < w.end_ns);
UPDATE cpu_sampling SET samples = (SELECT count(*) FROM cpu_samples s
  JOIN threads t ON t.id = s.thread_id WHERE t.process_id = cpu_sampling.process_id)
 WHERE status = 'on';
