/* `lantern kernels`: loads every kernel, memcpy and memset of a Lantern database, finds the
 * layer and PyTorch op that launched each one from the NVTX ranges open on the launching
 * thread (kernels.nvtx_range_id and its ranges.parent_id chain), matches backward launches to
 * their forward op by autograd sequence number, and attributes each op's FLOPs and bytes
 * (kernels_flops.c) to its main kernel. kernels_output.c prints the rows. */
#include "report/kernels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/kernels_internal.h"

/* One op instance (one range of an op): its kernels, for numbering and attribution. */
struct op_instance {
    int64_t count;                  /* rows so far: the next row's sub */
    int64_t best[KERNELS_PARTS];    /* longest kernel row of each part, -1 none */
    int64_t best_any;               /* longest kernel row overall, -1 none */
    int model_done;
    int split_by_name;              /* dgrad/wgrad kernels carry their own parts */
    int known;
    int is_gemm_like;
    int dtype_assumed;
    int64_t gemm_mnk[3];
    double flops[KERNELS_PARTS], bytes[KERNELS_PARTS];
    const char *params;
};

struct range_node {
    int64_t id, parent_id;
    struct kernels_marker marker;
    const char *user_path; /* USER ranges: the layer path ending in this range */
};

struct report {
    sqlite3 *db;
    sqlite3_stmt *get_string, *get_range;
    struct kernels_arena arena;
    struct kernels_map strings, ranges, contexts, names, forward_by_seq, conv_out_by_seq, ops;
    struct kernels_gpu *gpus;
    size_t gpu_count;
    struct kernels_rows rows;
    size_t row_capacity;
    struct kernels_context empty_context;
};

/* Ranges nest a few levels deep; a longer chain means a damaged database (a cycle). */
#define MAX_RANGE_DEPTH 256

static int64_t seq_key(int64_t process_id, int64_t seq) { return (process_id << 40) ^ seq; }

static int64_t column_int(sqlite3_stmt *st, int col, int64_t unknown)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? unknown : sqlite3_column_int64(st, col);
}

static double column_double(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : sqlite3_column_double(st, col);
}

/* strings.value of id, kept for the whole report; NULL when absent. */
static const char *string_of(struct report *r, int64_t id)
{
    if (id <= 0)
        return NULL;
    const char *s = kernels_map_get(&r->strings, id);
    if (s)
        return s;
    sqlite3_reset(r->get_string);
    sqlite3_bind_int64(r->get_string, 1, id);
    if (sqlite3_step(r->get_string) != SQLITE_ROW)
        return NULL;
    const char *value = (const char *)sqlite3_column_text(r->get_string, 0);
    char *copy = kernels_arena_strndup(&r->arena, value ? value : "", value ? strlen(value) : 0);
    if (!copy || kernels_map_put(&r->strings, id, copy) < 0)
        return NULL;
    return copy;
}

static struct range_node *range_of(struct report *r, int64_t id)
{
    if (id <= 0)
        return NULL;
    struct range_node *node = kernels_map_get(&r->ranges, id);
    if (node)
        return node;
    sqlite3_reset(r->get_range);
    sqlite3_bind_int64(r->get_range, 1, id);
    if (sqlite3_step(r->get_range) != SQLITE_ROW)
        return NULL;
    int64_t parent_id = column_int(r->get_range, 0, 0);
    const char *name = string_of(r, column_int(r->get_range, 1, 0));
    node = kernels_arena_alloc(&r->arena, sizeof *node);
    if (!node)
        return NULL;
    node->id = id;
    node->parent_id = parent_id;
    node->user_path = NULL;
    kernels_marker_parse(name ? name : "", &node->marker);
    if (kernels_map_put(&r->ranges, id, node) < 0)
        return NULL;
    return node;
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
            ctx->dir = KERNELS_DIR_BWD;
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
    struct kernels_context *ctx = kernels_map_get(&r->contexts, range_id);
    if (ctx)
        return ctx;
    ctx = kernels_arena_alloc(&r->arena, sizeof *ctx);
    if (!ctx)
        return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->seq = ctx->altseq = -1;
    walk_chain(r, node, ctx);
    if (kernels_map_put(&r->contexts, range_id, ctx) < 0)
        return NULL;
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
        " peak_tf32_flops, peak_fp64_flops, peak_dram_bytes_per_s FROM gpus";
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
    }
    sqlite3_finalize(st);
    return rc;
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
#define ACTIVITY_COLUMNS                                                                      \
    "x.start_ns, x.end_ns, x.process_id, x.gpu_id, x.device, x.stream,"                     \
    " COALESCE(x.nvtx_range_id, a.nvtx_range_id), t.tid"
