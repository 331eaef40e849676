/* `lantern kernels`: loads every kernel, memcpy and memset of a Lantern database, finds the
 * layer and PyTorch op that launched each one from the NVTX ranges open on the launching
 * thread (kernels.nvtx_range_id and its ranges.parent_id chain), matches backward launches to
 * their forward op by autograd sequence number, and attributes each op's FLOPs and bytes
 * (kernels_flops.c) to its main kernel. kernels_output.c prints the rows. */
#include "report/kernels.h"
#include "common/gpu_peaks.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/kernels_internal.h"

/* One op instance (one range of an op): its kernels, for numbering and attribution. */
struct op_instance {
    int64_t count;               /* rows so far: the next row's sub */
    int64_t best[KERNELS_PARTS]; /* longest kernel row of each part, -1 none */
    int64_t best_any;            /* longest kernel row overall, -1 none */
    int model_done;
    int split_by_name; /* dgrad/wgrad kernels carry their own parts */
    int known;
    int is_gemm_like;
    int dtype_assumed;
    enum kernels_dtype dtype; /* of the main kernel, or assumed */
    int64_t gemm_mnk[3];
    double flops[KERNELS_PARTS], bytes[KERNELS_PARTS];
    const char *params;
};

/* Forward launches by autograd sequence number, for backward rows: entries in row order, then
 * sorted by (process, seq) (stable, so the first forward launch of a seq comes first). */
struct forward_entry {
    int64_t process_id, seq;
    size_t order;
    const struct kernels_context *ctx;
};

struct forward_index {
    struct forward_entry *entries;
    size_t count, capacity;
};

struct range_node {
    int64_t id, parent_id;
    struct kernels_marker marker;
    const char *user_path;           /* USER ranges: the layer path ending in this range */
    struct kernels_context *context; /* launches whose innermost range this is */
    struct op_instance *op_instance; /* OP ranges with launches: the instance */
    int64_t engine_seq; /* ENGINE ranges: the seq of the node they evaluate, -1 unknown */
};

/* Every push/pop range's id and parent, sorted by id (two columns read in one scan, far
 * cheaper than a query per range); nodes[] holds the parsed name of the ranges some launch
 * sits in, NULL for the others. */
struct range_table {
    int64_t *ids, *parents;
    struct range_node **nodes;
    size_t count;
    /* The importer numbers ranges densely, so id - first_id indexes `direct` (-1: no such
     * range); NULL when the ids are too sparse, and range_index searches instead. */
    int32_t *direct;
    int64_t first_id, span;
};

struct report {
    sqlite3 *db;
    sqlite3_stmt *get_string;
    struct kernels_arena arena;
    struct range_table ranges;
    struct kernels_map names, conv_out_by_seq, last_dtype;
    struct forward_index forward; /* forward launches by (process, seq) */
    struct kernels_map tids;      /* threads.id -> OS tid (stored as tid + 1, 0 being "absent") */
    struct kernels_map traces;    /* strings.id of a launch's backtrace -> its text */
    struct kernels_gpu *gpus;
    size_t gpu_count;
    struct kernels_rows rows;
    size_t row_capacity;
    struct kernels_context empty_context;
};

/* Ranges nest a few levels deep; a longer chain means a damaged database (a cycle). */
#define MAX_RANGE_DEPTH 256

static int64_t seq_key(int64_t process_id, int64_t seq)
{
    return (process_id << 40) ^ seq;
}

static int64_t column_int(sqlite3_stmt *st, int col, int64_t unknown)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? unknown : sqlite3_column_int64(st, col);
}

static double column_double(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : sqlite3_column_double(st, col);
}

/* strings.value of id, copied into the arena; NULL when absent. Called once per kernel name
 * (name_info_of remembers the rest). */
static const char *string_of(struct report *r, int64_t id)
{
    if (id <= 0)
        return NULL;
    sqlite3_reset(r->get_string);
    sqlite3_bind_int64(r->get_string, 1, id);
    if (sqlite3_step(r->get_string) != SQLITE_ROW)
        return NULL;
    const char *value = (const char *)sqlite3_column_text(r->get_string, 0);
    return kernels_arena_strndup(&r->arena, value ? value : "", value ? strlen(value) : 0);
}

/* Index of range id in the table, or -1. */
static ptrdiff_t range_index(const struct range_table *t, int64_t id)
{
    if (t->direct)
        return id < t->first_id || id - t->first_id >= t->span ? -1 : t->direct[id - t->first_id];
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->count && t->ids[lo] == id ? (ptrdiff_t)lo : -1;
}

