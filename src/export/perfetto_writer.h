/* The Perfetto export's writer (perfetto_writer.c): what the format's core (perfetto.c) and the
 * files that write each source's tracks (perfetto_<source>.c) share: the field numbers of the few
 * Perfetto messages written (from Perfetto's public protos/perfetto/trace/ .proto files, checked
 * against the descriptors the `perfetto` Python package ships, tests/export/test_perfetto.py), the
 * numbers the producers share (argument names, categories, track uuids), and the writer with its
 * event, interning, nesting and GPU-track helpers. */
#ifndef LANTERN_EXPORT_PERFETTO_WRITER_H
#define LANTERN_EXPORT_PERFETTO_WRITER_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "export/protobuf.h"

/* Trace, TracePacket (trace_packet.proto) */
enum {
    PF_TRACE_PACKET = 1,
    PF_PACKET_CLOCK_SNAPSHOT = 6,
    PF_PACKET_TIMESTAMP = 8,
    PF_PACKET_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
    PF_PACKET_TRACK_EVENT = 11,
    PF_PACKET_INTERNED_DATA = 12,
    PF_PACKET_SEQUENCE_FLAGS = 13,
    PF_PACKET_TIMESTAMP_CLOCK_ID = 58,
    PF_PACKET_DEFAULTS = 59, /* trace_packet_defaults */
    PF_PACKET_TRACK_DESCRIPTOR = 60,
    PF_PACKET_FIRST_ON_SEQUENCE = 87,
    PF_SEQ_INCREMENTAL_STATE_CLEARED = 1,
    PF_SEQ_NEEDS_INCREMENTAL_STATE = 2,
};
/* ClockSnapshot (clock_snapshot.proto), TracePacketDefaults and TrackEventDefaults */
enum {
    PF_SNAPSHOT_CLOCKS = 1,
    PF_SNAPSHOT_PRIMARY_TRACE_CLOCK = 2,
    PF_CLOCK_ID = 1,
    PF_CLOCK_TIMESTAMP = 2,
    PF_CLOCK_IS_INCREMENTAL = 3,
    PF_CLOCK_MONOTONIC = 3,    /* BuiltinClock: the database's clock */
    PF_CLOCK_INCREMENTAL = 64, /* a sequence-scoped clock: deltas from the previous packet */
    PF_DEFAULTS_TIMESTAMP_CLOCK_ID = 58,
    PF_DEFAULTS_TRACK_EVENT = 11,
    PF_TRACK_EVENT_DEFAULTS_TRACK_UUID = 11,
};
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor */
enum {
    PF_TRACK_UUID = 1,
    PF_TRACK_NAME = 2,
    PF_TRACK_PROCESS = 3,
    PF_TRACK_THREAD = 4,
    PF_TRACK_PARENT_UUID = 5,
    PF_TRACK_COUNTER = 8,
    PF_TRACK_DESCRIPTION = 14,
    PF_PROCESS_PID = 1,
    PF_PROCESS_SORT_INDEX = 3, /* legacy_sort_index */
    PF_PROCESS_NAME = 6,
    PF_PROCESS_LABELS = 8,
    PF_THREAD_PID = 1,
    PF_THREAD_TID = 2,
    PF_THREAD_SORT_INDEX = 3, /* legacy_sort_index */
    PF_THREAD_NAME = 5,
};
/* TrackEvent (track_event.proto), DebugAnnotation, InternedData, EventName/EventCategory */
enum {
    PF_EVENT_CATEGORY_IIDS = 3,
    PF_EVENT_DEBUG_ANNOTATIONS = 4,
    PF_EVENT_TYPE = 9,
    PF_EVENT_NAME_IID = 10,
    PF_EVENT_TRACK_UUID = 11,
    PF_EVENT_DOUBLE_COUNTER_VALUE = 44,
    PF_EVENT_FLOW_IDS = 47,             /* fixed64 */
    PF_EVENT_TERMINATING_FLOW_IDS = 48, /* fixed64 */
    PF_TYPE_SLICE_BEGIN = 1,
    PF_TYPE_SLICE_END = 2,
    PF_TYPE_INSTANT = 3,
    PF_TYPE_COUNTER = 4,
    PF_ANNOTATION_NAME_IID = 1,
    PF_ANNOTATION_INT = 4,
    PF_ANNOTATION_DOUBLE = 5,
    PF_ANNOTATION_STRING = 6,
    PF_INTERNED_EVENT_CATEGORIES = 1,
    PF_INTERNED_EVENT_NAMES = 2,
    PF_INTERNED_DEBUG_ANNOTATION_NAMES = 3,
    PF_INTERNED_IID = 1,
    PF_INTERNED_NAME = 2,
};
/* CPU samples: TracePacket.perf_sample, PerfSample (profile_packet.proto), and the interned
 * callstacks, frames, mappings and their names (interned_data.proto, profile_common.proto) */
