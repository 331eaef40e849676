/* The raw trace format: what the agent (and the launcher) write and the importer reads.
 * One file per process, append-only, in chunks; every number a LEB128 varint. The full
 * specification with examples is docs/trace-format.md; this header is its machine form.
 * sources.def lists the event sources and the record-type range each owns. */
#ifndef LANTERN_TRACE_FORMAT_H
#define LANTERN_TRACE_FORMAT_H

#include <stdint.h>

/* File header: 16 bytes, then chunks until end of file. */
#define TRACE_FILE_MAGIC "LANTRACE"          /* 8 bytes, no NUL */
#define TRACE_FORMAT_VERSION 2u              /* u32 little-endian after the magic */
#define TRACE_FORMAT_VERSION_MIN 1u          /* the oldest version readers still accept */
#define TRACE_FILE_HEADER_SIZE 16u           /* magic, u32 version, u32 flags (0) */

/* Chunk header: 24 bytes little-endian, then body_len bytes of records.
 *   u32 magic  u32 body_len  u32 crc  u32 record_count  u64 base_ts
 * base_ts seeds the timestamp deltas of the chunk's records, so each chunk decodes alone
 * (given the STRING/DOMAIN records of earlier chunks). Version 2: crc is the CRC32C of
 * body_len, record_count, base_ts (their 16 header bytes, in that order) and the body, so
 * every byte decoding depends on is covered; version 1 files: crc32c(body) only. */
#define TRACE_CHUNK_MAGIC 0x4B43484Cu        /* "LCHK" */
#define TRACE_CHUNK_HEADER_SIZE 24u
#define TRACE_CHUNK_MAX_BODY (64u << 20)     /* a reader rejects larger chunks as corrupt */

/* A record: varint type, varint body_len, body. A body is a sequence of fields:
 *   u   unsigned varint
 *   i   signed, zigzag varint
 *   ts  nanoseconds on CLOCK_MONOTONIC, as a zigzag varint delta from the previous ts in
 *       the chunk (the first from the chunk's base_ts)
 *   s   varint length then that many bytes
 *   f   a double's IEEE-754 bits as an unsigned varint
 * Readers ignore fields past those they know and read absent trailing fields as 0, so a
 * record type may grow fields at its end without a version change. Unknown types are
 * skipped by body_len. String ids, domain ids and thread indexes are per file. */
enum trace_record_type {
    /* process and threads (1-19) */
    TRACE_PROCESS = 1,        /* u pid, u ppid, ts start, u wall_ns (CLOCK_REALTIME at start),
                                 s exe, s cmdline (args separated by NUL), s host,
                                 u agent_flags (TRACE_FLAG_*), s lantern_version */
    TRACE_PROCESS_END = 2,    /* ts, u dropped_total, u clean (1: atexit/destructor ran) */
    TRACE_THREAD = 3,         /* u thread_idx (1..), u os_tid, ts first_seen */
    TRACE_THREAD_NAME = 4,    /* u os_tid, u name string id (nvtxNameOsThread) */
    TRACE_STRING = 5,         /* u id (1..; 0 means "no string"), s bytes (not NUL-terminated),
                                 u original_len: present only when the agent cut the string to
                                 TRACE_STRING_MAX (its end is then TRACE_STRING_CUT_MARK) */
    TRACE_DROPPED = 6,        /* u thread_idx (0: process-wide), u count since last DROPPED */
    TRACE_CLOCK = 7,          /* u tsc, ts: a calibration point, informational */
    TRACE_WRITE_ERROR = 8,    /* u errno, u file_bytes (the file's whole length when the first
                                 write failed), s strerror text: the agent could not write its
                                 file (a full disk) and counted every later event as dropped */
    TRACE_THREAD_OS_NAME = 9, /* u os_tid, u name string id: the OS thread name (comm), read
                                 when the thread first records, when it ends, and at the
                                 process's end; written when it changes */
    TRACE_THREAD_PYTHON_NAME = 10, /* u os_tid, u name string id: threading.Thread.name */
    TRACE_PROCESS_INFO = 11,  /* u rank + 1, u local_rank + 1 (0: none), s rank variable,
                                 u count, then count pids: the ancestors above ppid (ppid's
                                 parent first), up to pid 1 or TRACE_MAX_ANCESTORS */

    /* NVTX (20-39) */
    TRACE_NVTX_FIRST = 20,
    TRACE_DOMAIN = 20,        /* u domain id (1..; 0 is the default domain), u name string id */
    TRACE_CATEGORY = 21,      /* u domain id, u category, u name string id */
    TRACE_PUSH = 22,          /* u thread_idx, ts, u domain, u depth (0-based level), EVENT */
    TRACE_POP = 23,           /* u thread_idx, ts, u domain, u depth (level ended) */
    TRACE_START = 24,         /* u thread_idx, ts, u range_id, u domain, EVENT */
    TRACE_END = 25,           /* u thread_idx, ts, u range_id */
    TRACE_MARK = 26,          /* u thread_idx, ts, u domain, EVENT */
    TRACE_UNBALANCED_POP = 27,/* u thread_idx, ts, u domain */
    TRACE_DOMAIN_DESTROY = 28,/* u domain id, ts */
    TRACE_NAME_RESOURCE = 29, /* u kind (TRACE_RESOURCE_*), u handle value, u name string id */
    /* EVENT = u name string id, u category, u color (0: none, else ARGB + 1),
     *         u payload_type (NVTX_PAYLOAD_TYPE_*, 0: none), u payload bits */
    TRACE_NVTX_LAST = 39,

