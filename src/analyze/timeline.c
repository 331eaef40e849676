/* The timeline pass: every kernel, copy and memset of the database, once, in GPU start
 * order (three index-ordered queries merged here), folded into what the GPU rules need: per
 * GPU the union of busy intervals, its gaps (longest kept, each classified as host wait, sync
 * or other, summed per NVTX range), busy time per bin of the session and copy/compute
 * overlap; per kernel name the launch statistics; per launch shape the counts for small
 * grids; per stream its work; per process and GPU its work for the cross-rank rules
 * (timeline_ranks.c); and the launch -> start delay histogram. Memory grows with the
 * number of distinct names, shapes, streams and ranges with long gaps, not with the run. */
#include "analyze/timeline.h"
#include "analyze/findings.h"
#include "common/index_map.h"
#include "energy/energy_db.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Busy intervals kept per GPU for busy_between (24 bytes each); past this the bins answer. */
#define MAX_INTERVALS (4u << 20)

struct op {
    enum timeline_op_kind kind;
    int64_t id, gpu_id, process_id, stream, start, end, api_start, api_end, range_id;
    int64_t name_id, blocks, threads, regs, smem; /* kernels */
    const char *copy_kind;                        /* copies: "HtoD"...; memsets: "memset" */
    const char *src_kind, *dst_kind;              /* copies: "pageable"...; memsets: "" */
    int64_t pageable, pinned, bytes, is_async;    /* copies (is_async: memsets too; -1) */
};

/* ---- the pass's state ---------------------------------------------------------------------- */

struct gpu_state {
    int64_t cur_start, cur_end; /* the busy interval being merged */
    int have_cur;
    int64_t max_kernel_end, max_copy_end;
    struct index_map range_index;
};

struct pass {
    struct analyze_ctx *ctx;
    struct analyze_timeline *t;
    struct gpu_state gs[TIMELINE_MAX_GPUS];
    struct index_map names, shapes, streams, ranks;
    int64_t *sync_start, *sync_max_end; /* synchronizing calls by start, prefix max of ends */
    size_t sync_count;
};

static int name_eq(const void *array, size_t pos, const void *key)
{
    return ((const struct timeline_kernel_name *)array)[pos].name_id == *(const int64_t *)key;
}

static int shape_eq(const void *array, size_t pos, const void *key)
{
    const struct timeline_shape *a = &((const struct timeline_shape *)array)[pos], *b = key;
    return a->name_id == b->name_id && a->gpu_id == b->gpu_id && a->blocks == b->blocks &&
           a->threads == b->threads && a->regs == b->regs && a->smem == b->smem;
}

static int stream_eq(const void *array, size_t pos, const void *key)
{
    const struct timeline_stream *a = &((const struct timeline_stream *)array)[pos], *b = key;
    return a->process_id == b->process_id && a->stream == b->stream;
}

static int range_eq(const void *array, size_t pos, const void *key)
{
    return ((const struct timeline_range_idle *)array)[pos].range_id == *(const int64_t *)key;
}

static int load_gpus(struct pass *p)
{
    struct analyze_timeline *t = p->t;
    sqlite3_stmt *st = analyze_prepare(
        p->ctx, "timeline",
        "SELECT g.id, COALESCE(g.nvml_index, (SELECT min(device) FROM process_gpus pg WHERE"
        " pg.gpu_id = g.id), g.id - 1), g.sm_count FROM gpus g ORDER BY g.id");
    if (!st)
        return -EIO;
    t->gpus = calloc(TIMELINE_MAX_GPUS, sizeof *t->gpus);
    if (!t->gpus) {
        sqlite3_finalize(st);
        return -ENOMEM;
    }
    while (sqlite3_step(st) == SQLITE_ROW && t->gpu_count < TIMELINE_MAX_GPUS - 1) {
        struct timeline_gpu *g = &t->gpus[t->gpu_count++];
        g->gpu_id = sqlite3_column_int64(st, 0);
        g->label = sqlite3_column_int64(st, 1);
        g->sm_count = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        g->first_start = -1;
    }
    sqlite3_finalize(st);
    return 0;
}