enum {
    PF_PACKET_PERF_SAMPLE = 66,
    PF_PERF_SAMPLE_PID = 2,
    PF_PERF_SAMPLE_TID = 3,
    PF_PERF_SAMPLE_CALLSTACK_IID = 4,
    PF_PERF_SAMPLE_CPU_MODE = 5,
    PF_CPU_MODE_USER = 2, /* Profiling.CpuMode */
    PF_INTERNED_FUNCTION_NAMES = 5,
    PF_INTERNED_FRAMES = 6,
    PF_INTERNED_CALLSTACKS = 7,
    PF_INTERNED_MAPPING_PATHS = 17,
    PF_INTERNED_MAPPINGS = 19,
    PF_FRAME_IID = 1,
    PF_FRAME_FUNCTION_NAME_ID = 2,
    PF_FRAME_MAPPING_ID = 3,
    PF_FRAME_REL_PC = 4,
    PF_CALLSTACK_IID = 1,
    PF_CALLSTACK_FRAME_IDS = 2, /* outermost frame first */
    PF_MAPPING_IID = 1,
    PF_MAPPING_START = 4,
    PF_MAPPING_END = 5,
    PF_MAPPING_PATH_STRING_IDS = 7,
};

/* ---- Numbers the producers share, one list each so that no two take the same. They are in
 * the output (iids, uuids): a new source appends its own, and none is renumbered. ---- */

/* Debug annotation names (PF_ARG_<id> = iid, from 1), interned per sequence on first use. */
#define PERFETTO_ARGS(X)                                                                           \
    X(PAYLOAD, "payload")                   /* NVTX */                                             \
    X(CATEGORY, "category")                 /* NVTX */                                             \
    X(UNENDED, "unended")                   /* NVTX */                                             \
    X(GRID, "grid")                         /* CUDA */                                             \
    X(BLOCK, "block")                       /* CUDA */                                             \
    X(BYTES, "bytes")                       /* CUDA */                                             \
    X(CORRELATION, "correlation")           /* CUDA */                                             \
    X(REGISTERS, "registers per thread")    /* CUDA */                                             \
    X(SHARED_MEMORY, "shared memory bytes") /* CUDA */                                             \
    X(SRC_KIND, "source memory")            /* CUDA */                                             \
    X(DST_KIND, "destination memory")       /* CUDA */                                             \
    X(RETURN, "return")                     /* OS runtime */                                       \
    X(ERRNO, "errno")                       /* OS runtime */                                       \
    X(BACKTRACE, "backtrace")               /* OS runtime */ \
    X(FUNCTION, "function")                 /* Python GIL */ \
    X(SWITCHES, "switches")                 /* thread states */ \
    X(OFF_CPU_NS, "off_cpu_ns")             /* thread states */
enum {
    PF_ARG_NONE,
#define PERFETTO_ARG_ENUM(id, text) PF_ARG_##id,
    PERFETTO_ARGS(PERFETTO_ARG_ENUM)
#undef PERFETTO_ARG_ENUM
        PF_ARG_COUNT
};

/* Category iids: CUDA's fixed ones, then one per NVTX domain. */
enum {
    PERFETTO_CATEGORY_CUDA_API = 1,
    PERFETTO_CATEGORY_KERNEL,
    PERFETTO_CATEGORY_MEMCPY,
    PERFETTO_CATEGORY_MEMSET,
    PERFETTO_CATEGORY_OSRT,
    PERFETTO_CATEGORY_PYTHON_GIL,
    PERFETTO_CATEGORY_THREAD_STATE,
    PERFETTO_CATEGORY_DOMAIN = 16, /* + domains.id */
};

/* Track uuids: a kind in the low byte, database ids above it (small numbers, short varints).
 * The core's: processes, threads, GPUs, and counters under a GPU (metric: the writer numbers
 * them in the order producers ask for them, perfetto_gpu_counter; at most 64: NVML's 8, the
 * GPU metrics' 15 and CUDA's device memory use 24). */
#define PERFETTO_PROCESS_TRACK(process_id) ((uint64_t)(process_id) << 8 | 1)
#define PERFETTO_THREAD_TRACK(thread_id) ((uint64_t)(thread_id) << 8 | 2)
#define PERFETTO_GPU_TRACK(gpu_key) ((uint64_t)(gpu_key) << 8 | 6)
#define PERFETTO_COUNTER_TRACK(gpu_key, metric) (((uint64_t)(gpu_key) << 6 | (metric)) << 8 | 8)
/* NVTX's: other domains' push/pop ranges under their thread, start/end lanes under their
 * process (at most PERFETTO_MAX_LANES open at once per process and domain). */
