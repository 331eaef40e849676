-- Capture ranges (docs/trace-format.md, "Capture range"), after correlation (api_id) and before
-- NVTX attribution: the windows of each process that has a cuda_capture row, then every CUDA
-- row outside them deleted, the GPU operations among them counted in
-- meta.cuda_gpu_ops_outside_capture (~0 where the agent paused CUPTI outside the windows,
-- cudaProfilerApi). API calls, syncs, memory events and overheads are kept by their own start;
-- GPU work by its launching call (a kernel launched inside the window is kept even if it runs
-- after it), or by its own start when the call is unknown. 9223372036854775807: no end.

-- The launching call of the GPU work of the processes with a capture range, which decides
-- what is kept (cuda_finish.sql sets it again for every process, to the same call).
UPDATE kernels SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = kernels.process_id
  AND a.correlation_id = kernels.correlation_id ORDER BY a.api, a.start_ns LIMIT 1)
  WHERE process_id IN (SELECT process_id FROM cuda_capture);
UPDATE memcpys SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = memcpys.process_id
  AND a.correlation_id = memcpys.correlation_id ORDER BY a.api, a.start_ns LIMIT 1)
  WHERE process_id IN (SELECT process_id FROM cuda_capture);
UPDATE memsets SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = memsets.process_id
  AND a.correlation_id = memsets.correlation_id ORDER BY a.api, a.start_ns LIMIT 1)
  WHERE process_id IN (SELECT process_id FROM cuda_capture);

CREATE TEMP TABLE capture_gpu_ops AS SELECT (SELECT count(*) FROM kernels) +
  (SELECT count(*) FROM memcpys) + (SELECT count(*) FROM memsets) AS recorded;

CREATE TEMP TABLE capture_windows(process_id INTEGER, start_ns INTEGER, end_ns INTEGER);
INSERT INTO capture_windows SELECT a.process_id, a.end_ns, COALESCE((SELECT min(b.start_ns)
  FROM cuda_api b JOIN strings t ON t.id = b.name_id WHERE b.process_id = a.process_id
  AND t.value IN ('cudaProfilerStop', 'cuProfilerStop') AND b.start_ns >= a.end_ns),
  9223372036854775807)
  FROM cuda_api a JOIN strings s ON s.id = a.name_id JOIN cuda_capture c ON
  c.process_id = a.process_id WHERE c.mode = 'cudaProfilerApi'
  AND s.value IN ('cudaProfilerStart', 'cuProfilerStart');
INSERT INTO capture_windows SELECT r.process_id, r.start_ns, COALESCE(r.end_ns, 9223372036854775807)
  FROM ranges r JOIN strings s ON s.id = r.name_id JOIN cuda_capture c ON
  c.process_id = r.process_id WHERE c.mode = 'nvtx:' || s.value;
INSERT INTO capture_windows SELECT process_id, 0, 9223372036854775807 FROM cuda_capture
  WHERE mode IS NULL OR mode = 'none';
UPDATE capture_windows SET
  start_ns = max(start_ns, COALESCE((SELECT from_ns FROM cuda_capture c WHERE c.process_id =
   capture_windows.process_id), 0)),
  end_ns = min(end_ns, COALESCE((SELECT until_ns FROM cuda_capture c WHERE c.process_id =
   capture_windows.process_id), 9223372036854775807));
DELETE FROM capture_windows WHERE end_ns <= start_ns;

-- the calls that open and close a cudaProfilerApi window stay: they are its edges, and
-- --capture-range-end=repeat finds the instances by them (src/cli/profile_windows.c)
DELETE FROM cuda_api WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT EXISTS
  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_api.process_id
   AND cuda_api.start_ns >= w.start_ns AND cuda_api.start_ns < w.end_ns)
  AND NOT (name_id IN (SELECT id FROM strings WHERE value IN ('cudaProfilerStart',
   'cuProfilerStart', 'cudaProfilerStop', 'cuProfilerStop')) AND process_id IN
   (SELECT process_id FROM cuda_capture WHERE mode = 'cudaProfilerApi'));
DELETE FROM cuda_syncs WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT EXISTS
  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_syncs.process_id
   AND cuda_syncs.start_ns >= w.start_ns AND cuda_syncs.start_ns < w.end_ns);
DELETE FROM cuda_memory WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT EXISTS
  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_memory.process_id
   AND cuda_memory.ts_ns >= w.start_ns AND cuda_memory.ts_ns < w.end_ns);
DELETE FROM cupti_overhead WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT EXISTS
  (SELECT 1 FROM capture_windows w WHERE w.process_id = cupti_overhead.process_id
   AND cupti_overhead.start_ns >= w.start_ns AND cupti_overhead.start_ns < w.end_ns);
DELETE FROM kernels WHERE process_id IN (SELECT process_id FROM cuda_capture) AND CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = kernels.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM capture_windows w WHERE w.process_id = kernels.process_id
   AND kernels.start_ns >= w.start_ns AND kernels.start_ns < w.end_ns) END;
DELETE FROM memcpys WHERE process_id IN (SELECT process_id FROM cuda_capture) AND CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = memcpys.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM capture_windows w WHERE w.process_id = memcpys.process_id
   AND memcpys.start_ns >= w.start_ns AND memcpys.start_ns < w.end_ns) END;
DELETE FROM memsets WHERE process_id IN (SELECT process_id FROM cuda_capture) AND CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = memsets.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM capture_windows w WHERE w.process_id = memsets.process_id
   AND memsets.start_ns >= w.start_ns AND memsets.start_ns < w.end_ns) END;
DROP TABLE capture_windows;

INSERT OR REPLACE INTO meta(key, value) SELECT 'cuda_gpu_ops_outside_capture', recorded -
  ((SELECT count(*) FROM kernels) + (SELECT count(*) FROM memcpys) +
   (SELECT count(*) FROM memsets))
  FROM capture_gpu_ops WHERE EXISTS (SELECT 1 FROM cuda_capture);
DROP TABLE capture_gpu_ops;
