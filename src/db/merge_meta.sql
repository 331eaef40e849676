-- lantern merge, after every input: the merged database's meta rows from each input's,
-- kept in temp.input_meta(input, key, value) with temp.inputs(input, path, host, shift_ns).
-- The first input's rows stand unless combined here: times are the union on the first
-- input's timeline, counts are summed, hosts and trace lists are the distinct ones.
INSERT OR REPLACE INTO main.meta(key, value) SELECT key, value FROM temp.input_meta WHERE input = 0;
INSERT OR REPLACE INTO main.meta(key, value) VALUES
  ('start_ns', (SELECT min(m.value + i.shift_ns) FROM temp.input_meta m
                JOIN temp.inputs i USING(input) WHERE m.key = 'start_ns')),
  ('end_ns', (SELECT max(m.value + i.shift_ns) FROM temp.input_meta m
              JOIN temp.inputs i USING(input) WHERE m.key = 'end_ns')),
  ('host', (SELECT group_concat(host, ',') FROM
            (SELECT DISTINCT host FROM temp.inputs WHERE host IS NOT NULL ORDER BY input))),
  ('dropped_events', (SELECT total(value) FROM temp.input_meta WHERE key = 'dropped_events')),
  ('import_warnings', (SELECT total(value) FROM temp.input_meta WHERE key = 'import_warnings')),
  ('truncated_strings', (SELECT total(value) FROM temp.input_meta WHERE key = 'truncated_strings')),
  ('exit_status', (SELECT coalesce(max(value), min(value)) FROM temp.input_meta
                   WHERE key = 'exit_status' AND value <> 0)),
  ('merged_inputs', (SELECT group_concat(path || ' host=' || coalesce(host, '?') || ' shift_ns='
                     || shift_ns, char(10)) FROM (SELECT * FROM temp.inputs ORDER BY input)));
-- exit_status: 0 when every input's was 0 (or absent)
UPDATE main.meta SET value = (SELECT value FROM temp.input_meta WHERE input = 0 AND key = 'exit_status')
  WHERE key = 'exit_status' AND value IS NULL;
UPDATE main.meta SET value = CAST(value AS INTEGER)
  WHERE key IN ('dropped_events', 'import_warnings', 'truncated_strings');
-- the wall-clock time of the merged start: the first input's wall<->monotonic offset
UPDATE main.meta SET value = (SELECT w.value - s.value FROM temp.input_meta w, temp.input_meta s
    WHERE w.input = 0 AND s.input = 0 AND w.key = 'start_wall_ns' AND s.key = 'start_ns'
    AND w.value > 0) + (SELECT value FROM main.meta WHERE key = 'start_ns')
  WHERE key = 'start_wall_ns' AND value > 0;
-- trace: every input's sources, once each
WITH RECURSIVE split(input, n, item, rest) AS (
    SELECT input, 0, NULL, value || ',' FROM temp.input_meta WHERE key = 'trace'
    UNION ALL SELECT input, n + 1, substr(rest, 1, instr(rest, ',') - 1),
      substr(rest, instr(rest, ',') + 1) FROM split WHERE rest <> '')
  INSERT OR REPLACE INTO main.meta(key, value)
  SELECT 'trace', group_concat(item, ',') FROM (SELECT item FROM split WHERE item <> ''
    GROUP BY item ORDER BY min(input * 1000000 + n));
