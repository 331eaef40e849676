-- The CUDA importer's first pass after all files (import_cuda.c): waits inferred from the calls
-- that wait, and launch backtraces. (The launching call of each piece of GPU work is set with
-- the rest of its row in cuda_finish.sql's one pass over each table: a pass over kernels
-- rewrites every row.)
-- Parameters (bound from src/trace/format.h's enumerations by import_cuda.c):
--   :api_runtime, :api_driver      cuda_api.api of a runtime / driver call
--   :sync_event, :sync_stream_wait_event, :sync_stream, :sync_context   cuda_syncs.sync_kind

-- the names src/db/indexes.sql uses: reports look calls up by correlation too; the NVTX
-- attribution walks each thread's calls in start order (import_cuda.c), in this index's order
CREATE INDEX IF NOT EXISTS cuda_api_by_corr ON cuda_api(process_id, correlation_id);
CREATE INDEX IF NOT EXISTS cuda_api_by_thread ON cuda_api(thread_id, start_ns);

-- Waits from the calls that wait, for a process recorded without CUPTI's SYNCHRONIZATION
-- records (the agent's default, for their cost): kind by name, the runtime call only where the
-- driver call inside it shares its correlation; context, stream and event unknown.
-- (The kind is worked out once per name, from the few strings that are waits, rather than with
-- five LIKEs on every call: the calls are still read in their order, so the rows are the same.)
INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, correlation_id, start_ns, end_ns)
  WITH waits AS MATERIALIZED (SELECT id, CASE
   WHEN value LIKE '%StreamWaitEvent%' THEN :sync_stream_wait_event
   WHEN value LIKE '%EventSynchronize%' THEN :sync_event
   WHEN value LIKE '%StreamSynchronize%' THEN :sync_stream
   WHEN value LIKE 'cudaDeviceSynchronize%' OR value LIKE 'cuCtxSynchronize%'
    THEN :sync_context END AS kind FROM strings WHERE kind IS NOT NULL),
  -- (the calls that wait first: the tests below would otherwise run on every call)
  waiting AS MATERIALIZED (SELECT a.process_id, a.thread_id, w.kind, a.correlation_id,
   a.start_ns, a.end_ns, a.api FROM cuda_api a CROSS JOIN waits w ON w.id = a.name_id)
  SELECT a.process_id, a.thread_id, a.kind, a.correlation_id, a.start_ns, a.end_ns
  FROM waiting a WHERE a.process_id NOT IN (SELECT process_id FROM cuda_syncs)
  AND NOT (a.api = :api_driver AND EXISTS (SELECT 1 FROM cuda_api r WHERE r.process_id =
   a.process_id AND r.correlation_id = a.correlation_id AND r.api = :api_runtime));

-- Every call with the launch's correlation (runtime and the driver call inside it).
CREATE INDEX IF NOT EXISTS cuda_backtraces_correlation ON
  cuda_backtraces(process_id, correlation_id);
UPDATE cuda_api SET backtrace_id = (SELECT b.backtrace_id FROM cuda_backtraces b WHERE
  b.process_id = cuda_api.process_id AND b.correlation_id = cuda_api.correlation_id)
  WHERE EXISTS (SELECT 1 FROM cuda_backtraces) -- once: no backtraces, no walk over the calls
  AND EXISTS (SELECT 1 FROM cuda_backtraces b WHERE b.process_id = cuda_api.process_id
  AND b.correlation_id = cuda_api.correlation_id);
