-- lantern profile's start/stop windows (docs/long-runs.md), after the capture range: CUDA API
-- calls, syncs, memory events and overheads are kept by their own start; GPU work by its
-- launching call (launched inside a window, kept even if it ran after the stop), or by its own
-- start when the call is unknown.
DELETE FROM cuda_api WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cuda_api.start_ns >= w.start_ns AND cuda_api.start_ns < w.end_ns);
DELETE FROM cuda_syncs WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cuda_syncs.start_ns >= w.start_ns AND cuda_syncs.start_ns < w.end_ns);
DELETE FROM cuda_memory WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cuda_memory.ts_ns >= w.start_ns AND cuda_memory.ts_ns < w.end_ns);
DELETE FROM cupti_overhead WHERE NOT EXISTS (SELECT 1 FROM temp.import_windows w
  WHERE cupti_overhead.start_ns >= w.start_ns AND cupti_overhead.start_ns < w.end_ns);
DELETE FROM kernels WHERE CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = kernels.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM temp.import_windows w
   WHERE kernels.start_ns >= w.start_ns AND kernels.start_ns < w.end_ns) END;
DELETE FROM memcpys WHERE CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = memcpys.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM temp.import_windows w
   WHERE memcpys.start_ns >= w.start_ns AND memcpys.start_ns < w.end_ns) END;
DELETE FROM memsets WHERE CASE
  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = memsets.api_id)
  ELSE NOT EXISTS (SELECT 1 FROM temp.import_windows w
   WHERE memsets.start_ns >= w.start_ns AND memsets.start_ns < w.end_ns) END;
