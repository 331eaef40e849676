/* The timeline pass (timeline.c): every kernel, copy and memset walked once, in GPU time
 * order, for the rules that need each GPU's busy and idle time, and for the HTML page; and
 * per process and GPU (a rank of a job: timeline_ranks.c) its busy time, its NCCL kernels and
 * their overlap with its other kernels, for the cross-rank rules. */
#ifndef LANTERN_ANALYZE_TIMELINE_H
#define LANTERN_ANALYZE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/rule.h"
#include "common/u64_map.h"

struct energy_track;

/* Gaps at least this long count as idle (the gpu_idle rule's threshold, docs/analyze.md). */
#define GPU_IDLE_GAP_NS 100000 /* 100 µs */

#define TIMELINE_BINS 500 /* busy time per GPU in this many equal bins of the session */
#define TIMELINE_TOP_GAPS ANALYZE_MAX_EVIDENCE
#define TIMELINE_MAX_GPUS 64
#define TIMELINE_LANE_PX 1000 /* columns of the page's NVTX lanes */
#define TIMELINE_MAX_LANES 64

enum timeline_op_kind { TIMELINE_KERNEL, TIMELINE_MEMCPY, TIMELINE_MEMSET };
enum timeline_gap_class { GAP_HOST, GAP_SYNC, GAP_OTHER, GAP_CLASSES };

/* One idle gap of a GPU: [start, end) between the work before and the work after. */
struct timeline_gap {
    int64_t start, end;
    enum timeline_op_kind next_kind;
    int64_t next_id;       /* kernels/memcpys/memsets id of the work after the gap */
    int64_t next_range_id; /* its NVTX range, 0 when none */
    enum timeline_gap_class cls;
};

/* Idle time of one NVTX range (the range the work after each gap was launched from). */
struct timeline_range_idle {
    int64_t range_id;
    int64_t gaps;
    int64_t ns[GAP_CLASSES];
};

struct timeline_gpu {
    int64_t gpu_id, label; /* gpus.id; NVML index (else CUDA ordinal) for display */
    int64_t sm_count;
    int64_t first_start, last_end; /* of its work */
    int64_t busy_ns;               /* union of the work's intervals */
    int64_t gap_ns, gap_count;     /* every gap between its first and last work */
    int64_t long_gap_ns, long_gap_count, long_gap_class_ns[GAP_CLASSES]; /* >= the threshold */
    struct timeline_gap top[TIMELINE_TOP_GAPS]; /* longest gaps, longest first */
    int top_count;
    struct timeline_range_idle *ranges; /* per range, gaps >= the threshold */
    size_t range_count, range_cap;
    double bins[TIMELINE_BINS];      /* busy ns per bin */
    int64_t copy_ns, kernel_ns;      /* time of copies and of kernels (not merged) */
    int64_t copy_compute_overlap_ns; /* copies running while a kernel ran */
    /* merged busy intervals with the busy time before each, for busy time in any window */
    int64_t *iv_start, *iv_end, *iv_before;
    size_t iv_count, iv_cap;
    int iv_overflow; /* too many intervals were kept: busy_between falls back to bins */
    /* with CPU samples (want_host): its host-wait gaps >= the threshold, in time order, for
     * the samples taken in them (host_activity.c); past TIMELINE_MAX_HOST_GAPS, counted */
    struct timeline_gap *host_gaps;
    size_t host_gap_count, host_gap_cap;
    int64_t host_gaps_left_out;
};
#define TIMELINE_MAX_HOST_GAPS (1u << 20)

/* Per kernel name (launch_bound) and per launch shape (small_grid). */
struct timeline_kernel_name {
    int64_t name_id;
    int64_t count, kernel_ns, launch_ns;  /* kernel durations, launch call durations */
    int64_t short_count, short_excess_ns; /* kernels shorter than their launch call */
    int64_t longest_id, longest_ns;
    int64_t first_short_id; /* the first of those kernels */
    /* the launch calls of those kernels: first start, last end, and the process of the
     * first (the window of the host's samples, host_activity.c) */
    int64_t short_launch_start, short_launch_end, short_process_id;
    double joules, error_j; /* GPU energy over its instances (ANALYZE_PAGE) */
};
struct timeline_shape {
    int64_t name_id, gpu_id, blocks, threads, regs, smem;
    int64_t count, ns, first_id;
};
/* The longest few of something, by id (kept longest first). */
struct timeline_top {
    int64_t id[ANALYZE_MAX_EVIDENCE], ns[ANALYZE_MAX_EVIDENCE];
    int count;
};

/* Copies (or memsets: kind "memset") of one process and kind, for pageable_memcpy and
 * sync_memops. */