    /* CUDA through CUPTI (40-79): written by src/agent/cupti*.c, imported by
     * src/db/import_cuda.c, documented in docs/trace-format.md. ids (device, context,
     * stream, correlation) are CUPTI's within the process. */
    TRACE_CUDA_FIRST = 40,
    TRACE_CUDA_KERNEL = 40,   /* u device, u context, u stream, u correlation, ts start, ts end,
                                 u name string id (mangled), u demangled string id (0: the
                                 importer demangles),
                                 u grid x, y, z, u block x, y, z, u cluster x, y, z,
                                 u registers per thread, u static smem, u dynamic smem,
                                 u local mem per thread, u launch type (TRACE_CUDA_LAUNCH_*),
                                 u graph id, u graph node id */
    TRACE_CUDA_MEMCPY = 41,   /* u device, u context, u stream, u correlation, ts start, ts end,
                                 u copy kind (TRACE_CUDA_COPY_*), u bytes, u src mem kind,
                                 u dst mem kind (TRACE_CUDA_MEM_*), u async (0/1),
                                 u src device, u dst device, u graph node id */
    TRACE_CUDA_MEMSET = 42,   /* u device, u context, u stream, u correlation, ts start, ts end,
                                 u bytes, u value, u mem kind, u async, u graph node id */
    TRACE_CUDA_API = 43,      /* u os_tid, u api (0 runtime, 1 driver), u cbid,
                                 u name string id, ts start, ts end, u return code,
                                 u correlation */
    TRACE_CUDA_SYNC = 44,     /* u sync kind (TRACE_CUDA_SYNC_*), u context, u stream,
                                 u event, u correlation, ts start, ts end */
    TRACE_CUDA_MEMORY = 45,   /* u op (1 alloc, 2 free), u mem kind, u device, u context,
                                 u stream, u address, u bytes, ts, u correlation */
    TRACE_CUDA_DEVICE = 46,   /* u device, s name, s uuid ("GPU-xxxxxxxx-xxxx-..." as NVML
                                 prints it), s pci bus id, u cc major, u cc minor, u SM count,
                                 u memory bytes, u SM clock kHz, u memory clock kHz,
                                 u memory bus bits, u L2 bytes, u max threads per SM,
                                 u max registers per SM, u max smem per SM, u max blocks per SM,
                                 u registers per block, u smem per block opt-in,
                                 u DRAM bandwidth (bytes/s, as CUPTI reports it) */
    TRACE_CUDA_CONTEXT = 47,  /* u context, u device, u null stream id */
    TRACE_CUDA_STREAM = 48,   /* u context, u stream, u priority, u flag (TRACE_CUDA_STREAM_*),
                                 u correlation */
    TRACE_CUDA_STREAM_HANDLE = 49, /* u CUstream handle (as NVTX names it), u context,
                                 u stream: written when a stream is created */
    TRACE_CUDA_OVERHEAD = 50, /* u kind (CUPTI's CUpti_ActivityOverheadKind), u os_tid (0: not
                                 a thread's), ts start, ts end */
    TRACE_CUDA_REJECTED = 51, /* u count: CUPTI records dropped by the agent because their
                                 timestamps were zero or inverted, since the last REJECTED */
    TRACE_CUDA_CAPTURE = 52,  /* s mode ("none", "cudaProfilerApi", "nvtx:NAME"), u from ns,
                                 u until ns (CLOCK_MONOTONIC; 0: unbounded): which CUDA
                                 records the importer keeps (docs/trace-format.md) */
    TRACE_CUDA_CONTEXT_HANDLE = 53, /* u CUcontext handle, u context: written at creation */
    TRACE_CUDA_BACKTRACE = 54, /* u correlation, u stack string id: who called the launch API
                                 with that correlation (--python-backtrace; src/agent/pystack.h
                                 says what the text holds) */
    TRACE_CUDA_LAST = 79,

