-- lantern merge, for each input attached as `src`: the maps from its strings, domains and
-- categories to the merged database's (merge.c). Strings and domains are shared by value:
-- an input's string is the merged one with the same text; its domain the one with the same
-- name (domain 0, NVTX's default, has none). Processes, threads, ranges and CUDA calls are
-- renumbered by an offset instead (merge.c), GPUs by uuid (merge.c).
DELETE FROM temp.string_map;
DELETE FROM temp.domain_map;
INSERT INTO main.strings(value)
  SELECT value FROM src.strings s
  WHERE NOT EXISTS (SELECT 1 FROM main.strings m WHERE m.value = s.value)
  GROUP BY value ORDER BY min(id);
INSERT INTO temp.string_map(old, new)
  SELECT s.id, (SELECT min(m.id) FROM main.strings m WHERE m.value = s.value) FROM src.strings s;
INSERT INTO main.domains(id, name_id)
  SELECT CASE WHEN d.name_id IS NULL THEN d.id END, sm.new
  FROM src.domains d LEFT JOIN temp.string_map sm ON sm.old = d.name_id
  WHERE NOT EXISTS (SELECT 1 FROM main.domains m WHERE m.name_id IS sm.new
                    AND (sm.new IS NOT NULL OR m.id = d.id))
  ORDER BY d.id;
INSERT INTO temp.domain_map(old, new)
  SELECT d.id, CASE WHEN d.name_id IS NULL THEN d.id
    ELSE (SELECT min(m.id) FROM main.domains m WHERE m.name_id = sm.new) END
  FROM src.domains d LEFT JOIN temp.string_map sm ON sm.old = d.name_id;
INSERT OR IGNORE INTO main.categories(domain_id, category, name_id)
  SELECT dm.new, c.category, sm.new FROM src.categories c
  JOIN temp.domain_map dm ON dm.old = c.domain_id
  LEFT JOIN temp.string_map sm ON sm.old = c.name_id;