#define ACTIVITY_JOIN                                                                         \
    " LEFT JOIN cuda_api a ON a.id = x.api_id LEFT JOIN threads t ON t.id = a.thread_id"

static int load_activity_row(struct report *r, sqlite3_stmt *st, enum kernels_row_kind kind)
{
    struct kernels_row *row = new_row(r);
    if (!row)
        return -ENOMEM;
    row->kind = kind;
    row->start_ns = sqlite3_column_int64(st, 0);
    row->end_ns = sqlite3_column_int64(st, 1);
    row->process_id = column_int(st, 2, 0);
    row->gpu = gpu_of(r, column_int(st, 3, -1));
    row->device = column_int(st, 4, -1);
    row->stream = column_int(st, 5, -1);
    row->range_id = column_int(st, 6, 0);
    row->tid = column_int(st, 7, -1);
    if (kind == KERNELS_ROW_KERNEL) {
        row->name = name_info_of(r, column_int(st, 8, 0));
        if (!row->name)
            return -ENOMEM;
        for (int i = 0; i < 3; i++) {
            row->grid[i] = column_int(st, 9 + i, -1);
            row->block[i] = column_int(st, 12 + i, -1);
        }
        row->regs = column_int(st, 15, -1);
        int64_t static_smem = column_int(st, 16, -1), dynamic_smem = column_int(st, 17, -1);
        row->smem = static_smem < 0 && dynamic_smem < 0 ? -1
                    : (static_smem > 0 ? static_smem : 0) + (dynamic_smem > 0 ? dynamic_smem : 0);
        return 0;
    }
    row->copy_bytes = column_int(st, 8, -1);
    if (kind == KERNELS_ROW_MEMCPY) {
        const char *copy_kind = (const char *)sqlite3_column_text(st, 9);
        row->copy_kind = copy_kind ? kernels_arena_strndup(&r->arena, copy_kind, strlen(copy_kind))
                                   : "na";
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

static int load_rows(struct report *r, int no_memops)
{
    static const char kernels_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.demangled_id, x.name_id), x.grid_x, x.grid_y,"
        " x.grid_z, x.block_x, x.block_y, x.block_z, x.regs_per_thread, x.static_smem,"
        " x.dynamic_smem FROM kernels x" ACTIVITY_JOIN;
    static const char memcpys_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", x.bytes, x.copy_kind FROM memcpys x" ACTIVITY_JOIN;
    static const char memsets_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", x.bytes FROM memsets x" ACTIVITY_JOIN;
    int rc = load_activities(r, kernels_sql, KERNELS_ROW_KERNEL);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memcpys_sql, KERNELS_ROW_MEMCPY);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memsets_sql, KERNELS_ROW_MEMSET);
    if (rc == 0)
        qsort(r->rows.rows, r->rows.count, sizeof *r->rows.rows, compare_rows);
    return rc;
}

/* ---- attribution -------------------------------------------------------------------------- */

static struct op_instance *op_instance_of(struct report *r, int64_t op_range_id)
{
    struct op_instance *inst = kernels_map_get(&r->ops, op_range_id);
    if (inst)
        return inst;
    inst = kernels_arena_alloc(&r->arena, sizeof *inst);
    if (!inst)
        return NULL;
    memset(inst, 0, sizeof *inst);
    inst->best_any = -1;
    for (int p = 0; p < KERNELS_PARTS; p++)
        inst->best[p] = -1;
    if (kernels_map_put(&r->ops, op_range_id, inst) < 0)
        return NULL;
    return inst;
}