struct timeline_copies {
    int64_t process_id;
    char kind[16];
    int64_t pageable_count, pageable_ns;
    double pageable_bytes;
    struct timeline_top pageable_top; /* by GPU time */
    int64_t sync_count, sync_api_ns, sync_gpu_ns;
    struct timeline_top sync_top; /* by the CPU time of the call */
};
#define TIMELINE_MAX_COPY_GROUPS 64

/* Per stream. */
struct timeline_stream {
    int64_t process_id, stream, gpu_id;
    int64_t kernels, copies, ns, kernel_ns, copy_ns;
};

/* A union of intervals added in start order: its length so far and the interval being merged
 * (timeline_union_add; timeline_union_close adds the last one). */
struct timeline_union {
    int64_t start, end, total;
    int open;
};

/* One NCCL kernel of a rank, for matching the k-th collective of each rank (stragglers). */
struct timeline_collective {
    int64_t id, start, end;
    int type; /* index into analyze_timeline.nccl_types */
};

/* The work of one process on one GPU: a rank of a distributed job (cross-rank rules). */
struct timeline_rank {
    int64_t process_id, gpu_id;
    int64_t pid, rank;   /* processes.pid, processes.rank (-1: none) */
    int64_t gpu_label;   /* NVML index, else CUDA ordinal, -1 unknown */
    char *host;          /* processes.host, NULL unknown */
    int64_t first_start, last_end; /* of its work on this GPU */
    struct timeline_union all;     /* kernels, copies and memsets: busy time */
    struct timeline_union kernels, nccl, compute; /* all kernels, NCCL ones, the others */
    int64_t gaps;                  /* gaps >= the gpu_idle threshold in its own work */
    struct timeline_collective *collectives; /* its NCCL kernels, in start order */
    size_t collective_count, collective_cap;
};
#define TIMELINE_MAX_NCCL_TYPES 32

struct analyze_timeline {
    int64_t gap_threshold_ns; /* the gpu_idle rule's threshold */
    struct timeline_gpu *gpus;
    int gpu_count;
    int64_t bin_start, bin_ns; /* bins cover [bin_start, bin_start + TIMELINE_BINS * bin_ns) */
    struct timeline_kernel_name *names;
    size_t name_count, name_cap;
    struct timeline_shape *shapes;
    size_t shape_count, shape_cap;
    struct timeline_stream *streams;
    size_t stream_count, stream_cap;
    int64_t kernels, launches_with_api;
    int64_t launch_ns_total;
    /* launch -> start delays: log-spaced histogram, 8 buckets per power of two (bucket b >= 8
     * holds [2^o (1 + s/8), 2^o (1 + (s+1)/8)) ns with o = b / 8, s = b % 8) */
    int64_t delay_hist[512];
    int64_t delay_count;
    int64_t ops;   /* all GPU work */
    int want_page; /* ANALYZE_PAGE: names[].joules and lanes are filled */
    int want_host; /* CPU sampling was asked for: gpus[].host_gaps are kept */
    struct timeline_copies copies[TIMELINE_MAX_COPY_GROUPS];
    int copy_groups;
    struct {
        char kind[16];
        double bytes, ns;
    } pinned[TIMELINE_MAX_COPY_GROUPS]; /* pinned copies per kind, for their rate */
    int pinned_kinds;
    struct timeline_copy_kind {
        char kind[16], src[16], dst[16]; /* "HtoD", "pageable", "device"; memsets: "memset" */
        int64_t count, ns;
        double bytes;
    } copy_kinds[TIMELINE_MAX_COPY_GROUPS]; /* every copy and memset, by kind */
    int copy_kind_count;
    /* GPU power samples (energy_db.h), NULL when the database has none */
    struct energy_db_gpu *energy;
    int energy_count;
    /* each NVTX range name, with its energy (timeline_ranges), most energy first */
    struct timeline_range_energy *range_energy;
    size_t range_energy_count;
    int range_energy_done;
    /* ANALYZE_PAGE, with timeline_ranges: per thread (the first TIMELINE_MAX_LANES seen), the
     * share of each of TIMELINE_LANE_PX columns of the session its top-level ranges cover */
    struct timeline_lane {
        int64_t thread_id; /* threads.id */
        double ns;         /* time in its top-level ranges */
        float cover[TIMELINE_LANE_PX];
    } * lanes;
    int lane_count;
    /* per process and GPU (timeline_ranks.c), in order of first work */
    struct timeline_rank *ranks;
    size_t rank_count, rank_cap;
    int rank_processes; /* distinct processes among them */
    /* NCCL kernel names: strings.id -> type index + 1, and the types ("AllReduce", ...) */
    struct u64_map nccl_names;
    char nccl_types[TIMELINE_MAX_NCCL_TYPES][32];
    int nccl_type_count;
};

