-- lantern profile's start/stop windows (docs/long-runs.md): the CPU samples and GIL waits
-- taken inside them, the thread states cut to them; each process's sample count is then its
-- windows' (its lost samples, threads, switches and the writer's time stay the whole run's, as
-- the sampler totals them at the process's end).
DELETE FROM cpu_samples WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_samples.ts_ns >= w.start_ns AND cpu_samples.ts_ns < w.end_ns);
DELETE FROM cpu_gil_waits WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_gil_waits.ts_ns >= w.start_ns AND cpu_gil_waits.ts_ns < w.end_ns);
-- a thread state (blocked, preempted) is kept where it overlaps a window, cut to the first it
-- overlaps, its time in the state cut in proportion (a pause ends the agent's intervals, so a
-- row does not span two windows)
DELETE FROM cpu_thread_states WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE w.start_ns < cpu_thread_states.end_ns AND w.end_ns > cpu_thread_states.start_ns);
UPDATE cpu_thread_states SET (start_ns, end_ns, state_ns) = (
  SELECT max(c.start_ns, w.start_ns), min(c.end_ns, w.end_ns),
         c.state_ns * (min(c.end_ns, w.end_ns) - max(c.start_ns, w.start_ns)) / (c.end_ns - c.start_ns)
  FROM cpu_thread_states c, temp.import_windows w
  WHERE c.rowid = cpu_thread_states.rowid
    AND w.start_ns < c.end_ns AND w.end_ns > c.start_ns ORDER BY w.start_ns LIMIT 1)
 WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cpu_thread_states.start_ns >= w.start_ns AND cpu_thread_states.end_ns <= w.end_ns);
UPDATE cpu_sampling SET samples = (SELECT count(*) FROM cpu_samples s
  JOIN threads t ON t.id = s.thread_id WHERE t.process_id = cpu_sampling.process_id)
 WHERE status = 'on';
