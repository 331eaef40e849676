/* The raw trace format: what the agent (and the launcher) write and the importer reads.
 * One file per process, append-only, in chunks; every number a LEB128 varint. The full
 * specification with examples is docs/trace-format.md; this header is its machine form.
 * sources.def lists the event sources and the record-type range each owns. */
#ifndef LANTERN_TRACE_FORMAT_H
#define LANTERN_TRACE_FORMAT_H

#include <stdint.h>

/* File header: 16 bytes, then chunks until end of file. */
#define TRACE_FILE_MAGIC "LANTRACE"          /* 8 bytes, no NUL */
#define TRACE_FORMAT_VERSION 7u              /* u32 little-endian after the magic */
#define TRACE_FORMAT_VERSION_MIN 1u          /* the oldest version readers still accept */
/* A process that loaded the agent but runs untraced for a reason it printed (a static
 * executable) leaves an empty <pid>.untraced in the session folder, so that the launcher knows
 * why nothing was recorded without saying it a second time. */
#define TRACE_UNTRACED_SUFFIX ".untraced"
#define TRACE_FILE_HEADER_SIZE 16u           /* magic, u32 version, u32 flags (0) */

/* Chunk header: 32 bytes little-endian, then body_len bytes of records.
 *   u32 magic  u32 body_len  u32 crc  u32 record_count  u64 base_ts  u64 seq
 * base_ts seeds the timestamp deltas of the chunk's records, so each chunk decodes alone
 * (given the STRING/DOMAIN records of earlier chunks). seq (version 5) numbers the file's
 * chunks in the order they were made, increasing (not necessarily by 1): a reader imports
 * each seq once, in seq order (codec.h says how a writer and an appender number them).
 * Version 2: crc is the CRC32C of body_len, record_count, base_ts (and seq, version 5: the
 * header bytes after crc, in order) and the body, so every byte decoding depends on is
 * covered; version 1 files: crc32c(body) only. Versions 1 to 4 have 24-byte chunk headers
 * (no seq). */
#define TRACE_CHUNK_MAGIC 0x4B43484Cu        /* "LCHK" */
#define TRACE_CHUNK_HEADER_SIZE 32u
#define TRACE_CHUNK_HEADER_SIZE_V4 24u       /* versions 1 to 4 */
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
 * skipped by body_len. String ids, domain ids and thread indexes are per file.
 *
 * Every record type and its fields are listed once, in records.def; records.h generates its
 * struct, encoder and decoder. Here: the type numbers, and the range each source owns. */
