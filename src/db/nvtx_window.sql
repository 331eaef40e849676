-- lantern profile's start/stop windows (docs/long-runs.md): the NVTX rows of one database are
-- those that began inside its windows (temp.import_windows, [start_ns, end_ns)). A range is
-- kept by its start: one that began inside and ended after the stop is kept whole (the agent,
-- paused, did not record its end: it is then unended).
DELETE FROM ranges WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE ranges.start_ns >= w.start_ns AND ranges.start_ns < w.end_ns);
DELETE FROM marks WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE marks.ts_ns >= w.start_ns AND marks.ts_ns < w.end_ns);
DELETE FROM nvtx_payloads WHERE (range_id IS NOT NULL AND range_id NOT IN (SELECT id FROM ranges))
  OR (mark_id IS NOT NULL AND mark_id NOT IN (SELECT id FROM marks));
DELETE FROM nvtx_payload_values WHERE payload_id NOT IN (SELECT id FROM nvtx_payloads);