    /* GPU counters sampled by the launcher (80-99, src/nvml/sampler.c; docs/trace-format.md).
     * gpu is NVML's index. Optional values are stored + 1 so that 0 means "not read". */
    TRACE_NVML_FIRST = 80,
    TRACE_NVML_GPU = 80,      /* u gpu, s uuid, s name, u power_limit_mw, u memory_bytes,
                                 u flags (TRACE_NVML_HAS_*), u cuda_index + 1 (0: not visible) */
    TRACE_NVML_POWER = 81,    /* u gpu, ts, u power_mw + 1 (instant), u power_avg_mw + 1 */
    TRACE_NVML_ENERGY = 82,   /* u gpu, ts, u energy_mj, u uncertainty_ns: the energy counter
                                 took this value within ts ± uncertainty_ns (written only when
                                 it changes) */
    TRACE_NVML_STATE = 83,    /* u gpu, ts, u sm_clock_mhz + 1, u memory_clock_mhz + 1,
                                 u gpu_util + 1, u memory_util + 1, u memory_used_bytes + 1,
                                 u temperature_c + 1, u throttle_reasons + 1 */
    TRACE_NVML_DISABLED = 84, /* s reason: why no GPU was sampled (one line) */
    TRACE_NVML_SAMPLER = 85,  /* u gpu, u duration_ns, then for energy, power, state reads:
                                 u calls, u busy_ns, u max_ns; u cpu_ns, u counter mode + 1
                                 (0: counter not read), u counter resets. The sampler's own
                                 footprint, written once per GPU when it stops */
    TRACE_NVML_LAST = 99,
};

/* CUDA enumerations in the trace, numbered as CUPTI numbers them (stable since CUDA 10). */
enum trace_cuda_copy_kind {
    TRACE_CUDA_COPY_UNKNOWN = 0, TRACE_CUDA_COPY_HTOD = 1, TRACE_CUDA_COPY_DTOH = 2,
    TRACE_CUDA_COPY_HTOA = 3, TRACE_CUDA_COPY_ATOH = 4, TRACE_CUDA_COPY_ATOA = 5,
    TRACE_CUDA_COPY_ATOD = 6, TRACE_CUDA_COPY_DTOA = 7, TRACE_CUDA_COPY_DTOD = 8,
    TRACE_CUDA_COPY_HTOH = 9, TRACE_CUDA_COPY_PTOP = 10,
};
enum trace_cuda_mem_kind {
    TRACE_CUDA_MEM_UNKNOWN = 0, TRACE_CUDA_MEM_PAGEABLE = 1, TRACE_CUDA_MEM_PINNED = 2,
    TRACE_CUDA_MEM_DEVICE = 3, TRACE_CUDA_MEM_ARRAY = 4, TRACE_CUDA_MEM_MANAGED = 5,
    TRACE_CUDA_MEM_DEVICE_STATIC = 6, TRACE_CUDA_MEM_MANAGED_STATIC = 7,
};
enum trace_cuda_sync_kind {
    TRACE_CUDA_SYNC_UNKNOWN = 0, TRACE_CUDA_SYNC_EVENT = 1, TRACE_CUDA_SYNC_STREAM_WAIT_EVENT = 2,
    TRACE_CUDA_SYNC_STREAM = 3, TRACE_CUDA_SYNC_CONTEXT = 4,
};
enum trace_cuda_launch_type {   /* kernels.launch_type */
    TRACE_CUDA_LAUNCH_REGULAR = 0, TRACE_CUDA_LAUNCH_COOPERATIVE = 1,
    TRACE_CUDA_LAUNCH_COOPERATIVE_MULTI_DEVICE = 2, TRACE_CUDA_LAUNCH_CLUSTER = 3,
};
enum trace_cuda_stream_flag {
    TRACE_CUDA_STREAM_UNKNOWN = 0, TRACE_CUDA_STREAM_DEFAULT = 1,
    TRACE_CUDA_STREAM_NON_BLOCKING = 2, TRACE_CUDA_STREAM_NULL = 3,
};

/* TRACE_NAME_RESOURCE kinds: what nvtxName{Cu,Cuda}*{A,W} and nvtxDomainResourceCreate named */
enum trace_resource_kind {
    TRACE_RESOURCE_CU_DEVICE = 1,
    TRACE_RESOURCE_CU_CONTEXT = 2,
    TRACE_RESOURCE_CU_STREAM = 3,
    TRACE_RESOURCE_CU_EVENT = 4,
    TRACE_RESOURCE_CUDART_DEVICE = 5,
    TRACE_RESOURCE_CUDART_STREAM = 6,
    TRACE_RESOURCE_CUDART_EVENT = 7,
    TRACE_RESOURCE_NVTX_GENERIC = 8,  /* nvtxDomainResourceCreate: its identifier value */
};

/* The longest string the agent writes (names, kernel names, backtraces): a longer one is cut
 * at a UTF-8 character boundary and ends with the mark, TRACE_STRING_MAX bytes in all. */
#define TRACE_STRING_MAX (1u << 20)
#define TRACE_STRING_CUT_MARK "...[cut by lantern]"

#define TRACE_MAX_ANCESTORS 16u

/* TRACE_PROCESS agent_flags */
#define TRACE_FLAG_NVTX 0x1u
#define TRACE_FLAG_CUDA 0x2u
#define TRACE_FLAG_NVML 0x4u
#define TRACE_FLAG_LAUNCHER 0x8u      /* written by the launcher itself, not an agent */
#define TRACE_FLAG_NO_NVIDIA_DEVICE 0x10u /* launcher: the host had no /dev/nvidiactl (no GPU) */

/* TRACE_NVML_GPU flags */
#define TRACE_NVML_HAS_ENERGY_COUNTER 0x1u  /* Volta and later */
#define TRACE_NVML_HAS_INSTANT_POWER 0x2u

#endif