/* One NVTX range name over its ended instances: time, and with power samples its energy
 * and GPU-busy time over each instance's process's sampled GPUs. */
struct timeline_range_energy {
    int64_t domain_id, name_id, example_id, instances;
    double ns, joules, error_j, busy_ns;
};

/* The timeline of ctx, computed on first use. NULL with ctx->error set on failure. */
struct analyze_timeline *analyze_timeline(struct analyze_ctx *ctx);
/* The timeline for a rule about GPU work: NULL with *rc = 0 and a note in res when the
 * database has none (no CUDA recorded), NULL with *rc = -EIO on an error. */
struct analyze_timeline *analyze_gpu_work(struct analyze_ctx *ctx, struct analyze_result *res,
                                          int *rc);
void analyze_timeline_free(struct analyze_timeline *t);
/* Busy time of a GPU within [start, end). */
double timeline_busy_between(const struct analyze_timeline *t, const struct timeline_gpu *g,
                             int64_t start, int64_t end);
/* The delay at quantile q (0..1) of the launch -> start histogram (bucket middle), -1 none. */
double timeline_delay_quantile(const struct analyze_timeline *t, double q);
/* Keeps (id, ns) if among the longest of top. */
void timeline_top_add(struct timeline_top *top, int64_t id, int64_t ns);

/* Every range name (t->range_energy, computed once, in one scan of ranges); 0, -EIO or
 * -ENOMEM. */
int timeline_ranges(struct analyze_ctx *ctx, struct analyze_timeline *t);
/* The energy track of a GPU, NULL without samples. */
const struct energy_track *timeline_energy_track(const struct analyze_timeline *t, int64_t gpu_id);
/* ---- ranks (timeline_ranks.c) ---- */
struct index_map;
/* Before the pass: the NCCL kernel names of the database (model/nccl.h's nccl_parse_kernel);
 * 0, -EIO or -ENOMEM. */
int timeline_ranks_begin(struct analyze_ctx *ctx, struct analyze_timeline *t);
/* One piece of work, in start order; is_kernel and the name id for kernels. 0 or -ENOMEM. */
int timeline_ranks_op(struct analyze_timeline *t, struct index_map *index, int64_t process_id,
                      int64_t gpu_id, int is_kernel, int64_t name_id, int64_t id, int64_t start,
                      int64_t end);
/* After the pass: the last intervals, and each rank's pid, rank, host and GPU label; 0 or -EIO. */
int timeline_ranks_end(struct analyze_ctx *ctx, struct analyze_timeline *t);
void timeline_ranks_free(struct analyze_timeline *t);
void timeline_union_add(struct timeline_union *u, int64_t start, int64_t end);
void timeline_union_close(struct timeline_union *u);
/* "rank 3 (pid 4242, node001, GPU 3)", or "pid 4242 (node001, GPU 0)" without a rank. */
const char *timeline_rank_label(const struct timeline_rank *r, char *buf, size_t size);
/* Whether the cross-rank rules can compare ranks: work of >= 2 processes; else a note in res. */
int timeline_several_ranks(const struct analyze_timeline *t, struct analyze_result *res);
/* A rank's time of one kind (exposed communication, idle) as a share of its span (first to
 * last work on its GPU), for the rules that compare ranks by it. */
struct timeline_rank_share {
    const struct timeline_rank *r;
    int64_t span, ns;
    double share; /* ns, percent of span */
};
/* qsort order: the largest share first, then by process id. */
int timeline_rank_by_share(const void *a, const void *b);
/* The shares of the ranks with a span and a time of the kind (measure's, < 0: none), sorted
 * by timeline_rank_by_share, into *out (calloc'd; the caller frees it). Returns their count,
 * or -ENOMEM with ctx->error set for rule. */
long timeline_rank_shares(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                          const char *rule, int64_t (*measure)(const struct timeline_rank *r,
                                                               int64_t span),
                          struct timeline_rank_share **out);
/* An evidence row for a rank, named "rank 3" (else "pid 4242"): from its first work on its
 * GPU, lasting duration_ns, with detail. */
void timeline_rank_evidence(struct analyze_ctx *ctx, struct analyze_finding *f,
                            const struct timeline_rank *r, int64_t duration_ns, char *detail);

/* Evidence row for one piece of GPU work (kind, id), with detail. */
int timeline_op_evidence(struct analyze_ctx *ctx, struct analyze_finding *f,
                         enum timeline_op_kind kind, int64_t id, const char *detail,
                         int64_t start_ns, int64_t duration_ns);

#endif
