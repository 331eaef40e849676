-- The Lantern database schema (SQLite). docs/schema.md explains every table and column;
-- change both together and bump meta.schema_version. Times are nanoseconds on the
-- session's clock (CLOCK_MONOTONIC of the host); durations are end_ns - start_ns.
-- Names are interned: *_id columns ending in a string point at strings(id).

CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
-- keys: schema_version, lantern_version, command, host, start_wall_ns, start_ns, end_ns,
--       clock, trace (e.g. 'nvtx,cuda,nvml'), exit_status, dropped_events, import_warnings

CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE processes(
  id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, ppid INTEGER, exe TEXT, cmdline TEXT,
  host TEXT, start_ns INTEGER, end_ns INTEGER,
  clean_exit INTEGER NOT NULL DEFAULT 0,      -- 0: killed or crashed; events after the last flush lost
  dropped_events INTEGER NOT NULL DEFAULT 0,  -- records the agent could not buffer (drop-and-count)
  unbalanced_pops INTEGER NOT NULL DEFAULT 0,
  raw_file TEXT, import_warning TEXT,         -- import_warning: damage found in the raw file
  cuda_rejected_records INTEGER NOT NULL DEFAULT 0,  -- CUPTI records with zero or inverted times
  name TEXT,                                  -- short name from cmdline: 'train.py', not 'python3'
  rank INTEGER, local_rank INTEGER,           -- from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...
  rank_variable TEXT,                         -- the variable the rank came from
  parent_id INTEGER REFERENCES processes(id),  -- the traced process that started this one
  end_record INTEGER NOT NULL DEFAULT 1,      -- 0: no end in its raw file (killed before the
                                              -- agent wrote it, or running when imported)
  salvaged INTEGER NOT NULL DEFAULT 0,        -- 1: events it had buffered when it ended were
                                              -- appended from its buffer file afterwards
  exit_status INTEGER,                        -- as the launcher reaped it: exit(N)'s N, or
  exit_signal INTEGER,                        -- the signal that ended it (both NULL: not seen)
  core_dumped INTEGER);                       -- 1: that signal dumped core (NULL: not seen)

-- What the importer could not import (or had to set right) in a raw file, one row per file
-- and reason: malformed records, duplicated or misordered chunks. Reports show them in their
-- "Lost events" line.
CREATE TABLE import_losses(
  process_id INTEGER REFERENCES processes(id),  -- NULL: the launcher's own file
  raw_file TEXT NOT NULL, count INTEGER NOT NULL, reason TEXT NOT NULL);

CREATE TABLE threads(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL REFERENCES processes(id),
  tid INTEGER NOT NULL, name_id INTEGER REFERENCES strings(id), start_ns INTEGER,
  dropped_events INTEGER NOT NULL DEFAULT 0,
  os_name_id INTEGER REFERENCES strings(id),      -- the OS name (comm) last read
  python_name_id INTEGER REFERENCES strings(id)); -- threading.Thread.name
-- a thread's name as shown: coalesce(name_id (nvtxNameOsThread), python_name_id, os_name_id)

CREATE TABLE domains(id INTEGER PRIMARY KEY, name_id INTEGER REFERENCES strings(id));
-- domain 0 is NVTX's default domain (name NULL); other domains are merged by name across processes

CREATE TABLE categories(
  domain_id INTEGER NOT NULL, category INTEGER NOT NULL, name_id INTEGER REFERENCES strings(id),
  PRIMARY KEY(domain_id, category)) WITHOUT ROWID;

CREATE TABLE ranges(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, domain_id INTEGER NOT NULL DEFAULT 0,
  name_id INTEGER REFERENCES strings(id), category INTEGER NOT NULL DEFAULT 0,
  color INTEGER,                               -- 0xAARRGGBB, NULL when none given
  payload,                                     -- INTEGER or REAL as given, NULL when none
  style INTEGER NOT NULL,                      -- 0 push/pop (nested, per thread), 1 start/end
  depth INTEGER,                               -- push/pop: 0-based nesting level
  parent_id INTEGER,                           -- push/pop: enclosing range on the same thread and domain
  start_thread_id INTEGER NOT NULL REFERENCES threads(id),
  end_thread_id INTEGER REFERENCES threads(id),
  start_ns INTEGER NOT NULL, end_ns INTEGER);  -- end_ns NULL: never ended (program exited or was killed)