enum trace_record_type {
#define RECORD(TYPE, name, number, doc, fields) TRACE_##TYPE = number,
#include "trace/records.def"
#undef RECORD
    /* process and threads (1-19) belong to no source */
    TRACE_NVTX_FIRST = 20, /* NVTX (20-39) */
    TRACE_NVTX_LAST = 39,
    /* CUDA through CUPTI (40-79): written by src/agent/cupti*.c, imported by
     * src/db/import_cuda.c. ids (device, context, stream, correlation) are CUPTI's within
     * the process. */
    TRACE_CUDA_FIRST = 40,
    TRACE_CUDA_LAST = 79,
    /* GPU counters sampled by the launcher (80-99, src/launcher/nvml_sampler.c). gpu is NVML's
     * index. Optional values are stored + 1 so that 0 means "not read". */
    TRACE_NVML_FIRST = 80,
    TRACE_NVML_LAST = 99,
    /* GPU hardware metrics sampled by the launcher (100-119, src/launcher/gpu_metrics*.c),
     * one set of metrics per GPU, named by uuid: gpu_metrics.def lists the metrics. */
    TRACE_GPU_METRICS_FIRST = 100,
    TRACE_GPU_METRICS_LAST = 119,
    /* CPU sampling in the agent (120-139, src/agent/cpu_sampling.c): the kernel's cpu-clock
     * samples of every thread with their user-space callchains, the executable mappings
     * they point into, symbolized by the importer (src/db/import_cpu.c). */
    TRACE_CPU_FIRST = 120,
    TRACE_CPU_LAST = 139,
    /* OS runtime calls in the agent (140-149, src/agent/osrt.c): the libc calls of -t osrt
     * that lasted at least the threshold (trace/osrt.def names them), from the threads' event
     * streams, and each process's settings and totals. */
    TRACE_OSRT_FIRST = 140,
    TRACE_OSRT_LAST = 149,
    /* CPU package energy sampled by the launcher (150-159, src/launcher/rapl_sampler.c):
     * Linux powercap's RAPL counters (src/energy/rapl.h), one package per CPU socket. */
    TRACE_RAPL_FIRST = 150,
    TRACE_RAPL_LAST = 159,
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

/* TRACE_TABLE_CUT's tables: the agent's tables that grow with what the program gives it, each
 * with a cap (docs/trace-format.md), past which what is not kept is counted. */
#define TRACE_TABLE_REGISTERED_STRINGS 1u /* nvtxDomainRegisterString: the handle is NULL */
#define TRACE_TABLE_CATEGORIES 2u         /* nvtxDomainNameCategory: the name is not kept */
#define TRACE_TABLE_DOMAINS 3u            /* nvtxDomainCreate: recorded in the default domain */
#define TRACE_TABLE_PAYLOAD_SCHEMAS 4u    /* nvtxPayloadSchemaRegister/EnumRegister: not kept */
#define TRACE_TABLE_NAMES 5u              /* nvtxNameOsThread, nvtxName*, resources: no name */
#define TRACE_TABLE_PYTHON_FUNCTIONS 6u   /* --python-functions' code objects: not recorded */

/* NVTX's extended payloads (the payload extension, nvToolsExtPayload.h). An event's payload
 * type NVTX_PAYLOAD_TYPE_EXT (0xDFBD0009) is recorded as its low byte, as the agent records
 * every payload type: 9, beside the core types 1-6. A schema or enumeration records at most
 * this many entries (NCCL's have up to 7); the rest are counted in its entry_count. */
#define TRACE_PAYLOAD_TYPE_EXT 9u
#define TRACE_PAYLOAD_ENTRIES_MAX 256u

/* TRACE_PROCESS agent_flags */
#define TRACE_FLAG_NVTX 0x1u
#define TRACE_FLAG_CUDA 0x2u
#define TRACE_FLAG_NVML 0x4u
#define TRACE_FLAG_LAUNCHER 0x8u      /* written by the launcher itself, not an agent */
#define TRACE_FLAG_NO_NVIDIA_DEVICE 0x10u /* launcher: the host had no /dev/nvidiactl (no GPU) */
#define TRACE_FLAG_GPU_METRICS 0x20u
#define TRACE_FLAG_CPU 0x40u
#define TRACE_FLAG_OSRT 0x80u
#define TRACE_FLAG_RAPL 0x100u

/* TRACE_CPU_SAMPLING status: whether this process's threads are sampled (cpu_sampling.status) */
enum trace_cpu_sampling_status {
    TRACE_CPU_SAMPLING_ON = 1,            /* sampling every thread */
    TRACE_CPU_SAMPLING_NOT_PERMITTED = 2, /* perf_event_open refused (EACCES/EPERM: paranoid
                                             level, seccomp, a container) */
    TRACE_CPU_SAMPLING_UNAVAILABLE = 3,   /* no perf events here (ENOSYS, ENOENT, ENODEV) */
    TRACE_CPU_SAMPLING_FAILED = 4,        /* another error (its errno in the reason) */
};

/* TRACE_CPU_THREAD_STATE state: why a sampled thread was off the CPU (cpu_thread_states.state) */
enum trace_cpu_state {
    TRACE_CPU_STATE_BLOCKED = 1,   /* it waited (a system call, a futex, a sleep) */
    TRACE_CPU_STATE_PREEMPTED = 2, /* runnable, but another task had the CPU */
};

/* TRACE_CPU_SAMPLE: the most periods one sample stands for (1 + overruns). A late tick folds
 * a few of a CPU-time timer's expiries into one signal (the sample stands for them); a fold of
 * this many expiries or more is a thread that kept the signal blocked, whose periods ran
 * elsewhere than where the signal lands: the agent counts them lost and writes the sample
 * alone. The importer stores a sample as 1 + overruns rows (docs/cpu.md, "CPU-time timers"). */
#define TRACE_CPU_SAMPLE_WEIGHT_MAX 16u

/* TRACE_NVML_GPU flags */
#define TRACE_NVML_HAS_ENERGY_COUNTER 0x1u  /* Volta and later */
#define TRACE_NVML_HAS_INSTANT_POWER 0x2u

/* TRACE_GPU_METRIC_SET and _STATUS source: what sampled the metrics */
enum trace_gpu_metrics_source {
    TRACE_GPU_METRICS_PM_SAMPLING = 1, /* CUPTI PM sampling (cupti_pmsampling.h) */
    TRACE_GPU_METRICS_GPM = 2,         /* NVML GPU Performance Monitoring (nvmlGpmMetricsGet) */
};

/* TRACE_GPU_METRIC_STATUS code: why a GPU's metrics are missing, or partly */
enum trace_gpu_metrics_status {
    TRACE_GPU_METRICS_UNAVAILABLE = 1,   /* no such source on this GPU, driver or CUPTI */
    TRACE_GPU_METRICS_NOT_PERMITTED = 2, /* profiling is restricted to admin users */
    TRACE_GPU_METRICS_BUSY = 3,          /* another profiler holds the GPU's counters */
    TRACE_GPU_METRICS_LOST = 4,          /* count samples were lost (buffer overflow) */
    TRACE_GPU_METRICS_FAILED = 5,        /* sampling stopped on an error */
    TRACE_GPU_METRICS_CRASHED = 6,       /* the sampler child died (a signal) or exited early */
    TRACE_GPU_METRICS_HUNG = 7,          /* it did not start or stop in time: killed */
};

/* A GPU metric value in TRACE_GPU_METRIC_SAMPLE: percentages in hundredths of a percent,
 * rates in bytes per second (gpu_metrics.def's unit), rounded, negative readings as 0. */
#define TRACE_GPU_METRIC_PERCENT_SCALE 100.0

#endif