static struct range_node *range_of(struct report *r, int64_t id)
{
    ptrdiff_t i = range_index(&r->ranges, id);
    return i < 0 ? NULL : r->ranges.nodes[i];
}

static int load_range_ids(struct report *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, parent_id FROM ranges ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    struct range_table *t = &r->ranges;
    size_t capacity = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (t->count == capacity) {
            capacity = capacity ? capacity * 2 : 4096;
            int64_t *ids = realloc(t->ids, capacity * sizeof *ids);
            if (ids)
                t->ids = ids;
            int64_t *parents = realloc(t->parents, capacity * sizeof *parents);
            if (parents)
                t->parents = parents;
            if (!ids || !parents) {
                rc = -ENOMEM;
                break;
            }
        }
        t->ids[t->count] = sqlite3_column_int64(st, 0);
        t->parents[t->count++] = column_int(st, 1, 0);
    }
    sqlite3_finalize(st);
    if (rc == 0 && !(t->nodes = calloc(t->count ? t->count : 1, sizeof *t->nodes)))
        rc = -ENOMEM;
    if (rc == 0 && t->count > 0 && t->count < INT32_MAX) {
        t->first_id = t->ids[0];
        t->span = t->ids[t->count - 1] - t->first_id + 1;
        if (t->span <= 2 * (int64_t)t->count && (t->direct = malloc((size_t)t->span * 4))) {
            memset(t->direct, 0xff, (size_t)t->span * 4); /* -1 everywhere */
            for (size_t k = 0; k < t->count; k++)
                t->direct[t->ids[k] - t->first_id] = (int32_t)k;
        }
    }
    return rc;
}

/* Marks (with a placeholder node) the ranges open at some launch: each row's innermost range
 * and its ancestors. */
static struct range_node needed_marker;

static void mark_needed_ranges(struct report *r)
{
    struct range_table *t = &r->ranges;
    for (size_t i = 0; i < r->rows.count; i++) {
        int64_t id = r->rows.rows[i].range_id;
        for (int depth = 0; id > 0 && depth < MAX_RANGE_DEPTH; depth++) {
            ptrdiff_t k = range_index(t, id);
            if (k < 0 || t->nodes[k])
                break;
            t->nodes[k] = &needed_marker;
            id = t->parents[k];
        }
    }
}

