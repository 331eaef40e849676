-- After the rows of an older database were copied into this schema (upgrade.c): what the
-- columns added since hold where an import by this Lantern can be worked out from the rows.
-- :from is the old schema version.

-- schema 2 added processes.name (from the command line; lantern_process_name() is the
-- importer's own rule, process_name.c) and parent_id (from ppid alone: older databases have no
-- ancestors)
UPDATE processes SET name = lantern_process_name(cmdline) WHERE :from < 2 AND name IS NULL;
UPDATE processes SET parent_id = (SELECT p.id FROM processes p WHERE p.pid = processes.ppid
   AND p.id != processes.id AND coalesce(p.start_ns, 0) <= coalesce(processes.start_ns, 0)
   ORDER BY p.start_ns DESC LIMIT 1)
 WHERE :from < 2 AND parent_id IS NULL;

-- schema 7 added only tables (CPU sampling): they start empty, nothing to fill
-- schema 8 added cpu_sampling.paused_samples and the osrt backtraces (osrt_calls.backtrace_id,
-- osrt.backtrace_threshold_ns, backtrace_depth): not known before (NULL)
-- schema 9 added cpu_thread_states (empty: no thread states before) and cpu_sampling.switches,
-- thread_states: not known before (NULL)

UPDATE meta SET value = :to WHERE key = 'schema_version';
INSERT OR REPLACE INTO meta(key, value) VALUES('upgraded_from', :from);