static int64_t duration(const struct kernels_row *row) { return row->end_ns - row->start_ns; }

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
        if (ctx->dir == KERNELS_DIR_FWD) {
            for (int s = 0; s < ctx->chain_seq_count; s++) {
                int64_t key = seq_key(row->process_id, ctx->chain_seqs[s]);
                if (!kernels_map_get(&r->forward_by_seq, key) &&
                    kernels_map_put(&r->forward_by_seq, key, (void *)ctx) < 0)
                    return -ENOMEM;
            }
        }
        if (ctx->op && remember_conv_output(r, row) < 0)
            return -ENOMEM;
    }
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
    enum kernels_dtype dtype = inst->best_any >= 0 ? r->rows.rows[inst->best_any].name->dtype
                                                   : KERNELS_DTYPE_UNKNOWN;
    int elem_bytes = kernels_dtype_bytes(dtype);
    inst->dtype_assumed = elem_bytes == 0;
    if (inst->dtype_assumed)
        elem_bytes = 4; /* fp32, marked with '*' in the output */
    struct kernels_shapes shapes = {0};
    int have_shapes = row->ctx->sizes &&
                      kernels_shapes_parse(row->ctx->sizes, row->ctx->sizes_len, &shapes) == 0;
    struct kernels_op_model model;
    kernels_op_model(row->ctx->op, &shapes, elem_bytes, conv_output_of(r, row), &model);
    inst->known = have_shapes && model.known;
    inst->is_gemm_like = model.is_gemm_like;
    memcpy(inst->gemm_mnk, model.gemm_mnk, sizeof inst->gemm_mnk);
    if (inst->known) {
        memcpy(inst->flops, model.flops, sizeof inst->flops);
        memcpy(inst->bytes, model.bytes, sizeof inst->bytes);
    }
    inst->split_by_name = model.split && (inst->best[KERNELS_PART_DGRAD] >= 0 ||
                                          inst->best[KERNELS_PART_WGRAD] >= 0);
    char params[160];
    if (!have_shapes)
        snprintf(params, sizeof params, "%s", kernels_dtype_name(dtype));
    else
        snprintf(params, sizeof params, "%s%s%s", model.params, model.params[0] ? "," : "",
                 kernels_dtype_name(dtype));
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
    row->dtype_assumed = part >= 0 && inst->dtype_assumed && row->bytes > 0;
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
            const struct kernels_context *fwd =
                kernels_map_get(&r->forward_by_seq, seq_key(row->process_id, ctx->seq));
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
        struct kernels_hint_input grid_hint = {
            .blocks = row->grid[0] < 0 ? -1 : blocks, .sm_count = row->gpu ? row->gpu->sm_count : -1};
        row->hints = kernels_hints(&grid_hint);
        if (!ctx->op_range_id)
            continue;
        struct op_instance *inst = kernels_map_get(&r->ops, ctx->op_range_id);
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
    sqlite3_finalize(r->get_range);
    struct kernels_map *maps[] = {&r->strings, &r->ranges, &r->contexts, &r->names,
                                  &r->forward_by_seq, &r->conv_out_by_seq, &r->ops};
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
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &r.get_string,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT parent_id, name_id FROM ranges WHERE id = ?", -1,
                           &r.get_range, NULL) != SQLITE_OK)
        goto fail;
    if ((rc = load_gpus(&r)) < 0 || (rc = load_rows(&r, opt->no_memops)) < 0)
        goto fail;
    if ((rc = attribute_first_pass(&r)) < 0 || (rc = attribute_second_pass(&r)) < 0)
        goto fail;
    rc = kernels_output_write(&r.rows, opt, out);
fail:
    report_release(&r);
    return rc;
}