/* Reads and parses the names of the marked ranges, in one scan. */
static int load_range_names(struct report *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT r.id, s.value FROM ranges r LEFT JOIN strings s"
                           " ON s.id = r.name_id ORDER BY r.id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct range_table *t = &r->ranges;
    int rc = 0;
    for (size_t k = 0; sqlite3_step(st) == SQLITE_ROW;) {
        int64_t id = sqlite3_column_int64(st, 0);
        while (k < t->count && t->ids[k] < id)
            k++;
        if (k == t->count || t->ids[k] != id || t->nodes[k] != &needed_marker)
            continue;
        /* range names are nearly all distinct (emit_nvtx puts seq and shapes in them):
         * copied here rather than kept in the strings map */
        const char *value = (const char *)sqlite3_column_text(st, 1);
        size_t len = value ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        struct range_node *node = kernels_arena_alloc(&r->arena, sizeof *node);
        char *name = kernels_arena_strndup(&r->arena, value ? value : "", len);
        if (!node || !name) {
            rc = -ENOMEM;
            break;
        }
        node->id = id;
        node->parent_id = t->parents[k];
        node->user_path = NULL;
        node->context = NULL;
        node->op_instance = NULL;
        node->engine_seq = -1;
        kernels_marker_parse(name, &node->marker);
        t->nodes[k] = node;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The layer path of a user range: the enclosing user ranges' names, outermost first. */
static const char *user_path(struct report *r, struct range_node *node, int depth)
{
    if (node->user_path || depth > MAX_RANGE_DEPTH)
        return node->user_path;
    const char *outer = NULL;
    for (struct range_node *p = range_of(r, node->parent_id); p && depth < MAX_RANGE_DEPTH;
         p = range_of(r, p->parent_id), depth++) {
        if (p->marker.kind == KERNELS_RANGE_USER) {
            outer = user_path(r, p, depth + 1);
            break;
        }
    }
    size_t outer_len = outer ? strlen(outer) + 1 : 0, len = node->marker.name_len;
    char *path = kernels_arena_alloc(&r->arena, outer_len + len + 1);
    if (!path)
        return NULL;
    if (outer) {
        memcpy(path, outer, outer_len - 1);
        path[outer_len - 1] = '/';
    }
    memcpy(path + outer_len, node->marker.name, len);
    path[outer_len + len] = '\0';
    node->user_path = path;
    return path;
}

static const char *marker_name(struct report *r, const struct kernels_marker *m, size_t skip)
{
    return kernels_arena_strndup(&r->arena, m->name + skip, m->name_len - skip);
}

/* Walks the chain of ranges open at a launch, innermost first (docs/kernels.md, "Attribution"). */
static int walk_chain(struct report *r, struct range_node *node, struct kernels_context *ctx)
{
    int64_t innermost_seq = -1, outermost_seq = -1, node_seq = -1;
    for (int depth = 0; node && depth < MAX_RANGE_DEPTH;
         node = range_of(r, node->parent_id), depth++) {
        const struct kernels_marker *m = &node->marker;
        switch (m->kind) {
        case KERNELS_RANGE_OP:
            if (!ctx->op) {
                size_t skip = strncmp(m->name, "aten::", 6) == 0 ? 6 : 0;
                ctx->op = marker_name(r, m, skip);
                ctx->op_range_id = node->id;
                ctx->sizes = m->sizes;
                ctx->sizes_len = m->sizes_len;
            }
            if (m->seq >= 0) {
                if (innermost_seq < 0)
                    innermost_seq = m->seq;
                outermost_seq = m->seq;
                if (ctx->chain_seq_count < KERNELS_CHAIN_SEQS)
                    ctx->chain_seqs[ctx->chain_seq_count++] = m->seq;
            }
            break;
        case KERNELS_RANGE_BACKWARD:
            if (!ctx->node) {
                ctx->node = marker_name(r, m, 0);
                node_seq = m->seq;
            }
            ctx->dir = KERNELS_DIR_BWD;
            break;
        case KERNELS_RANGE_ENGINE:
            /* The engine also launches work of its own for a node outside the node's range
             * (summing a gradient to its input's shape, accumulating gradients): that work
             * gets the node's name from this range and its seq from a launch inside it. */
            ctx->dir = KERNELS_DIR_BWD;
            if (node_seq >= 0 && node->engine_seq < 0)
                node->engine_seq = node_seq;
            if (!ctx->node) {
                ctx->node = marker_name(r, m, 0);
                node_seq = node->engine_seq;
            }
            break;
        case KERNELS_RANGE_OPTIMIZER:
            if (ctx->dir == KERNELS_DIR_NA)
                ctx->dir = KERNELS_DIR_OPT;
            break;
        case KERNELS_RANGE_USER:
            if (!ctx->layer) {
                ctx->layer = user_path(r, node, depth);
                ctx->mod = marker_name(r, m, 0);
            }
            break;
        }
    }
    if (ctx->dir == KERNELS_DIR_NA && ctx->op)
        ctx->dir = KERNELS_DIR_FWD;
    if (ctx->dir == KERNELS_DIR_BWD) {
        ctx->seq = node_seq;
    } else {
        ctx->seq = innermost_seq;
        if (outermost_seq != innermost_seq)
            ctx->altseq = outermost_seq;
    }
    return 0;
}

static const struct kernels_context *context_of(struct report *r, int64_t range_id)
{
    struct range_node *node = range_of(r, range_id);
    if (!node)
        return &r->empty_context;
    if (node->context)
        return node->context;
    struct kernels_context *ctx = kernels_arena_alloc(&r->arena, sizeof *ctx);
    if (!ctx)
        return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->seq = ctx->altseq = -1;
    walk_chain(r, node, ctx);
    node->context = ctx;
    return ctx;
}

static const struct kernels_name_info *name_info_of(struct report *r, int64_t name_id)
{
    struct kernels_name_info *info = kernels_map_get(&r->names, name_id);
    if (info)
        return info;
    const char *name = string_of(r, name_id);
    info = kernels_arena_alloc(&r->arena, sizeof *info);
    if (!info)
        return NULL;
    if (!name)
        name = "na";
    char short_name[4096];
    kernels_name_short(name, short_name, sizeof short_name);
    info->short_name = kernels_arena_strndup(&r->arena, short_name, strlen(short_name));
    info->dtype = kernels_name_dtype(name);
    info->tc = kernels_name_tensor_cores(name);
    info->part = kernels_name_part(name);
    if (!info->short_name || kernels_map_put(&r->names, name_id, info) < 0)
        return NULL;
    return info;
}

/* A launch's backtrace (cuda_api.backtrace_id): a loop repeats a few stacks, read once each. */
static const char *trace_of(struct report *r, int64_t backtrace_id)
{
    if (backtrace_id <= 0)
        return NULL;
    const char *trace = kernels_map_get(&r->traces, backtrace_id);
    if (trace)
        return trace;
    trace = string_of(r, backtrace_id);
    if (trace && kernels_map_put(&r->traces, backtrace_id, (void *)trace) < 0)
        return NULL;
    return trace;
}

/* ---- loading ------------------------------------------------------------------------------ */

static const struct kernels_gpu *gpu_of(const struct report *r, int64_t gpu_id)
{
    for (size_t i = 0; i < r->gpu_count; i++)
        if (r->gpus[i].id == gpu_id)
            return &r->gpus[i];
    return NULL;
}

static int load_gpus(struct report *r)
{
    static const char sql[] =
        "SELECT id, sm_count, cc_major, max_threads_per_sm, max_regs_per_sm, max_smem_per_sm,"
        " max_blocks_per_sm, peak_fp32_flops, peak_fp16_flops, peak_bf16_flops,"
        " peak_tf32_flops, peak_fp64_flops, peak_dram_bytes_per_s, cc_minor, sm_clock_khz"
        " FROM gpus";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct kernels_gpu *grown = realloc(r->gpus, (r->gpu_count + 1) * sizeof *grown);
        if (!grown) {
            rc = -ENOMEM;
            break;
        }
        r->gpus = grown;
        struct kernels_gpu *g = &r->gpus[r->gpu_count++];
        g->id = column_int(st, 0, -1);
        g->sm_count = column_int(st, 1, -1);
        g->sm.cc_major = (int)column_int(st, 2, -1);
        g->sm.max_threads_per_sm = column_int(st, 3, -1);
        g->sm.max_regs_per_sm = column_int(st, 4, -1);
        g->sm.max_smem_per_sm = column_int(st, 5, -1);
        g->sm.max_blocks_per_sm = column_int(st, 6, -1);
        g->peak_fp32 = column_double(st, 7);
        g->peak_fp16 = column_double(st, 8);
        g->peak_bf16 = column_double(st, 9);
        g->peak_tf32 = column_double(st, 10);
        g->peak_fp64 = column_double(st, 11);
        g->peak_dram = column_double(st, 12);
        /* FLOP peaks computed from the row (common/gpu_peaks.h); the stored ones only where
         * the row lacks the compute capability, SM count or clock (a hand-written database) */
        struct gpu_peaks p;
        if (gpu_peaks_flops(column_int(st, 2, 0), column_int(st, 13, 0), column_int(st, 1, 0),
                            column_int(st, 14, 0), &p)) {
            g->peak_fp32 = p.fp32;
            g->peak_fp16 = p.fp16;
            g->peak_bf16 = p.bf16;
            g->peak_tf32 = p.tf32;
            g->peak_fp64 = p.fp64;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The threads table is small: read once, so the row query needs no join for the tid. */
static int load_threads(struct report *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, tid FROM threads WHERE tid IS NOT NULL", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = kernels_map_put(&r->tids, sqlite3_column_int64(st, 0),
                             (void *)(intptr_t)(sqlite3_column_int64(st, 1) + 1));
    sqlite3_finalize(st);
    return rc;
}

static int64_t tid_of(const struct report *r, int64_t thread_id)
{
    return (int64_t)(intptr_t)kernels_map_get(&r->tids, thread_id) - 1;
}

static struct kernels_row *new_row(struct report *r)
{
    if (r->rows.count == r->row_capacity) {
        size_t capacity = r->row_capacity ? r->row_capacity * 2 : 4096;
        struct kernels_row *grown = realloc(r->rows.rows, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        r->rows.rows = grown;
        r->row_capacity = capacity;
    }
    struct kernels_row *row = &r->rows.rows[r->rows.count++];
    memset(row, 0, sizeof *row);
    for (int i = 0; i < 3; i++)
        row->grid[i] = row->block[i] = -1;
    row->regs = row->smem = row->copy_bytes = -1;
    row->sub = -1;
    row->flops = row->bytes = -1;
    return row;
}

/* Columns 0-7 of every activity query; the launching thread comes from the API call. */
/* NULLs become -1 (or 0 for ids) in SQL: one column call per value instead of two. */
#define ACTIVITY_COLUMNS                                                                           \
    "x.start_ns, x.end_ns, COALESCE(x.process_id, 0), COALESCE(x.gpu_id, -1),"                     \
    " COALESCE(x.device, -1), COALESCE(x.stream, -1),"                                             \
    " COALESCE(x.nvtx_range_id, a.nvtx_range_id, 0), COALESCE(a.thread_id, 0)"
#define ACTIVITY_JOIN " LEFT JOIN cuda_api a ON a.id = x.api_id"
/* The last column of every activity query. */
#define ACTIVITY_TRACE_COLUMN ", COALESCE(a.backtrace_id, 0)"

static int load_activity_row(struct report *r, sqlite3_stmt *st, enum kernels_row_kind kind)
{
    struct kernels_row *row = new_row(r);
    if (!row)
        return -ENOMEM;
    row->kind = kind;
    row->start_ns = sqlite3_column_int64(st, 0);
    row->end_ns = sqlite3_column_int64(st, 1);
    row->process_id = sqlite3_column_int64(st, 2);
    row->gpu = gpu_of(r, sqlite3_column_int64(st, 3));
    row->device = sqlite3_column_int64(st, 4);
    row->stream = sqlite3_column_int64(st, 5);
    row->range_id = sqlite3_column_int64(st, 6);
    row->tid = tid_of(r, sqlite3_column_int64(st, 7));
    row->trace = trace_of(r, sqlite3_column_int64(st, sqlite3_column_count(st) - 1));
    if (kind == KERNELS_ROW_KERNEL) {
        row->name = name_info_of(r, sqlite3_column_int64(st, 8));
        if (!row->name)
            return -ENOMEM;
        for (int i = 0; i < 3; i++) {
            row->grid[i] = sqlite3_column_int64(st, 9 + i);
            row->block[i] = sqlite3_column_int64(st, 12 + i);
        }
        row->regs = sqlite3_column_int64(st, 15);
        int64_t static_smem = sqlite3_column_int64(st, 16);
        int64_t dynamic_smem = sqlite3_column_int64(st, 17);
        row->smem = static_smem < 0 && dynamic_smem < 0 ? -1
                                                        : (static_smem > 0 ? static_smem : 0) +
                                                              (dynamic_smem > 0 ? dynamic_smem : 0);
        return 0;
    }
    row->copy_bytes = sqlite3_column_int64(st, 8);
    if (kind == KERNELS_ROW_MEMCPY) {
        const char *copy_kind = (const char *)sqlite3_column_text(st, 9);
        row->copy_kind =
            copy_kind ? kernels_arena_strndup(&r->arena, copy_kind, strlen(copy_kind)) : "na";
        if (!row->copy_kind)
            return -ENOMEM;
    }
    return 0;
}

static int load_activities(struct report *r, const char *sql, enum kernels_row_kind kind)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = load_activity_row(r, st, kind);
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int compare_rows(const void *a, const void *b)
{
    const struct kernels_row *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* Sizes the row array once: growing a million rows by doubling copies them all twice. */
static int reserve_rows(struct report *r, int no_memops)
{
    sqlite3_stmt *st;
    const char *sql = no_memops
                          ? "SELECT count(*) FROM kernels"
                          : "SELECT (SELECT count(*) FROM kernels) +"
                            " (SELECT count(*) FROM memcpys) + (SELECT count(*) FROM memsets)";
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int64_t count = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (count <= 0)
        return 0;
    struct kernels_row *rows = malloc((size_t)count * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    r->rows.rows = rows;
    r->row_capacity = (size_t)count;
    return 0;
}

static int load_rows(struct report *r, int no_memops)
{
    static const char kernels_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.demangled_id, x.name_id, 0),"
        " COALESCE(x.grid_x, -1), COALESCE(x.grid_y, -1), COALESCE(x.grid_z, -1),"
        " COALESCE(x.block_x, -1), COALESCE(x.block_y, -1), COALESCE(x.block_z, -1),"
        " COALESCE(x.regs_per_thread, -1), COALESCE(x.static_smem, -1),"
        " COALESCE(x.dynamic_smem, -1)" ACTIVITY_TRACE_COLUMN " FROM kernels x" ACTIVITY_JOIN;
    static const char memcpys_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.bytes, -1), x.copy_kind" ACTIVITY_TRACE_COLUMN
        " FROM memcpys x" ACTIVITY_JOIN;
    static const char memsets_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.bytes, -1)" ACTIVITY_TRACE_COLUMN
        " FROM memsets x" ACTIVITY_JOIN;
    int rc = reserve_rows(r, no_memops);
    if (rc == 0)
        rc = load_activities(r, kernels_sql, KERNELS_ROW_KERNEL);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memcpys_sql, KERNELS_ROW_MEMCPY);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memsets_sql, KERNELS_ROW_MEMSET);
    if (rc == 0 && r->rows.count > 1) /* qsort's base must not be NULL, even for 0 rows */
        qsort(r->rows.rows, r->rows.count, sizeof *r->rows.rows, compare_rows);
    return rc;
}

/* ---- attribution -------------------------------------------------------------------------- */

static struct op_instance *op_instance_of(struct report *r, int64_t op_range_id)
{
    struct range_node *node = range_of(r, op_range_id);
    if (node->op_instance)
        return node->op_instance;
    struct op_instance *inst = kernels_arena_alloc(&r->arena, sizeof *inst);
    if (!inst)
        return NULL;
    memset(inst, 0, sizeof *inst);
    inst->best_any = -1;
    for (int p = 0; p < KERNELS_PARTS; p++)
        inst->best[p] = -1;
    node->op_instance = inst;
    return inst;
}

static int64_t duration(const struct kernels_row *row)
{
    return row->end_ns - row->start_ns;
}

static int is_longer(const struct kernels_rows *rows, int64_t candidate, int64_t best)
{
    return best < 0 || duration(&rows->rows[candidate]) > duration(&rows->rows[best]);
}

/* A forward convolution's output shape is not among its inputs: the grad_output of its
 * convolution_backward (same autograd sequence number) has it. */
static int remember_conv_output(struct report *r, const struct kernels_row *row)
{
    const struct kernels_context *ctx = row->ctx;
    if (ctx->dir != KERNELS_DIR_BWD || ctx->seq < 0 || !ctx->sizes ||
        strcmp(ctx->op, "convolution_backward") != 0)
        return 0;
    int64_t key = seq_key(row->process_id, ctx->seq);
    if (kernels_map_get(&r->conv_out_by_seq, key))
        return 0;
    struct kernels_shapes shapes;
    if (kernels_shapes_parse(ctx->sizes, ctx->sizes_len, &shapes) < 0 || shapes.count < 1)
        return 0;
    struct kernels_conv_output *out = kernels_arena_alloc(&r->arena, sizeof *out);
    if (!out)
        return -ENOMEM;
    out->ndims = shapes.ndims[0];
    memcpy(out->dims, shapes.dims[0], sizeof out->dims);
    return kernels_map_put(&r->conv_out_by_seq, key, out);
}

static int forward_add(struct report *r, const struct kernels_row *row)
{
    struct forward_index *f = &r->forward;
    for (int s = 0; s < row->ctx->chain_seq_count; s++) {
        if (f->count == f->capacity) {
            size_t capacity = f->capacity ? f->capacity * 2 : 1024;
            struct forward_entry *grown = realloc(f->entries, capacity * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            f->entries = grown;
            f->capacity = capacity;
        }
        f->entries[f->count] =
            (struct forward_entry){row->process_id, row->ctx->chain_seqs[s], f->count, row->ctx};
        f->count++;
    }
    return 0;
}

static int compare_forward(const void *a, const void *b)
{
    const struct forward_entry *x = a, *y = b;
    if (x->process_id != y->process_id)
        return x->process_id < y->process_id ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* The forward launch a backward node's seq points at: the first one with that seq or, when
 * the forward op launched nothing (views, selects), the last one before it, the op that ran
 * just before it in the forward pass. NULL when the process has none before. */
static const struct kernels_context *forward_of(const struct report *r, int64_t process_id,
                                                int64_t seq)
{
    const struct forward_index *f = &r->forward;
    size_t lo = 0, hi = f->count;
    while (lo < hi) { /* first entry >= (process_id, seq) */
        size_t mid = lo + (hi - lo) / 2;
        const struct forward_entry *e = &f->entries[mid];
        if (e->process_id < process_id || (e->process_id == process_id && e->seq < seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->count && f->entries[lo].process_id == process_id && f->entries[lo].seq == seq)
        return f->entries[lo].ctx;
    if (lo > 0 && f->entries[lo - 1].process_id == process_id)
        return f->entries[lo - 1].ctx;
    return NULL;
}

/* Kernels whose names do not give their dtype (cuBLAS's nvjet GEMMs) are assumed to work on
 * the dtype of the last earlier kernel of the process whose name does: in a bf16 model the
 * elementwise kernels around a GEMM say bf16. Such figures are marked assumed. */
static int remember_dtype(struct report *r, struct kernels_row *row)
{
    int64_t last = (int64_t)(intptr_t)kernels_map_get(&r->last_dtype, row->process_id);
    row->assumed_dtype = (enum kernels_dtype)last;
    if (row->name->dtype == KERNELS_DTYPE_UNKNOWN)
        return 0;
    return kernels_map_put(&r->last_dtype, row->process_id, (void *)(intptr_t)row->name->dtype);
}

/* First pass, in start order: contexts, numbering within ops, main-kernel candidates, and
 * the forward ops by sequence number. */
static int attribute_first_pass(struct report *r)
{
    for (size_t i = 0; i < r->rows.count; i++) {
        struct kernels_row *row = &r->rows.rows[i];
        row->ctx = context_of(r, row->range_id);
        if (!row->ctx)
            return -ENOMEM;
        const struct kernels_context *ctx = row->ctx;
        if (ctx->op_range_id) {
            struct op_instance *inst = op_instance_of(r, ctx->op_range_id);
            if (!inst)
                return -ENOMEM;
            row->sub = inst->count++;
            if (row->kind == KERNELS_ROW_KERNEL) {
                enum kernels_part part = row->name->part;
                if (is_longer(&r->rows, (int64_t)i, inst->best[part]))
                    inst->best[part] = (int64_t)i;
                if (is_longer(&r->rows, (int64_t)i, inst->best_any))
                    inst->best_any = (int64_t)i;
            }
        }
        if (ctx->dir == KERNELS_DIR_FWD && ctx->layer && forward_add(r, row) < 0)
            return -ENOMEM;
        if (ctx->op && remember_conv_output(r, row) < 0)
            return -ENOMEM;
        if (row->kind == KERNELS_ROW_KERNEL && remember_dtype(r, row) < 0)
            return -ENOMEM;
    }
    if (r->forward.count > 1)
        qsort(r->forward.entries, r->forward.count, sizeof *r->forward.entries, compare_forward);
    return 0;
}

static const struct kernels_conv_output *conv_output_of(struct report *r,
                                                        const struct kernels_row *row)
{
    for (int s = 0; s < row->ctx->chain_seq_count; s++) {
        int64_t key = seq_key(row->process_id, row->ctx->chain_seqs[s]);
        const struct kernels_conv_output *out = kernels_map_get(&r->conv_out_by_seq, key);
        if (out)
            return out;
    }
    return NULL;
}

/* The op's model, computed once per instance with its main kernel's dtype. */
static int model_instance(struct report *r, struct op_instance *inst, const struct kernels_row *row)
{
    inst->model_done = 1;
    for (int p = 0; p < KERNELS_PARTS; p++)
        inst->flops[p] = inst->bytes[p] = -1;
    const struct kernels_row *main_row = inst->best_any >= 0 ? &r->rows.rows[inst->best_any] : NULL;
    enum kernels_dtype dtype = main_row ? main_row->name->dtype : KERNELS_DTYPE_UNKNOWN;
    inst->dtype_assumed = dtype == KERNELS_DTYPE_UNKNOWN;
    if (inst->dtype_assumed && main_row)
        dtype = main_row->assumed_dtype;
    if (kernels_dtype_bytes(dtype) == 0) /* no earlier kernel said either */
        dtype = KERNELS_DTYPE_FP32;
    inst->dtype = dtype;
    int elem_bytes = kernels_dtype_bytes(dtype);
    struct kernels_shapes shapes = {0};
    int have_shapes =
        row->ctx->sizes && kernels_shapes_parse(row->ctx->sizes, row->ctx->sizes_len, &shapes) == 0;
    struct kernels_op_model model;
    kernels_op_model(row->ctx->op, &shapes, elem_bytes, conv_output_of(r, row), &model);
    inst->known = have_shapes && model.known;
    inst->is_gemm_like = model.is_gemm_like;
    memcpy(inst->gemm_mnk, model.gemm_mnk, sizeof inst->gemm_mnk);
    if (inst->known) {
        memcpy(inst->flops, model.flops, sizeof inst->flops);
        memcpy(inst->bytes, model.bytes, sizeof inst->bytes);
    }
    inst->split_by_name =
        model.split && (inst->best[KERNELS_PART_DGRAD] >= 0 || inst->best[KERNELS_PART_WGRAD] >= 0);
    char params[160];
    const char *assumed = inst->dtype_assumed ? "*" : "";
    if (!have_shapes)
        snprintf(params, sizeof params, "%s%s", kernels_dtype_name(dtype), assumed);
    else
        snprintf(params, sizeof params, "%s%s%s%s", model.params, model.params[0] ? "," : "",
                 kernels_dtype_name(dtype), assumed);
    inst->params = kernels_arena_strndup(&r->arena, params, strlen(params));
    return inst->params ? 0 : -ENOMEM;
}

/* The op's figures this row carries: a part for its main kernel(s), 0 for its other
 * kernels, unknown (-1) when the op has no model. */
static void attribute_figures(const struct op_instance *inst, struct kernels_row *row,
                              int64_t index)
{
    if (!inst->known)
        return;
    int part = -1;
    if (inst->split_by_name) {
        if (index == inst->best[KERNELS_PART_DGRAD])
            part = KERNELS_PART_DGRAD;
        else if (index == inst->best[KERNELS_PART_WGRAD])
            part = KERNELS_PART_WGRAD;
    } else if (index == inst->best_any) {
        part = KERNELS_PART_ALL;
    }
    row->flops = part >= 0 ? inst->flops[part] : 0;
    row->bytes = part >= 0 ? inst->bytes[part] : 0;
    if (part >= 0) {
        row->dtype = inst->dtype;
        row->dtype_assumed = inst->dtype_assumed;
    }
    if (part >= 0) {
        struct kernels_hint_input hint = {
            .is_gemm_like = inst->is_gemm_like, .dtype = row->name->dtype, .tc = row->name->tc};
        memcpy(hint.gemm_mnk, inst->gemm_mnk, sizeof hint.gemm_mnk);
        row->hints |= kernels_hints(&hint);
    }
}

static int attribute_second_pass(struct report *r)
{
    for (size_t i = 0; i < r->rows.count; i++) {
        struct kernels_row *row = &r->rows.rows[i];
        const struct kernels_context *ctx = row->ctx;
        row->layer = ctx->layer;
        row->mod = ctx->mod;
        if (ctx->dir == KERNELS_DIR_BWD && ctx->seq >= 0) {
            const struct kernels_context *fwd = forward_of(r, row->process_id, ctx->seq);
            if (fwd && fwd->layer) {
                row->layer = fwd->layer;
                row->mod = fwd->mod;
            }
        }
        if (row->kind != KERNELS_ROW_KERNEL) {
            row->flops = 0;
            row->bytes = (double)row->copy_bytes;
            continue;
        }
        row->dtype = row->name->dtype;
        int64_t blocks = row->grid[0] * row->grid[1] * row->grid[2];
        struct kernels_hint_input grid_hint = {.blocks = row->grid[0] < 0 ? -1 : blocks,
                                               .sm_count = row->gpu ? row->gpu->sm_count : -1};
        row->hints = kernels_hints(&grid_hint);
        if (!ctx->op_range_id)
            continue;
        struct op_instance *inst = range_of(r, ctx->op_range_id)->op_instance;
        if (!inst->model_done && model_instance(r, inst, row) < 0)
            return -ENOMEM;
        row->params = inst->params;
        attribute_figures(inst, row, (int64_t)i);
    }
    return 0;
}

/* ---- the report --------------------------------------------------------------------------- */

static void report_release(struct report *r)
{
    sqlite3_finalize(r->get_string);
    free(r->ranges.ids);
    free(r->ranges.parents);
    free(r->ranges.nodes);
    free(r->ranges.direct);
    free(r->forward.entries);
    struct kernels_map *maps[] = {&r->names, &r->tids, &r->last_dtype, &r->traces,
                                  &r->conv_out_by_seq};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        kernels_map_release(maps[i]);
    kernels_arena_release(&r->arena);
    free(r->gpus);
    free(r->rows.rows);
}

int kernels_report(sqlite3 *db, const struct kernels_options *opt, FILE *out)
{
    const char *bad;
    if (kernels_columns_check(opt->columns, &bad) < 0)
        return -EINVAL;
    struct report r;
    memset(&r, 0, sizeof r);
    r.db = db;
    r.empty_context.seq = r.empty_context.altseq = -1;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &r.get_string, NULL) !=
        SQLITE_OK)
        goto fail;
    if ((rc = load_gpus(&r)) < 0 || (rc = load_threads(&r)) < 0 ||
        (rc = load_rows(&r, opt->no_memops)) < 0)
        goto fail;
    if ((rc = load_range_ids(&r)) < 0)
        goto fail;
    mark_needed_ranges(&r);
    if ((rc = load_range_names(&r)) < 0)
        goto fail;
    if ((rc = attribute_first_pass(&r)) < 0 || (rc = attribute_second_pass(&r)) < 0)
        goto fail;
    rc = kernels_output_write(&r.rows, opt, out);
fail:
    report_release(&r);
    return rc;
}
