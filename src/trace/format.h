/* The raw trace format: what the agent (and the launcher) write and the importer reads.
 * One file per process, append-only, in chunks; every number a LEB128 varint. The full
 * specification with examples is docs/trace-format.md; this header is its machine form. */
#ifndef LANTERN_TRACE_FORMAT_H
#define LANTERN_TRACE_FORMAT_H

#include <stdint.h>

/* File header: 16 bytes, then chunks until end of file. */
#define TRACE_FILE_MAGIC "LANTRACE"          /* 8 bytes, no NUL */
#define TRACE_FORMAT_VERSION 1u              /* u32 little-endian after the magic */
#define TRACE_FILE_HEADER_SIZE 16u           /* magic, u32 version, u32 flags (0) */

/* Chunk header: 24 bytes little-endian, then body_len bytes of records.
 *   u32 magic  u32 body_len  u32 crc32c(body)  u32 record_count  u64 base_ts
 * base_ts seeds the timestamp deltas of the chunk's records, so each chunk decodes alone
 * (given the STRING/DOMAIN records of earlier chunks). */
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
    TRACE_STRING = 5,         /* u id (1..; 0 means "no string"), s bytes (not NUL-terminated) */
    TRACE_DROPPED = 6,        /* u thread_idx (0: process-wide), u count since last DROPPED */
    TRACE_CLOCK = 7,          /* u tsc, ts: a calibration point, informational */

    /* NVTX (20-39) */
    TRACE_DOMAIN = 20,        /* u domain id (1..; 0 is the default domain), u name string id */
    TRACE_CATEGORY = 21,      /* u domain id, u category, u name string id */
    TRACE_PUSH = 22,          /* u thread_idx, ts, u domain, u depth (0-based level), EVENT */
    TRACE_POP = 23,           /* u thread_idx, ts, u domain, u depth (level ended) */
    TRACE_START = 24,         /* u thread_idx, ts, u range_id, u domain, EVENT */
    TRACE_END = 25,           /* u thread_idx, ts, u range_id */
    TRACE_MARK = 26,          /* u thread_idx, ts, u domain, EVENT */
    TRACE_UNBALANCED_POP = 27,/* u thread_idx, ts, u domain */
    TRACE_DOMAIN_DESTROY = 28,/* u domain id, ts */
    /* EVENT = u name string id, u category, u color (0: none, else ARGB + 1),
     *         u payload_type (NVTX_PAYLOAD_TYPE_*, 0: none), u payload bits */

    /* CUDA through CUPTI (40-79): defined by src/agent/cupti*.c, documented in
     * docs/trace-format.md. */
    TRACE_CUDA_FIRST = 40,
    TRACE_CUDA_LAST = 79,

    /* GPU counters sampled by the launcher (80-99): defined by src/nvml, documented in
     * docs/trace-format.md. */
    TRACE_NVML_FIRST = 80,
    TRACE_NVML_LAST = 99,
};

/* TRACE_PROCESS agent_flags */
#define TRACE_FLAG_NVTX 0x1u
#define TRACE_FLAG_CUDA 0x2u
#define TRACE_FLAG_NVML 0x4u
#define TRACE_FLAG_LAUNCHER 0x8u      /* written by the launcher itself, not an agent */

#endif
