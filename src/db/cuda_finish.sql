-- The CUDA importer's last pass (import_cuda.c), after the NVTX attribution of API calls and
-- the demangling: launching calls and attribution of GPU work, GPUs, streams, names. Run
-- once per import (kernels move from temp.kernels to kernels).
-- Parameters (bound from src/trace/format.h's TRACE_RESOURCE_* by import_cuda.c):
--   :resource_cu_context, :resource_cu_stream, :resource_cudart_stream

-- GPU work's launching call: the runtime call when there is one (the driver call it makes
-- internally shares its correlation id), else the driver call (runtime sorts first by api),
-- the earliest, then the first written; its NVTX range (the call's); its GPU (CUDA ordinal of
-- the process -> gpus.id); a kernel's demangled name (import_demangle.c's temp.demangled). The
-- launching call of each correlation is found once, in one walk over the calls in rowid order
-- (nearly in correlation order: the b-tree grows at its end), rather than with a sorted lookup
-- per row (temp.launch is left to the connection's end: dropping it walks and frees its pages,
-- 0.6 s for 5 M calls). Kernels are written once, complete, from temp.kernels (import_cuda.c);
-- copies and memsets, a few, in one pass over each table (each pass rewrites every row).
CREATE TEMP TABLE launch(process_id INTEGER NOT NULL, correlation_id INTEGER NOT NULL,
  api INTEGER, start_ns INTEGER, api_id INTEGER, nvtx_range_id INTEGER,
  PRIMARY KEY(process_id, correlation_id)) WITHOUT ROWID;
INSERT INTO temp.launch SELECT process_id, correlation_id, api, start_ns, id, nvtx_range_id
  FROM cuda_api WHERE correlation_id IS NOT NULL ORDER BY rowid
  ON CONFLICT DO UPDATE SET api = excluded.api, start_ns = excluded.start_ns,
  api_id = excluded.api_id, nvtx_range_id = excluded.nvtx_range_id
  WHERE (excluded.api, excluded.start_ns) < (api, start_ns);
-- Kernels in id order, main.kernels' columns in its order.
INSERT INTO main.kernels SELECT k.id, k.process_id, (SELECT gpu_id FROM process_gpus p
  WHERE p.process_id = k.process_id AND p.device = k.device), k.device, k.context, k.stream,
  k.correlation_id, k.start_ns, k.end_ns, k.name_id, coalesce(k.demangled_id, d.demangled_id),
  k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.cluster_x, k.cluster_y,
  k.cluster_z, k.regs_per_thread, k.static_smem, k.dynamic_smem, k.local_mem_per_thread,
  k.launch_type, k.graph_id, k.graph_node_id, a.api_id, a.nvtx_range_id
  FROM temp.kernels k LEFT JOIN temp.launch a ON a.process_id = k.process_id
  AND a.correlation_id = k.correlation_id LEFT JOIN temp.demangled d ON d.name_id = k.name_id
  ORDER BY k.id;
-- Out of the way of every later unqualified name, but not dropped: DROP walks and frees each of
-- its pages (1.4 s for 5 M kernels), while the temporary database goes with the connection.
ALTER TABLE temp.kernels RENAME TO kernels_written;
DROP TABLE temp.demangled;
UPDATE memcpys SET (api_id, nvtx_range_id) = (SELECT a.api_id, a.nvtx_range_id FROM
  temp.launch a WHERE a.process_id = memcpys.process_id
  AND a.correlation_id = memcpys.correlation_id),
  gpu_id = (SELECT gpu_id FROM process_gpus p WHERE p.process_id = memcpys.process_id
  AND p.device = memcpys.device);
UPDATE memsets SET (api_id, nvtx_range_id) = (SELECT a.api_id, a.nvtx_range_id FROM
  temp.launch a WHERE a.process_id = memsets.process_id
  AND a.correlation_id = memsets.correlation_id),
  gpu_id = (SELECT gpu_id FROM process_gpus p WHERE p.process_id = memsets.process_id
  AND p.device = memsets.device);
UPDATE cuda_syncs SET thread_id = (SELECT a.thread_id FROM cuda_api a WHERE
  a.process_id = cuda_syncs.process_id AND a.correlation_id = cuda_syncs.correlation_id
  ORDER BY a.api LIMIT 1) WHERE thread_id IS NULL;
UPDATE cuda_memory SET gpu_id = (SELECT gpu_id FROM process_gpus p WHERE
  p.process_id = cuda_memory.process_id AND p.device = cuda_memory.device);
UPDATE cuda_contexts SET gpu_id = (SELECT gpu_id FROM process_gpus p WHERE
  p.process_id = cuda_contexts.process_id AND p.device = cuda_contexts.device);

-- Streams CUPTI never described (the NULL stream, streams created before tracing): one row
-- for every stream that did work.
INSERT INTO cuda_streams(process_id, context, stream, is_default)
  SELECT DISTINCT u.process_id, u.context, u.stream, u.stream = c.null_stream FROM
  (SELECT process_id, context, stream FROM kernels UNION SELECT process_id, context, stream
   FROM memcpys UNION SELECT process_id, context, stream FROM memsets) u
  LEFT JOIN cuda_contexts c ON c.process_id = u.process_id AND c.context = u.context
  WHERE NOT EXISTS (SELECT 1 FROM cuda_streams s WHERE s.process_id = u.process_id
   AND s.context = u.context AND s.stream = u.stream);
UPDATE cuda_streams SET gpu_id = (SELECT gpu_id FROM cuda_contexts c WHERE
  c.process_id = cuda_streams.process_id AND c.context = cuda_streams.context),
  handle = (SELECT h.handle FROM cuda_stream_handles h WHERE h.process_id =
  cuda_streams.process_id AND h.context = cuda_streams.context AND h.stream =
  cuda_streams.stream);
UPDATE cuda_contexts SET handle = (SELECT h.handle FROM cuda_context_handles h WHERE
  h.process_id = cuda_contexts.process_id AND h.context = cuda_contexts.context);

-- NVTX names: the latest name given to the handle.
UPDATE cuda_streams SET name_id = (SELECT n.name_id FROM cuda_resource_names n WHERE
  n.process_id = cuda_streams.process_id
  AND n.kind IN (:resource_cu_stream, :resource_cudart_stream)
  AND n.handle = cuda_streams.handle ORDER BY n.rowid DESC LIMIT 1) WHERE handle IS NOT NULL;
UPDATE cuda_contexts SET name_id = (SELECT n.name_id FROM cuda_resource_names n WHERE
  n.process_id = cuda_contexts.process_id AND n.kind = :resource_cu_context
  AND n.handle = cuda_contexts.handle ORDER BY n.rowid DESC LIMIT 1) WHERE handle IS NOT NULL;