/* The GPU of a piece of work; work with no known GPU shares one slot (gpu_id -1). */
static int gpu_slot(struct pass *p, int64_t gpu_id)
{
    struct analyze_timeline *t = p->t;
    for (int i = 0; i < t->gpu_count; i++)
        if (t->gpus[i].gpu_id == gpu_id)
            return i;
    if (t->gpu_count >= TIMELINE_MAX_GPUS)
        return t->gpu_count - 1;
    struct timeline_gpu *g = &t->gpus[t->gpu_count];
    g->gpu_id = gpu_id;
    g->label = -1;
    g->sm_count = -1;
    g->first_start = -1;
    return t->gpu_count++;
}

static int load_syncs(struct pass *p)
{
    sqlite3_stmt *st = analyze_prepare(p->ctx, "timeline",
                                       "SELECT start_ns, end_ns FROM cuda_syncs ORDER BY start_ns");
    if (!st)
        return -EIO;
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (p->sync_count == cap) {
            cap = cap ? cap * 2 : 256;
            int64_t *a = realloc(p->sync_start, cap * sizeof *a);
            if (a)
                p->sync_start = a;
            int64_t *b = a ? realloc(p->sync_max_end, cap * sizeof *b) : NULL;
            if (b)
                p->sync_max_end = b;
            if (!a || !b) {
                rc = -ENOMEM;
                break;
            }
        }
        int64_t end = sqlite3_column_int64(st, 1);
        int64_t prev = p->sync_count ? p->sync_max_end[p->sync_count - 1] : INT64_MIN;
        p->sync_start[p->sync_count] = sqlite3_column_int64(st, 0);
        p->sync_max_end[p->sync_count++] = end > prev ? end : prev;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Whether a synchronizing call was in progress at instant ts. */
static int sync_at(const struct pass *p, int64_t ts)
{
    size_t lo = 0, hi = p->sync_count;
    while (lo < hi) { /* first sync starting after ts */
        size_t mid = lo + (hi - lo) / 2;
        if (p->sync_start[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && p->sync_max_end[lo - 1] >= ts;
}

/* Room for one more busy interval of g; 0, or -ENOSPC (past MAX_INTERVALS) or -ENOMEM when
 * it cannot have it (then the bins answer busy_between for this GPU). */
static int reserve_interval(struct timeline_gpu *g)
{
    if (g->iv_count < g->iv_cap)
        return 0;
    if (g->iv_cap >= MAX_INTERVALS)
        return -ENOSPC;
    size_t cap = g->iv_cap ? g->iv_cap * 2 : 1024;
    int64_t *arrays[3] = {g->iv_start, g->iv_end, g->iv_before};
    for (int i = 0; i < 3; i++) {
        int64_t *p = realloc(arrays[i], cap * sizeof *p);
        if (!p)
            return -ENOMEM; /* the arrays already grown are larger than needed: harmless */
        arrays[i] = p;
        if (i == 0)
            g->iv_start = p;
        else if (i == 1)
            g->iv_end = p;
        else
            g->iv_before = p;
    }
    g->iv_cap = cap;
    return 0;
}

/* Adds busy interval [s, e) of GPU g to its bins and its interval list. */
static void add_busy(struct analyze_timeline *t, struct timeline_gpu *g, int64_t s, int64_t e)
{
    g->busy_ns += e - s;
    if (!g->iv_overflow && reserve_interval(g) < 0)
        g->iv_overflow = 1;
    if (!g->iv_overflow) {
        g->iv_start[g->iv_count] = s;
        g->iv_end[g->iv_count] = e;
        g->iv_before[g->iv_count] = g->busy_ns - (e - s);
        g->iv_count++;
    }
    int64_t bin_end = t->bin_start + TIMELINE_BINS * t->bin_ns;
    if (s < t->bin_start)
        s = t->bin_start;
    if (e > bin_end)
        e = bin_end;
    while (s < e) {
        int64_t b = (s - t->bin_start) / t->bin_ns;
        int64_t edge = t->bin_start + (b + 1) * t->bin_ns;
        int64_t piece_end = e < edge ? e : edge;
        g->bins[b] += (double)(piece_end - s);
        s = piece_end;
    }
}

static void keep_top_gap(struct timeline_gpu *g, const struct timeline_gap *gap)
{
    int64_t len = gap->end - gap->start;
    int i = g->top_count < TIMELINE_TOP_GAPS ? g->top_count++ : TIMELINE_TOP_GAPS;
    if (i == TIMELINE_TOP_GAPS) { /* full: replace the shortest if longer */
        if (len <= g->top[TIMELINE_TOP_GAPS - 1].end - g->top[TIMELINE_TOP_GAPS - 1].start)
            return;
        i = TIMELINE_TOP_GAPS - 1;
    }
    while (i > 0 && g->top[i - 1].end - g->top[i - 1].start < len) {
        g->top[i] = g->top[i - 1];
        i--;
    }
    g->top[i] = *gap;
}

static int add_range_idle(struct gpu_state *s, struct timeline_gpu *g, int64_t range_id,
                          enum timeline_gap_class cls, int64_t ns)
{
    int added;
    if (index_reserve((void **)&g->ranges, &g->range_cap, g->range_count, sizeof *g->ranges) < 0)
        return -ENOMEM;
    long pos = index_get(&s->range_index, index_mix(0, range_id), g->ranges, range_eq, &range_id,
                         g->range_count, &added);
    if (pos < 0)
        return -ENOMEM;
    if (added) {
        memset(&g->ranges[pos], 0, sizeof g->ranges[pos]);
        g->ranges[pos].range_id = range_id;
        g->range_count++;
    }
    g->ranges[pos].gaps++;
    g->ranges[pos].ns[cls] += ns;
    return 0;
}

static int keep_host_gap(struct timeline_gpu *g, const struct timeline_gap *gap)
{
    if (g->host_gap_count == TIMELINE_MAX_HOST_GAPS) {
        g->host_gaps_left_out++;
        return 0;
    }
    if (index_reserve((void **)&g->host_gaps, &g->host_gap_cap, g->host_gap_count,
                      sizeof *g->host_gaps) < 0)
        return -ENOMEM;
    g->host_gaps[g->host_gap_count++] = *gap;
    return 0;
}

static int on_gap(struct pass *p, int slot, int64_t start, const struct op *next)
{
    struct timeline_gpu *g = &p->t->gpus[slot];
    int64_t len = next->start - start;
    g->gap_ns += len;
    g->gap_count++;
    if (len < p->t->gap_threshold_ns)
        return 0;
    struct timeline_gap gap = {.start = start,
                               .end = next->start,
                               .next_kind = next->kind,
                               .next_id = next->id,
                               .next_range_id = next->range_id};
    if (sync_at(p, start))
        gap.cls = GAP_SYNC; /* the CPU was waiting for the GPU when it ran dry */
    else if (next->api_start >= start)
        gap.cls = GAP_HOST; /* the next work was submitted only after the GPU ran dry */
    else
        gap.cls = GAP_OTHER; /* it was queued already: dependencies, events, latency */
    g->long_gap_ns += len;
    g->long_gap_count++;
    g->long_gap_class_ns[gap.cls] += len;
    keep_top_gap(g, &gap);
    if (p->t->want_host && gap.cls == GAP_HOST && keep_host_gap(g, &gap) < 0)
        return -ENOMEM;
    return add_range_idle(&p->gs[slot], g, next->range_id, gap.cls, len);
}

/* Histogram bucket of a delay: 8 buckets per power of two, from the leading bits. */
static int delay_bucket(int64_t delay)
{
    if (delay < 8)
        return delay < 0 ? 0 : (int)delay;
    int octave = 63 - __builtin_clzll((uint64_t)delay);
    int b = octave * 8 + (int)((uint64_t)delay >> (octave - 3) & 7);
    return b < 511 ? b : 511;
}

/* The middle of bucket b's delays. */
static double bucket_middle(int b)
{
    if (b < 8)
        return b;
    int octave = b / 8, sub = b % 8;
    double low = ldexp(1.0 + sub / 8.0, octave);
    return low + ldexp(1.0 / 16.0, octave);
}

static int on_kernel(struct pass *p, const struct op *o)
{
    struct analyze_timeline *t = p->t;
    int added;
    t->kernels++;
    if (index_reserve((void **)&t->names, &t->name_cap, t->name_count, sizeof *t->names) < 0)
        return -ENOMEM;
    long pos = index_get(&p->names, index_mix(1, o->name_id), t->names, name_eq, &o->name_id,
                         t->name_count, &added);
    if (pos < 0)
        return -ENOMEM;
    struct timeline_kernel_name *n = &t->names[pos];
    if (added) {
        memset(n, 0, sizeof *n);
        n->name_id = o->name_id;
        t->name_count++;
    }
    int64_t ns = o->end - o->start;
    n->count++;
    n->kernel_ns += ns;
    const struct energy_track *track = t->want_page ? timeline_energy_track(t, o->gpu_id) : NULL;
    if (track) {
        struct energy_interval iv =
            energy_track_between(track, (uint64_t)o->start, (uint64_t)o->end);
        n->joules += iv.mj / 1000.0;
        n->error_j += iv.error_mj / 1000.0;
    }
    if (ns > n->longest_ns || n->count == 1) {
        n->longest_ns = ns;
        n->longest_id = o->id;
    }
    if (o->api_start >= 0) {
        int64_t launch = o->api_end - o->api_start;
        n->launch_ns += launch;
        t->launch_ns_total += launch;
        t->launches_with_api++;
        if (ns < launch) {
            if (n->short_count++ == 0) {
                n->first_short_id = o->id;
                n->short_launch_start = o->api_start;
                n->short_process_id = o->process_id;
            }
            if (o->api_start < n->short_launch_start)
                n->short_launch_start = o->api_start;
            if (o->api_end > n->short_launch_end)
                n->short_launch_end = o->api_end;
            n->short_excess_ns += launch - ns;
        }
        t->delay_hist[delay_bucket(o->start - o->api_start)]++;
        t->delay_count++;
    }
    struct timeline_shape key = {.name_id = o->name_id,
                                 .gpu_id = o->gpu_id,
                                 .blocks = o->blocks,
                                 .threads = o->threads,
                                 .regs = o->regs,
                                 .smem = o->smem};
    uint64_t h = index_mix(
        index_mix(index_mix(index_mix(index_mix(index_mix(2, key.name_id), key.gpu_id), key.blocks),
                            key.threads),
                  key.regs),
        key.smem);
    if (index_reserve((void **)&t->shapes, &t->shape_cap, t->shape_count, sizeof *t->shapes) < 0)
        return -ENOMEM;
    pos = index_get(&p->shapes, h, t->shapes, shape_eq, &key, t->shape_count, &added);
    if (pos < 0)
        return -ENOMEM;
    if (added) {
        t->shapes[pos] = key;
        t->shapes[pos].first_id = o->id;
        t->shape_count++;
    }
    t->shapes[pos].count++;
    t->shapes[pos].ns += ns;
    return 0;
}

static int on_stream(struct pass *p, const struct op *o)
{
    struct analyze_timeline *t = p->t;
    struct timeline_stream key = {.process_id = o->process_id, .stream = o->stream};
    int added;
    if (index_reserve((void **)&t->streams, &t->stream_cap, t->stream_count, sizeof *t->streams) <
        0)
        return -ENOMEM;
    long pos = index_get(&p->streams, index_mix(index_mix(3, o->process_id), o->stream), t->streams,
                         stream_eq, &key, t->stream_count, &added);
    if (pos < 0)
        return -ENOMEM;
    struct timeline_stream *s = &t->streams[pos];
    if (added) {
        *s = key;
        s->gpu_id = o->gpu_id;
        t->stream_count++;
    }
    int64_t ns = o->end - o->start;
    if (o->kind == TIMELINE_KERNEL) {
        s->kernels++;
        s->kernel_ns += ns;
    } else if (o->kind == TIMELINE_MEMCPY) {
        s->copies++;
        s->copy_ns += ns;
    }
    s->ns += ns;
    return 0;
}

void timeline_top_add(struct timeline_top *top, int64_t id, int64_t ns)
{
    int i = top->count < ANALYZE_MAX_EVIDENCE ? top->count++ : ANALYZE_MAX_EVIDENCE;
    if (i == ANALYZE_MAX_EVIDENCE) {
        if (ns <= top->ns[ANALYZE_MAX_EVIDENCE - 1])
            return;
        i = ANALYZE_MAX_EVIDENCE - 1;
    }
    while (i > 0 && top->ns[i - 1] < ns) {
        top->id[i] = top->id[i - 1];
        top->ns[i] = top->ns[i - 1];
        i--;
    }
    top->id[i] = id;
    top->ns[i] = ns;
}

/* Pageable and synchronous copies (and memsets) per process and kind; pinned rates. */
static void on_copy(struct analyze_timeline *t, const struct op *o)
{
    const char *kind = o->copy_kind ? o->copy_kind : "?";
    const char *src = o->src_kind ? o->src_kind : "", *dst = o->dst_kind ? o->dst_kind : "";
    int64_t ns = o->end - o->start;
    int k = 0;
    while (k < t->copy_kind_count &&
           (strcmp(t->copy_kinds[k].kind, kind) || strcmp(t->copy_kinds[k].src, src) ||
            strcmp(t->copy_kinds[k].dst, dst)))
        k++;
    if (k == t->copy_kind_count && k < TIMELINE_MAX_COPY_GROUPS) {
        struct timeline_copy_kind *c = &t->copy_kinds[t->copy_kind_count++];
        snprintf(c->kind, sizeof c->kind, "%s", kind);
        snprintf(c->src, sizeof c->src, "%s", src);
        snprintf(c->dst, sizeof c->dst, "%s", dst);
    }
    if (k < t->copy_kind_count) {
        t->copy_kinds[k].count++;
        t->copy_kinds[k].ns += ns;
        t->copy_kinds[k].bytes += (double)o->bytes;
    }
    if (o->pinned) {
        int k = 0;
        while (k < t->pinned_kinds && strcmp(t->pinned[k].kind, kind))
            k++;
        if (k == t->pinned_kinds && k < TIMELINE_MAX_COPY_GROUPS)
            snprintf(t->pinned[t->pinned_kinds++].kind, sizeof t->pinned[0].kind, "%s", kind);
        if (k < t->pinned_kinds) {
            t->pinned[k].bytes += (double)o->bytes;
            t->pinned[k].ns += (double)ns;
        }
    }
    int sync = o->is_async == 0 && o->api_start >= 0;
    if (!o->pageable && !sync)
        return;
    int g = 0;
    while (g < t->copy_groups &&
           (t->copies[g].process_id != o->process_id || strcmp(t->copies[g].kind, kind)))
        g++;
    if (g == t->copy_groups) {
        if (g == TIMELINE_MAX_COPY_GROUPS)
            return;
        memset(&t->copies[g], 0, sizeof t->copies[g]);
        t->copies[g].process_id = o->process_id;
        snprintf(t->copies[g].kind, sizeof t->copies[g].kind, "%s", kind);
        t->copy_groups++;
    }
    struct timeline_copies *c = &t->copies[g];
    if (o->pageable) {
        c->pageable_count++;
        c->pageable_ns += ns;
        c->pageable_bytes += (double)o->bytes;
        timeline_top_add(&c->pageable_top, o->id, ns);
    }
    if (sync) {
        c->sync_count++;
        c->sync_api_ns += o->api_end - o->api_start;
        c->sync_gpu_ns += ns;
        timeline_top_add(&c->sync_top, o->id, o->api_end - o->api_start);
    }
}

static int on_op(struct pass *p, const struct op *o)
{
    int slot = gpu_slot(p, o->gpu_id);
    struct timeline_gpu *g = &p->t->gpus[slot];
    struct gpu_state *s = &p->gs[slot];
    p->t->ops++;
    if (g->first_start < 0)
        g->first_start = o->start;
    if (o->end > g->last_end)
        g->last_end = o->end;
    if (!s->have_cur) {
        s->cur_start = o->start;
        s->cur_end = o->end;
        s->have_cur = 1;
    } else if (o->start > s->cur_end) {
        add_busy(p->t, g, s->cur_start, s->cur_end);
        if (on_gap(p, slot, s->cur_end, o) < 0)
            return -ENOMEM;
        s->cur_start = o->start;
        s->cur_end = o->end;
    } else if (o->end > s->cur_end) {
        s->cur_end = o->end;
    }
    int64_t ns = o->end - o->start;
    if (o->kind == TIMELINE_KERNEL) {
        g->kernel_ns += ns;
        if (s->max_copy_end > o->start)
            g->copy_compute_overlap_ns +=
                (o->end < s->max_copy_end ? o->end : s->max_copy_end) - o->start;
        if (o->end > s->max_kernel_end)
            s->max_kernel_end = o->end;
        if (on_kernel(p, o) < 0)
            return -ENOMEM;
    } else if (o->kind == TIMELINE_MEMCPY) {
        g->copy_ns += ns;
        if (s->max_kernel_end > o->start)
            g->copy_compute_overlap_ns +=
                (o->end < s->max_kernel_end ? o->end : s->max_kernel_end) - o->start;
        if (o->end > s->max_copy_end)
            s->max_copy_end = o->end;
    }
    if (o->kind != TIMELINE_KERNEL)
        on_copy(p->t, o);
    if (timeline_ranks_op(p->t, &p->ranks, o->process_id, o->gpu_id, o->kind == TIMELINE_KERNEL,
                          o->name_id, o->id, o->start, o->end) < 0)
        return -ENOMEM;
    return on_stream(p, o);
}

/* NULLs become -1 (0 for the range id and smem) in SQL: one sqlite3_column_int64 per value. */
static const char *const op_queries[] = {
    [TIMELINE_KERNEL] =
        "SELECT k.id, COALESCE(k.gpu_id, -1), k.process_id, COALESCE(k.stream, -1), k.start_ns,"
        " k.end_ns, COALESCE(a.start_ns, -1), COALESCE(a.end_ns, -1),"
        " COALESCE(k.nvtx_range_id, 0), COALESCE(k.demangled_id, k.name_id, 0),"
        " COALESCE(k.grid_x * k.grid_y * k.grid_z, -1),"
        " COALESCE(k.block_x * k.block_y * k.block_z, -1), COALESCE(k.regs_per_thread, -1),"
        " COALESCE(k.static_smem, 0) + COALESCE(k.dynamic_smem, 0)"
        " FROM kernels k LEFT JOIN cuda_api a ON a.id = k.api_id ORDER BY k.start_ns",
    [TIMELINE_MEMCPY] =
        "SELECT m.id, COALESCE(m.gpu_id, -1), m.process_id, COALESCE(m.stream, -1),"
        " m.start_ns, m.end_ns, COALESCE(a.start_ns, -1), COALESCE(a.end_ns, -1),"
        " COALESCE(m.nvtx_range_id, 0), COALESCE(m.is_async, -1), m.bytes,"
        " m.src_kind = 'pageable' OR m.dst_kind = 'pageable',"
        " m.src_kind = 'pinned' OR m.dst_kind = 'pinned', COALESCE(m.copy_kind, '?'),"
        " COALESCE(m.src_kind, '?'), COALESCE(m.dst_kind, '?')"
        " FROM memcpys m LEFT JOIN cuda_api a ON a.id = m.api_id ORDER BY m.start_ns",
    [TIMELINE_MEMSET] =
        "SELECT m.id, COALESCE(m.gpu_id, -1), m.process_id, COALESCE(m.stream, -1),"
        " m.start_ns, m.end_ns, COALESCE(a.start_ns, -1), COALESCE(a.end_ns, -1),"
        " COALESCE(m.nvtx_range_id, 0), COALESCE(m.is_async, -1), m.bytes, 0, 0,"
        " 'memset', '', ''"
        " FROM memsets m LEFT JOIN cuda_api a ON a.id = m.api_id ORDER BY m.start_ns",
};

static void read_op(sqlite3_stmt *st, enum timeline_op_kind kind, struct op *o)
{
    int64_t v[14];
    int n = kind == TIMELINE_KERNEL ? 14 : 13; /* copies: then 3 text columns */
    for (int c = 0; c < n; c++)
        v[c] = sqlite3_column_int64(st, c);
    *o = (struct op){.kind = kind,
                     .id = v[0],
                     .gpu_id = v[1],
                     .process_id = v[2],
                     .stream = v[3],
                     .start = v[4],
                     .end = v[5] < v[4] ? v[4] : v[5],
                     .api_start = v[6],
                     .api_end = v[7],
                     .range_id = v[8]};
    if (kind == TIMELINE_KERNEL) {
        o->name_id = v[9];
        o->blocks = v[10];
        o->threads = v[11];
        o->regs = v[12];
        o->smem = v[13];
    } else {
        o->is_async = v[9];
        o->bytes = v[10];
        o->pageable = v[11];
        o->pinned = v[12];
        o->copy_kind = (const char *)sqlite3_column_text(st, 13);
        o->src_kind = (const char *)sqlite3_column_text(st, 14);
        o->dst_kind = (const char *)sqlite3_column_text(st, 15);
    }
}

/* Merges the three ordered queries by start time. */
static int walk(struct pass *p)
{
    sqlite3_stmt *st[3] = {NULL, NULL, NULL};
    struct op head[3];
    int live[3] = {0, 0, 0}, rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++) {
        if (!(st[k] = analyze_prepare(p->ctx, "timeline", op_queries[k])))
            rc = -EIO;
        else if ((live[k] = sqlite3_step(st[k]) == SQLITE_ROW))
            read_op(st[k], (enum timeline_op_kind)k, &head[k]);
    }
    while (rc == 0) {
        int best = -1;
        for (int k = 0; k < 3; k++)
            if (live[k] && (best < 0 || head[k].start < head[best].start))
                best = k;
        if (best < 0)
            break;
        if (on_op(p, &head[best]) < 0) {
            snprintf(p->ctx->error, sizeof p->ctx->error, "timeline: out of memory");
            rc = -ENOMEM;
        }
        if ((live[best] = sqlite3_step(st[best]) == SQLITE_ROW))
            read_op(st[best], (enum timeline_op_kind)best, &head[best]);
    }
    for (int k = 0; k < 3; k++)
        sqlite3_finalize(st[k]);
    return rc;
}

struct analyze_timeline *analyze_timeline(struct analyze_ctx *ctx)
{
    if (ctx->timeline)
        return ctx->timeline;
    struct pass p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.t = calloc(1, sizeof *p.t);
    if (!p.t)
        return NULL;
    p.t->gap_threshold_ns = GPU_IDLE_GAP_NS;
    p.t->want_page = (ctx->flags & ANALYZE_PAGE) != 0;
    p.t->want_host = analyze_query_int(ctx, "SELECT 1 FROM cpu_sampling LIMIT 1", 0) == 1;
    p.t->bin_start = ctx->start_ns;
    p.t->bin_ns = (ctx->duration_ns + TIMELINE_BINS - 1) / TIMELINE_BINS;
    if (p.t->bin_ns < 1)
        p.t->bin_ns = 1;
    int rc = load_gpus(&p);
    if (rc == 0 && (p.t->energy_count = energy_db_load(ctx->db, &p.t->energy)) < 0) {
        p.t->energy_count = 0;
        snprintf(ctx->error, sizeof ctx->error, "timeline: cannot load the power samples");
        rc = -EIO;
    }
    if (rc == 0)
        rc = load_syncs(&p);
    if (rc == 0)
        rc = timeline_ranks_begin(ctx, p.t);
    if (rc == 0)
        rc = walk(&p);
    if (rc == 0)
        rc = timeline_ranks_end(ctx, p.t);
    for (int i = 0; i < p.t->gpu_count; i++) {
        if (rc == 0 && p.gs[i].have_cur)
            add_busy(p.t, &p.t->gpus[i], p.gs[i].cur_start, p.gs[i].cur_end);
        index_release(&p.gs[i].range_index);
    }
    index_release(&p.names);
    index_release(&p.shapes);
    index_release(&p.streams);
    index_release(&p.ranks);
    free(p.sync_start);
    free(p.sync_max_end);
    if (rc < 0) {
        if (!ctx->error[0])
            snprintf(ctx->error, sizeof ctx->error, "timeline: out of memory");
        analyze_timeline_free(p.t);
        return NULL;
    }
    ctx->timeline = p.t;
    return p.t;
}

void analyze_timeline_free(struct analyze_timeline *t)
{
    if (!t)
        return;
    for (int i = 0; t->gpus && i < t->gpu_count; i++) {
        free(t->gpus[i].ranges);
        free(t->gpus[i].iv_start);
        free(t->gpus[i].iv_end);
        free(t->gpus[i].iv_before);
        free(t->gpus[i].host_gaps);
    }
    free(t->gpus);
    energy_db_free(t->energy, t->energy_count);
    free(t->range_energy);
    free(t->lanes);
    free(t->names);
    free(t->shapes);
    free(t->streams);
    timeline_ranks_free(t);
    free(t);
}

const struct energy_track *timeline_energy_track(const struct analyze_timeline *t, int64_t gpu_id)
{
    for (int i = 0; i < t->energy_count; i++)
        if (t->energy[i].gpu_id == gpu_id)
            return &t->energy[i].track;
    return NULL;
}

/* Busy time before instant ts: intervals wholly before it, plus the part of the one that
 * holds it. */
static double busy_before(const struct timeline_gpu *g, int64_t ts)
{
    size_t lo = 0, hi = g->iv_count;
    while (lo < hi) { /* first interval starting at or after ts */
        size_t mid = lo + (hi - lo) / 2;
        if (g->iv_start[mid] < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    size_t i = lo - 1;
    int64_t end = g->iv_end[i] < ts ? g->iv_end[i] : ts;
    return (double)g->iv_before[i] + (double)(end - g->iv_start[i]);
}

double timeline_busy_between(const struct analyze_timeline *t, const struct timeline_gpu *g,
                             int64_t start, int64_t end)
{
    if (end <= start)
        return 0;
    if (!g->iv_overflow)
        return busy_before(g, end) - busy_before(g, start);
    double busy = 0; /* from the bins, each assumed uniformly busy */
    int64_t first = (start - t->bin_start) / t->bin_ns, last = (end - 1 - t->bin_start) / t->bin_ns;
    for (int64_t b = first < 0 ? 0 : first; b <= last && b < TIMELINE_BINS; b++) {
        int64_t s = t->bin_start + b * t->bin_ns, e = s + t->bin_ns;
        int64_t lo = s > start ? s : start, hi = e < end ? e : end;
        if (hi > lo)
            busy += g->bins[b] * (double)(hi - lo) / (double)t->bin_ns;
    }
    return busy;
}

double timeline_delay_quantile(const struct analyze_timeline *t, double q)
{
    if (t->delay_count == 0)
        return -1;
    int64_t want = (int64_t)ceil(q * (double)t->delay_count), seen = 0;
    if (want < 1)
        want = 1;
    for (int b = 0; b < 512; b++) {
        seen += t->delay_hist[b];
        if (seen >= want)
            return bucket_middle(b);
    }
    return -1;
}

static const char *const op_evidence_sql[] = {
    [TIMELINE_KERNEL] = "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, t.tid,"
                        " COALESCE(g.nvml_index, x.device), x.stream, " ANALYZE_RANGE_LABEL ","
                        " COALESCE(kd.value, kn.value, '(unnamed kernel)'), ?2"
                        " FROM kernels x LEFT JOIN strings kd ON kd.id = x.demangled_id"
                        " LEFT JOIN strings kn ON kn.id = x.name_id",
    [TIMELINE_MEMCPY] = "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, t.tid,"
                        " COALESCE(g.nvml_index, x.device), x.stream, " ANALYZE_RANGE_LABEL ","
                        " '[CUDA memcpy ' || COALESCE(x.copy_kind, '?') || ']', ?2"
                        " FROM memcpys x",
    [TIMELINE_MEMSET] = "SELECT x.start_ns, x.end_ns - x.start_ns, p.pid, t.tid,"
                        " COALESCE(g.nvml_index, x.device), x.stream, " ANALYZE_RANGE_LABEL ","
                        " '[CUDA memset]', ?2 FROM memsets x",
};

int timeline_op_evidence(struct analyze_ctx *ctx, struct analyze_finding *f,
                         enum timeline_op_kind kind, int64_t id, const char *detail,
                         int64_t start_ns, int64_t duration_ns)
{
    if (!f)
        return 0;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "%s LEFT JOIN processes p ON p.id = x.process_id"
             " LEFT JOIN cuda_api a ON a.id = x.api_id LEFT JOIN threads t ON t.id = a.thread_id"
             " LEFT JOIN gpus g ON g.id = x.gpu_id" ANALYZE_RANGE_JOINS(
                 "x.nvtx_range_id") " WHERE x.id = ?1",
             op_evidence_sql[kind]);
    sqlite3_stmt *st = analyze_prepare(ctx, "evidence", sql);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, detail, -1, SQLITE_TRANSIENT);
    int before = f->evidence_count;
    int rc = analyze_evidence_from(ctx, f, st);
    sqlite3_finalize(st);
    if (rc == 0 && f->evidence_count > before) {
        struct analyze_evidence *e = &f->evidence[f->evidence_count - 1];
        if (start_ns >= 0)
            e->start_ns = start_ns - ctx->start_ns;
        if (duration_ns >= 0)
            e->duration_ns = duration_ns;
    }
    return rc;
}

struct analyze_timeline *analyze_gpu_work(struct analyze_ctx *ctx, struct analyze_result *res,
                                          int *rc)
{
    struct analyze_timeline *t = analyze_timeline(ctx);
    *rc = t ? 0 : -EIO;
    if (t && t->ops == 0) {
        analyze_note(res, "no GPU work in this database (profile with -t cuda)");
        return NULL;
    }
    return t;
}
