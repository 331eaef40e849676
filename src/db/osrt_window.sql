-- lantern profile's start/stop windows (docs/long-runs.md): the OS runtime calls that began
-- inside them; each process's kept count is then its windows' (seen and lost stay the whole
-- run's, as the agent totals them at the process's end).
DELETE FROM osrt_calls WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE osrt_calls.start_ns >= w.start_ns AND osrt_calls.start_ns < w.end_ns);
UPDATE osrt SET kept = (SELECT count(*) FROM osrt_calls c
  JOIN threads t ON t.id = c.thread_id WHERE t.process_id = osrt.process_id);