CREATE TABLE marks(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,
  domain_id INTEGER NOT NULL DEFAULT 0, name_id INTEGER, category INTEGER NOT NULL DEFAULT 0,
  color INTEGER, payload, ts_ns INTEGER NOT NULL);

-- NVTX extended payloads (the payload extension: NCCL's message sizes, ranks, reduction ops).
-- Schemas and enumerations as each process registered them; every payload of a range or mark
-- with its bytes; and the values decoded from them through their schema.
CREATE TABLE nvtx_payload_schemas(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, domain_id INTEGER NOT NULL,
  schema_id INTEGER NOT NULL,                  -- the program's id (static ids from 2^24)
  is_enum INTEGER NOT NULL,                    -- 0 a payload schema, 1 an enumeration
  name_id INTEGER,                             -- NCCL: 'AllReduce', ...; NULL: none
  schema_type INTEGER,                         -- NVTX_PAYLOAD_SCHEMA_TYPE_* (1 static)
  flags INTEGER, static_size INTEGER,          -- bytes (enumerations: a value's)
  pack_align INTEGER, entry_count INTEGER);    -- entries (values) registered
CREATE TABLE nvtx_payload_entries(             -- a schema's entries, in order
  schema_row INTEGER NOT NULL,                 -- nvtx_payload_schemas.id
  idx INTEGER NOT NULL, name_id INTEGER,       -- 'Message size [bytes]', ...
  description_id INTEGER,
  type INTEGER,                                -- NVTX_PAYLOAD_ENTRY_TYPE_*, or an enum/schema id
  flags INTEGER, array_length INTEGER,
  byte_offset INTEGER,                         -- as registered (0 after the first: natural)
  PRIMARY KEY(schema_row, idx)) WITHOUT ROWID;
CREATE TABLE nvtx_payload_enum_values(         -- an enumeration's values
  schema_row INTEGER NOT NULL, idx INTEGER NOT NULL, name_id INTEGER, value INTEGER,
  is_flag INTEGER, PRIMARY KEY(schema_row, idx)) WITHOUT ROWID;
CREATE TABLE nvtx_payloads(                    -- one per nvtxPayloadData_t of an event
  id INTEGER PRIMARY KEY,
  range_id INTEGER, mark_id INTEGER,           -- the range (push, pop, start, end) or mark
  idx INTEGER NOT NULL,                        -- its place in the event's array
  count INTEGER NOT NULL,                      -- payloads the event had (8 at most recorded)
  schema_id INTEGER,                           -- as given
  schema_row INTEGER,                          -- its nvtx_payload_schemas row; NULL: unknown
  size INTEGER,                                -- bytes the program gave
  data BLOB,                                   -- the bytes recorded (the first 256 of an event)
  truncated INTEGER NOT NULL);                 -- 1: data holds fewer bytes than size
CREATE TABLE nvtx_payload_values(              -- each payload decoded through its schema
  payload_id INTEGER NOT NULL, range_id INTEGER, mark_id INTEGER,
  entry_idx INTEGER NOT NULL,                  -- nvtx_payload_entries.idx
  array_idx INTEGER,                           -- a fixed array's element; NULL: a scalar
  name_id INTEGER,                             -- the entry's name
  value,                                       -- INTEGER, REAL or TEXT
  enum_name_id INTEGER);                       -- an enumeration's value: its name ('Sum')

-- ---- CUDA (issue: CUDA tracing through CUPTI) ----------------------------------------------

CREATE TABLE gpus(                              -- one row per physical GPU, merged by uuid
  id INTEGER PRIMARY KEY, uuid TEXT UNIQUE, name TEXT, nvml_index INTEGER, pci_bus_id TEXT,
  cc_major INTEGER, cc_minor INTEGER, sm_count INTEGER, memory_bytes INTEGER,
  sm_clock_khz INTEGER, memory_clock_khz INTEGER, memory_bus_bits INTEGER, l2_bytes INTEGER,
  max_threads_per_sm INTEGER, max_regs_per_sm INTEGER, max_smem_per_sm INTEGER,
  max_blocks_per_sm INTEGER, regs_per_block INTEGER, smem_per_block_optin INTEGER,
  peak_fp32_flops REAL, peak_fp16_flops REAL, peak_bf16_flops REAL, peak_tf32_flops REAL,
  peak_fp64_flops REAL, peak_dram_bytes_per_s REAL, power_limit_mw INTEGER);

CREATE TABLE process_gpus(process_id INTEGER, device INTEGER, gpu_id INTEGER,
  PRIMARY KEY(process_id, device)) WITHOUT ROWID;  -- CUDA ordinal in that process -> gpus.id

CREATE TABLE cuda_contexts(id INTEGER PRIMARY KEY, process_id INTEGER, context INTEGER,
  gpu_id INTEGER, name_id INTEGER,
  device INTEGER, null_stream INTEGER,          -- CUDA ordinal; CUPTI id of its NULL stream
  handle INTEGER);                              -- the CUcontext as the program saw it
CREATE TABLE cuda_streams(id INTEGER PRIMARY KEY, process_id INTEGER, context INTEGER,
  stream INTEGER, gpu_id INTEGER, priority INTEGER, is_default INTEGER, name_id INTEGER,
  handle INTEGER);                              -- the CUstream as the program saw it (NVTX names it)
-- context and stream: CUPTI's ids within the process
CREATE TABLE cuda_stream_handles(process_id INTEGER, handle INTEGER, context INTEGER,
  stream INTEGER);                              -- CUstream -> CUPTI ids, recorded at creation
CREATE TABLE cuda_context_handles(process_id INTEGER, handle INTEGER, context INTEGER);
CREATE TABLE cuda_resource_names(process_id INTEGER, kind INTEGER, handle INTEGER,
  name_id INTEGER);                             -- nvtxNameCuStream & co (kind: TRACE_RESOURCE_*)

CREATE TABLE cuda_api(                          -- CPU side of CUDA runtime/driver calls
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,
  api INTEGER NOT NULL,                         -- 0 runtime, 1 driver
  cbid INTEGER, name_id INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  return_code INTEGER, correlation_id INTEGER,
  nvtx_range_id INTEGER,                        -- innermost push/pop range open on the thread
  backtrace_id INTEGER);                        -- strings: who made the call (--python-backtrace)
CREATE TABLE cuda_backtraces(process_id INTEGER, correlation_id INTEGER,
  backtrace_id INTEGER);                        -- as recorded, joined to cuda_api at import

CREATE TABLE kernels(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, gpu_id INTEGER, device INTEGER,
  context INTEGER, stream INTEGER, correlation_id INTEGER,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  name_id INTEGER,                              -- mangled name as CUPTI gives it
  demangled_id INTEGER,
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
  cluster_x INTEGER, cluster_y INTEGER, cluster_z INTEGER,
  regs_per_thread INTEGER, static_smem INTEGER, dynamic_smem INTEGER, local_mem_per_thread INTEGER,
  launch_type INTEGER,                          -- 0 regular, 1 cooperative single device, 2 multi device, 3 cluster
  graph_id INTEGER, graph_node_id INTEGER,
  api_id INTEGER,                               -- cuda_api row of the launching call
  nvtx_range_id INTEGER);                       -- innermost push/pop range of the launching thread at launch

CREATE TABLE memcpys(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, gpu_id INTEGER, device INTEGER,
  context INTEGER, stream INTEGER, correlation_id INTEGER,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  copy_kind TEXT,                               -- 'HtoD','DtoH','DtoD','HtoH','PtoP','HtoA',...
  bytes INTEGER NOT NULL,
  src_kind TEXT, dst_kind TEXT,                 -- 'pageable','pinned','device','managed','array'
  is_async INTEGER, src_device INTEGER, dst_device INTEGER, graph_node_id INTEGER,
  api_id INTEGER, nvtx_range_id INTEGER);

CREATE TABLE memsets(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, gpu_id INTEGER, device INTEGER,
  context INTEGER, stream INTEGER, correlation_id INTEGER,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, bytes INTEGER NOT NULL, value INTEGER,
  mem_kind TEXT, is_async INTEGER, graph_node_id INTEGER, api_id INTEGER, nvtx_range_id INTEGER);

CREATE TABLE cuda_syncs(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, thread_id INTEGER,
  sync_kind TEXT,                               -- 'event','stream_wait_event','stream','context'
  context INTEGER, stream INTEGER, event INTEGER, correlation_id INTEGER,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);

CREATE TABLE cuda_memory(                       -- allocations and frees, for memory in use over time
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL, gpu_id INTEGER, device INTEGER,
  op TEXT NOT NULL,                             -- 'alloc' or 'free'
  mem_kind TEXT,                                -- 'device','pinned','managed','pageable',...
  address INTEGER, bytes INTEGER NOT NULL, ts_ns INTEGER NOT NULL, stream INTEGER,
  correlation_id INTEGER);

CREATE TABLE cuda_capture(process_id INTEGER PRIMARY KEY,  -- lantern profile --capture-range
  mode TEXT, from_ns INTEGER, until_ns INTEGER);            -- and --delay/--duration (NULL: open)

CREATE TABLE cupti_overhead(id INTEGER PRIMARY KEY, process_id INTEGER, thread_id INTEGER,
  kind TEXT, start_ns INTEGER, end_ns INTEGER);

-- ---- GPU counters and energy (issue: power and energy) ---------------------------------------

CREATE TABLE gpu_samples(                       -- NVML samples taken by the launcher
  gpu_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL,
  power_mw INTEGER,                             -- instantaneous power
  power_avg_mw INTEGER,                         -- NVML's averaged power field
  energy_mj INTEGER,                            -- total energy counter since driver load
  sm_clock_mhz INTEGER, memory_clock_mhz INTEGER, gpu_util INTEGER, memory_util INTEGER,
  memory_used_bytes INTEGER, temperature_c INTEGER, throttle_reasons INTEGER,
  energy_uncertainty_ns INTEGER);               -- energy_mj rows: the counter changed within ts_ns ± this

CREATE TABLE nvml_sampler(                      -- the sampler's own footprint, one row per GPU
  gpu_id INTEGER, duration_ns INTEGER,          -- how long it sampled
  energy_reads INTEGER, energy_busy_ns INTEGER, energy_max_ns INTEGER, -- energy counter reads:
  power_reads INTEGER, power_busy_ns INTEGER, power_max_ns INTEGER,    -- calls, time in flight,
  state_reads INTEGER, state_busy_ns INTEGER, state_max_ns INTEGER,    -- the longest call
  cpu_ns INTEGER,                               -- the sampler threads' CPU time for this GPU
  counter_mode TEXT,                            -- locked (on the update grid), free, acquire
  counter_resets INTEGER);                      -- reads that contradicted the grid

CREATE TABLE energy_windows(                    -- lantern.h energy windows seen under `profile`
  id INTEGER PRIMARY KEY, process_id INTEGER, thread_id INTEGER, name_id INTEGER,
  start_ns INTEGER NOT NULL, end_ns INTEGER, gpu_id INTEGER, energy_j REAL, error_j REAL,
  counter_updates INTEGER, flags INTEGER);

-- ---- CPU package energy (RAPL, lantern profile's source "rapl"; docs/energy.md) ------------

CREATE TABLE cpu_packages(                      -- CPU packages sampled (powercap's intel-rapl:N)
  package INTEGER NOT NULL,                     -- N (no key: `lantern merge` keeps each host's)
  max_energy_range_uj INTEGER,                  -- where the package counter wraps
  dram_max_energy_range_uj INTEGER);            -- the same for its DRAM zone; NULL: none

CREATE TABLE cpu_energy_samples(                -- RAPL reads taken by the launcher, ~10 Hz
  package INTEGER NOT NULL, ts_ns INTEGER NOT NULL,
  energy_uj INTEGER NOT NULL,                   -- package energy since the first read (unwrapped)
  dram_energy_uj INTEGER);                      -- DRAM energy since the first read; NULL: none

-- ---- GPU hardware metrics (lantern profile --gpu-metrics; docs/gpu-metrics.md) -------------

CREATE TABLE gpu_metric_sets(                   -- what was sampled on one GPU, by one source
  id INTEGER PRIMARY KEY, gpu_id INTEGER,
  source TEXT,                                  -- 'CUPTI PM sampling' or 'NVML GPM'
  period_ns INTEGER,                            -- the sampling period asked for
  metrics TEXT,                                 -- the columns of gpu_metric_samples it filled
  hardware TEXT,                                -- what each read: CUPTI metric names, GPM ids
  chip TEXT,                                    -- CUPTI's chip name (GH100); NULL for GPM
  samples INTEGER, lost_samples INTEGER,        -- the sampler's footprint, when it stopped:
  duration_ns INTEGER, sampler_cpu_ns INTEGER,  -- samples written, whole periods missing, its
  sampler_reads INTEGER, sampler_read_ns INTEGER, -- CPU time, decode calls or GPM reads;
  sampler_process_cpu_ns INTEGER,               -- the sampler child process: its CPU time,
  sampler_max_rss_kib INTEGER,                  -- peak memory, and the delay from a sample's
  delivery_mean_ns INTEGER, delivery_max_ns INTEGER, -- end to the launcher (mean, max),
  relay_cpu_ns INTEGER);                        -- and the launcher's relay thread's CPU

CREATE TABLE gpu_metric_samples(                -- averages over [start_ns, end_ns) of one GPU;
  set_id INTEGER NOT NULL,                      -- NULL: not in the set. The columns are
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, -- src/trace/gpu_metrics.def's rows, in order:
  gr_active REAL, sm_active REAL, sm_issue REAL, warp_occupancy REAL,     -- % of peak
  tensor_active REAL, tensor_hmma REAL, tensor_imma REAL, tensor_dmma REAL, -- % of peak
  dram_read REAL, dram_write REAL, dram_bw REAL,                          -- % of peak bandwidth
  pcie_rx REAL, pcie_tx REAL, nvlink_rx REAL, nvlink_tx REAL);            -- bytes per second

CREATE TABLE gpu_metric_status(                 -- why metrics are missing or incomplete
  gpu_id INTEGER,                               -- NULL: every GPU
  source TEXT, code TEXT,                       -- unavailable, not permitted, busy, lost, failed, crashed, hung;
                                                -- GPM: aligned (samples moved), unaligned
  count INTEGER,                                -- samples lost
  reason TEXT);

-- CPU sampling (-t cpu, docs/cpu.md): whether each process was sampled, and every sample of
-- a thread with its callchain. Stacks are interned as Perfetto interns them: a sample points
-- at a stack of its process, a stack at the callsite of its leaf, a callsite at its frame and
-- at the callsite of its caller (parent_id NULL: the outermost frame, depth 0); a frame is a
-- function (or an address where no symbol was found) in a module, shared by every process.
CREATE TABLE cpu_sampling(
  process_id INTEGER PRIMARY KEY,
  status TEXT NOT NULL,                         -- on, not permitted, unavailable, failed
  period_ns INTEGER,                            -- CPU time between two samples of a thread
  reason TEXT,                                  -- why not on (one line)
  samples INTEGER, lost INTEGER,                -- lost: the kernel's ring was full
  threads INTEGER, threads_unsampled INTEGER,   -- threads sampled; found but not sampled
  cpu_ns INTEGER,                               -- the agent's writer reading the rings
  addresses INTEGER, unsymbolized INTEGER,      -- distinct addresses; those without a symbol
  truncated_stacks INTEGER,                     -- stacks cut at an address in no mapping
  python_status TEXT, python_reason TEXT,       -- Python stacks (CPython): on, ..., why not
  python_snapshots INTEGER, python_lost INTEGER,-- the Python sampler's looks; lost in its queue
  python_unreadable INTEGER,                    -- looks cut short (a stack changing as read)
  python_cpu_ns INTEGER,                        -- the Python sampler thread's CPU time
  python_matched INTEGER,                       -- samples given their thread's Python stack
  python_unmatched INTEGER,                     -- samples of a Python thread with no look near
  paused_samples INTEGER,                       -- taken while paused, dropped (schema 8)
  switches INTEGER,                             -- context switches out of the sampled threads
  thread_states INTEGER);                       -- 1: cpu_thread_states recorded (schema 9)
CREATE TABLE cpu_frames(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL,   -- the function, or module+0xOFFSET
  module TEXT,                                  -- the file's base name ([vdso], [anon])
  file TEXT, line INTEGER);                     -- a Python function's file and first line
CREATE TABLE cpu_callsites(
  id INTEGER PRIMARY KEY, parent_id INTEGER, frame_id INTEGER NOT NULL, depth INTEGER NOT NULL);
CREATE TABLE cpu_stacks(
  id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL,
  callsite_id INTEGER);                         -- its leaf; NULL: no user-space frame
CREATE TABLE cpu_samples(
  thread_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL, stack_id INTEGER);
-- A Python thread seen waiting for the GIL by the Python sampler: the wall time the look
-- stands for, and the thread's Python stack (docs/cpu.md, "GIL waits").
CREATE TABLE cpu_gil_waits(
  thread_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  stack_id INTEGER);
-- A sampled thread off the CPU (docs/cpu.md, "Thread states"): blocked (it waited) or
-- preempted (runnable, no CPU), from a switch-out to its switch-in; switch-outs of one state
-- close together are merged into one row of at most 1 ms, state_ns its time in the state.
CREATE TABLE cpu_thread_states(
  thread_id INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  state TEXT NOT NULL,                          -- blocked, preempted
  state_ns INTEGER NOT NULL,                    -- of end_ns - start_ns, off the CPU
  switches INTEGER NOT NULL);                   -- switch-outs merged into the row (1..)

-- OS runtime calls (-t osrt, docs/osrt.md): the wrapped libc calls that lasted at least the
-- process's threshold, named as nsys names them (strings: read, pthread_mutex_lock, ...); and
-- per process the threshold and how many calls were timed, kept and lost.
CREATE TABLE osrt(
  process_id INTEGER PRIMARY KEY,
  threshold_ns INTEGER,                         -- shorter calls were counted, not kept
  seen INTEGER, kept INTEGER,                   -- calls timed; of them, at least the threshold
  lost INTEGER,                                 -- kept calls the thread's buffer could not hold
  backtrace_threshold_ns INTEGER,               -- kept calls this long carry a backtrace
  backtrace_depth INTEGER);                     -- native frames at most (0: no backtraces)
CREATE TABLE osrt_calls(
  id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL, name_id INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  ret INTEGER NOT NULL,                         -- the return value (mmap: the address)
  errno INTEGER,                                -- where the call failed with -1 and errno
  backtrace_id INTEGER);                        -- strings: who called (calls that long only)

-- Every kernel with the name reports and exports show: demangled when known, else as CUPTI
-- gave it (name_id is that string's id). Reports that read kernels only query this view.
CREATE VIEW kernel_ops AS
  SELECT 'kernel' AS kind, k.id, k.process_id, k.gpu_id, k.device, k.context, k.stream,
    k.correlation_id, k.start_ns, k.end_ns, k.api_id, k.nvtx_range_id,
    COALESCE(k.demangled_id, k.name_id) AS name_id,
    COALESCE(dn.value, mn.value, '(unnamed kernel)') AS name,
    k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.regs_per_thread,
    k.static_smem, k.dynamic_smem FROM kernels k
    LEFT JOIN strings dn ON dn.id = k.demangled_id LEFT JOIN strings mn ON mn.id = k.name_id;

-- Every GPU operation (kernel, copy, memset) in one shape, named as reports and exports show
-- it (nsys's names): the one definition of "GPU work" they all query. Kernels fill the launch
-- columns; copies and memsets bytes and memory kinds (a memset's in dst_kind). Its kernel arm
-- is kernel_ops' select, written out: SQLite flattens a view into a query (reading only the
-- columns the query needs) only when no arm is itself a view and each column has the same
-- affinity in every arm (hence +column where another arm has NULL). Names come by LEFT JOIN,
-- which SQLite drops from a query that reads no name.
CREATE VIEW gpu_ops AS
  SELECT 'kernel' AS kind, k.id, k.process_id, k.gpu_id, k.device, k.context, k.stream,
    k.correlation_id, k.start_ns, k.end_ns, k.api_id, k.nvtx_range_id,
    COALESCE(k.demangled_id, k.name_id) AS name_id,
    COALESCE(dn.value, mn.value, '(unnamed kernel)') AS name,
    +k.grid_x AS grid_x, +k.grid_y AS grid_y, +k.grid_z AS grid_z, +k.block_x AS block_x,
    +k.block_y AS block_y, +k.block_z AS block_z, +k.regs_per_thread AS regs_per_thread,
    +k.static_smem AS static_smem, +k.dynamic_smem AS dynamic_smem,
    NULL AS bytes, NULL AS copy_kind, NULL AS src_kind, NULL AS dst_kind FROM kernels k
    LEFT JOIN strings dn ON dn.id = k.demangled_id LEFT JOIN strings mn ON mn.id = k.name_id
  UNION ALL SELECT 'memcpy', c.id, c.process_id, c.gpu_id, c.device, c.context, c.stream,
    c.correlation_id, c.start_ns, c.end_ns, c.api_id, c.nvtx_range_id, NULL,
    '[CUDA memcpy ' || CASE c.copy_kind WHEN 'HtoD' THEN 'Host-to-Device'
      WHEN 'DtoH' THEN 'Device-to-Host' WHEN 'DtoD' THEN 'Device-to-Device'
      WHEN 'HtoH' THEN 'Host-to-Host' WHEN 'PtoP' THEN 'Peer-to-Peer'
      WHEN 'HtoA' THEN 'Host-to-Array' WHEN 'AtoH' THEN 'Array-to-Host'
      WHEN 'AtoA' THEN 'Array-to-Array' WHEN 'AtoD' THEN 'Array-to-Device'
      WHEN 'DtoA' THEN 'Device-to-Array' ELSE COALESCE(c.copy_kind, 'Unknown') END || ']',
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    +c.bytes, +c.copy_kind, +c.src_kind, +c.dst_kind FROM memcpys c
  UNION ALL SELECT 'memset', s.id, s.process_id, s.gpu_id, s.device, s.context, s.stream,
    s.correlation_id, s.start_ns, s.end_ns, s.api_id, s.nvtx_range_id, NULL, '[CUDA memset]',
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    +s.bytes, NULL, NULL, +s.mem_kind FROM memsets s;

-- Every decoded payload value with its names as text: the NVTX payload data users query.
CREATE VIEW nvtx_payload_fields AS
  SELECT v.payload_id, v.range_id, v.mark_id, sn.value AS schema, v.entry_idx,
    fn.value AS field, v.array_idx, v.value, en.value AS enum_name
  FROM nvtx_payload_values v JOIN nvtx_payloads p ON p.id = v.payload_id
  LEFT JOIN nvtx_payload_schemas s ON s.id = p.schema_row
  LEFT JOIN strings sn ON sn.id = s.name_id LEFT JOIN strings fn ON fn.id = v.name_id
  LEFT JOIN strings en ON en.id = v.enum_name_id;

-- Each process's label as reports and exports show it: "train.py (rank 1)", from its short
-- name (else its executable, else its pid) and rank.
CREATE VIEW process_labels AS
  SELECT id, coalesce(name, exe, 'pid ' || pid) || CASE WHEN rank IS NOT NULL
    THEN ' (rank ' || rank || ')' WHEN local_rank IS NOT NULL
    THEN ' (local rank ' || local_rank || ')' ELSE '' END AS label FROM processes;

-- Each thread's label as exports show it: its nvtxNameOsThread name, else its threading.Thread
-- name, else its OS name, else "thread <tid>".
CREATE VIEW thread_labels AS
  SELECT t.id, coalesce(s.value, 'thread ' || t.tid) AS label FROM threads t
    LEFT JOIN strings s ON s.id = coalesce(t.name_id, t.python_name_id, t.os_name_id);