#define PERFETTO_DOMAIN_TRACK(thread_id, domain)                                                   \
    (((uint64_t)(thread_id) << 12 | (uint64_t)(domain)) << 8 | 3)
#define PERFETTO_LANE_TRACK(process_id, domain, lane)                                              \
    ((((uint64_t)(process_id) << 12 | (uint64_t)(domain)) << 12 | (lane)) << 8 | 5)
#define PERFETTO_MAX_LANES 4096u
/* CUDA's: API calls under their thread, streams under their GPU. */
#define PERFETTO_API_TRACK(thread_id) ((uint64_t)(thread_id) << 8 | 4)
#define PERFETTO_STREAM_TRACK(lane) ((uint64_t)(lane) << 8 | 7)
/* OS runtime calls under their thread. */
#define PERFETTO_OSRT_TRACK(thread_id) ((uint64_t)(thread_id) << 8 | 9)
/* RAPL's: a CPU package's energy counters (zone 0 the package, 1 its DRAM), at the top. */
#define PERFETTO_RAPL_TRACK(package, zone) (((uint64_t)(package) << 1 | (uint64_t)(zone)) << 8 | 10)
/* The Python sampler's GIL waits under their thread. */
#define PERFETTO_GIL_TRACK(thread_id) ((uint64_t)(thread_id) << 8 | 11)
/* A sampled thread's states (blocked, preempted) under it. The next free kind is 13. */
#define PERFETTO_STATE_TRACK(thread_id) ((uint64_t)(thread_id) << 8 | 12)
/* Synthetic names (perfetto_event_name_text) beside CUDA's own 0 .. 11 (perfetto_cuda.c). */
#define PERFETTO_SYNTHETIC_GIL_WAIT 16u
#define PERFETTO_SYNTHETIC_BLOCKED 17u
#define PERFETTO_SYNTHETIC_PREEMPTED 18u

/* ---- The writer -------------------------------------------------------------------------- */

#define PERFETTO_DESCRIPTOR_SEQUENCE 1u /* the sequence that carries the track descriptors */

/* Events go out in runs, each on its own packet sequence: a run's events are in time
 * order, so their timestamps are deltas (PF_CLOCK_INCREMENTAL), and the run's track is the
 * sequence's default (events name another track only when they are on one). Names are
 * interned per sequence: `*_seen[iid] == sequence` says the sequence has it. */
struct perfetto_writer {
    sqlite3 *db;
    FILE *out;
    long long session_end;  /* meta end_ns: where a range of a process without an end ends */
    uint32_t sequence;      /* the current run's sequence (1: descriptors) */
    int sequence_started;   /* its first packet (clock snapshot, defaults) is out */
    int primary_clock_set;  /* the first clock snapshot made CLOCK_MONOTONIC the trace's clock */
    uint64_t default_track; /* the current run's track */
    uint64_t last_ts;       /* the current run's previous timestamp */
    uint32_t arg_seen[PF_ARG_COUNT]; /* debug annotation names interned, by PF_ARG_* */
    struct pb_buf file;              /* packets waiting to be written */
    struct pb_buf packet;            /* the packet being built */
    struct pb_buf event;             /* its TrackEvent */
    struct pb_buf interned;          /* its InternedData, when it interns something */
    size_t interned_mark;
    sqlite3_stmt *string_query;
    uint32_t *names_seen, *categories_seen; /* by iid: the sequence that interned it */
    size_t names_cap, categories_cap;
    uint64_t unnamed_iid; /* max(strings.id) + 1; synthetic names follow */
    uint64_t events;
    uint64_t left_out;         /* start/end ranges beyond PERFETTO_MAX_LANES open at once */
    int64_t gpu_described[64]; /* GPU tracks written (perfetto_gpu_track) */
    size_t gpus_described;
    unsigned counters; /* counter metrics numbered so far (perfetto_gpu_counter) */
    int64_t gpu_metrics_bucket_ns; /* the widest GPU metrics thinning (gpu_metrics_tracks.h) */
    int write_failed;
};

struct perfetto_process_info {
    int64_t pid, sort_index;
    const char *losses; /* what it lost (model/session_losses.h), or NULL */
};
struct perfetto_thread_info {
    int64_t pid, tid, sort_index;
    const char *losses; /* what it lost, or NULL */
};

/* A TrackDescriptor packet: a process track (process set), a thread track (thread set),
 * a counter track (counter), or a named track under parent (0: none). A process's or
 * thread's losses are its track's description (and a process's label too). */
void perfetto_track(struct perfetto_writer *w, uint64_t uuid, uint64_t parent, const char *name,
                    const struct perfetto_thread_info *thread,
                    const struct perfetto_process_info *process, int counter);

/* Starts a run of events in time order, mostly on `track`, on a new sequence. */
void perfetto_run_begin(struct perfetto_writer *w, uint64_t track);

/* An event: begin, then name/category/annotations/fields into w->event, then end (which
 * writes the packet, with the interned data its name and category need). */
void perfetto_event_begin(struct perfetto_writer *w, unsigned type, uint64_t track);
void perfetto_event_end(struct perfetto_writer *w, uint64_t ts);
/* A packet of another kind on the current run (a PerfSample): begin, then its fields into
 * w->event and what it interns through perfetto_interned_*, then end, which writes it at ts as
 * the packet's field `payload`. */
void perfetto_payload_begin(struct perfetto_writer *w);
void perfetto_payload_end(struct perfetto_writer *w, uint64_t ts, unsigned payload);
/* Whether the current sequence has interned iid in *set (marks it so); a set per kind of
 * interned message, grown as needed. */
int perfetto_interned_seen(struct perfetto_writer *w, uint32_t **set, size_t *cap, uint64_t iid);
/* An InternedString (iid, text) of `field` in the current packet's interned data. */
void perfetto_interned_string(struct perfetto_writer *w, unsigned field, uint64_t iid,
                              const char *text, size_t len);
/* Opens a message of `field` in the current packet's interned data; close it with pb_end on
 * w->interned. */
size_t perfetto_interned_begin(struct perfetto_writer *w, unsigned field);
void perfetto_event_name_id(struct perfetto_writer *w, int64_t string_id); /* strings.id */
/* A name not in strings: `synthetic` numbers it among the writer's own names. */
void perfetto_event_name_text(struct perfetto_writer *w, unsigned synthetic, const char *text);
void perfetto_event_category(struct perfetto_writer *w, uint64_t iid, const char *text);
void perfetto_annotation_int(struct perfetto_writer *w, unsigned name_iid, int64_t v);
void perfetto_annotation_double(struct perfetto_writer *w, unsigned name_iid, double v);
void perfetto_annotation_string(struct perfetto_writer *w, unsigned name_iid, const char *s,
                                size_t len);

/* Nested slices per track (perfetto.c explains); a new track starts a new run. */
struct perfetto_nest {
    int started;
    uint64_t track;
    uint64_t *ends;
    size_t depth, cap;
};
void perfetto_nest_begin(struct perfetto_writer *w, struct perfetto_nest *n, uint64_t track,
                         uint64_t start, uint64_t *end);
/* Ends the slices still open and frees n's stack (n can start again). */
void perfetto_nest_release(struct perfetto_writer *w, struct perfetto_nest *n);

/* The head of a slice on a host thread, from a row whose first three columns are thread_id,
 * start_ns and end_ns, the rows sorted by track, then start, then end descending (as
 * chrome_write_thread_slice is for the Chrome export): `track` is the thread's own
 * (PERFETTO_THREAD_TRACK, which the core describes) or a child track of it named `name`,
 * described at its first slice. Nests the slice on n and begins its event; the caller writes
 * its name, category and annotations, then perfetto_event_end(w, the start returned). */
uint64_t perfetto_thread_slice(struct perfetto_writer *w, struct perfetto_nest *n, sqlite3_stmt *st,
                               uint64_t track, const char *name);

/* The track of GPU gpu ("GPU 0: NVIDIA H100 80GB HBM3"), described on first use. */
void perfetto_gpu_track(struct perfetto_writer *w, int64_t gpu);
/* A counter track per GPU named name, under the GPU's track, holding the rows of sql
 * (gpu_id, ts_ns, value; sorted by GPU, then time); each call numbers a new metric.
 * 0 or -EIO (the database's error says why). */
int perfetto_gpu_counter(struct perfetto_writer *w, const char *name, const char *sql);
/* The same for values a producer computes itself (perfetto_gpu_metrics.c): a new metric's
 * number, then per GPU its track (named; the GPU's track described first if new), then the
 * track's values in time order. */
unsigned perfetto_gpu_counter_metric(struct perfetto_writer *w);
void perfetto_gpu_counter_track(struct perfetto_writer *w, int64_t gpu, unsigned metric,
                                const char *name);
void perfetto_gpu_counter_value(struct perfetto_writer *w, int64_t gpu, unsigned metric,
                                uint64_t ts, double value);

/* The writer's life (perfetto.c): the first packet (sequence 1 starts clean); writing out
 * the packets buffered (0, or -EIO once a write failed); freeing what it holds. */
void perfetto_first_packet(struct perfetto_writer *w);
int perfetto_flush(struct perfetto_writer *w);
void perfetto_writer_release(struct perfetto_writer *w);

#endif
