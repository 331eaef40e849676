/* Attribution for `lantern kernels` (docs/kernels.md, "Attribution"): the layer and PyTorch
 * op that launched each row, from the NVTX ranges open on the launching thread; backward
 * launches matched to their forward op by autograd sequence number; each op's FLOPs and bytes
 * (kernels_flops.c) put on its main kernel, and the hints (kernels_hints.c). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels_attribute.h"

static int64_t seq_key(int64_t process_id, int64_t seq)
{
    return (process_id << 40) ^ seq;
}

/* The layer path of a user range: the enclosing user ranges' names, outermost first. */
static const char *user_path(struct kernels_state *r, struct kernels_range *node, int depth)
{
    if (node->user_path || depth > KERNELS_MAX_RANGE_DEPTH)
        return node->user_path;
    const char *outer = NULL;
    for (struct kernels_range *p = kernels_range_of(r, node->parent_id);
         p && depth < KERNELS_MAX_RANGE_DEPTH; p = kernels_range_of(r, p->parent_id), depth++) {
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

static const char *marker_name(struct kernels_state *r, const struct kernels_marker *m, size_t skip)
{
    return kernels_arena_strndup(&r->arena, m->name + skip, m->name_len - skip);
}

/* Walks the chain of ranges open at a launch, innermost first (docs/kernels.md, "Attribution"). */
static int walk_chain(struct kernels_state *r, struct kernels_range *node,
                      struct kernels_context *ctx)
{
    int64_t innermost_seq = -1, outermost_seq = -1, node_seq = -1;
    for (int depth = 0; node && depth < KERNELS_MAX_RANGE_DEPTH;
         node = kernels_range_of(r, node->parent_id), depth++) {
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

static const struct kernels_context *context_of(struct kernels_state *r, int64_t range_id)
{
    struct kernels_range *node = kernels_range_of(r, range_id);
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

/* ---- op instances, forward matching, figures --------------------------------------------- */

static struct kernels_op_instance *op_instance_of(struct kernels_state *r, int64_t op_range_id)
{
    struct kernels_range *node = kernels_range_of(r, op_range_id);
    if (node->op_instance)
        return node->op_instance;
    struct kernels_op_instance *inst = kernels_arena_alloc(&r->arena, sizeof *inst);
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
static int remember_conv_output(struct kernels_state *r, const struct kernels_row *row)
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

static int forward_add(struct kernels_state *r, const struct kernels_row *row)
{
    struct kernels_forward_index *f = &r->forward;
    for (int s = 0; s < row->ctx->chain_seq_count; s++) {
        if (f->count == f->capacity) {
            size_t capacity = f->capacity ? f->capacity * 2 : 1024;
            struct kernels_forward_entry *grown = realloc(f->entries, capacity * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            f->entries = grown;
            f->capacity = capacity;
        }
        f->entries[f->count] = (struct kernels_forward_entry){
            row->process_id, row->ctx->chain_seqs[s], f->count, row->ctx};
        f->count++;
    }
    return 0;
}

static int compare_forward(const void *a, const void *b)
{
    const struct kernels_forward_entry *x = a, *y = b;
    if (x->process_id != y->process_id)
        return x->process_id < y->process_id ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* The forward launch a backward node's seq points at: the first one with that seq or, when
 * the forward op launched nothing (views, selects), the last one before it, the op that ran
 * just before it in the forward pass. NULL when the process has none before. */
static const struct kernels_context *forward_of(const struct kernels_state *r, int64_t process_id,
                                                int64_t seq)
{
    const struct kernels_forward_index *f = &r->forward;
    size_t lo = 0, hi = f->count;
    while (lo < hi) { /* first entry >= (process_id, seq) */
        size_t mid = lo + (hi - lo) / 2;
        const struct kernels_forward_entry *e = &f->entries[mid];
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
static int remember_dtype(struct kernels_state *r, struct kernels_row *row)
{
    int64_t last = (int64_t)(intptr_t)kernels_map_get(&r->last_dtype, row->process_id);
    row->assumed_dtype = (enum kernels_dtype)last;
    if (row->name->dtype == KERNELS_DTYPE_UNKNOWN)
        return 0;
    return kernels_map_put(&r->last_dtype, row->process_id, (void *)(intptr_t)row->name->dtype);
}

/* First pass, in start order: contexts, numbering within ops, main-kernel candidates, and
 * the forward ops by sequence number. */
static int attribute_first_pass(struct kernels_state *r)
{
    for (size_t i = 0; i < r->rows.count; i++) {
        struct kernels_row *row = &r->rows.rows[i];
        row->ctx = context_of(r, row->range_id);
        if (!row->ctx)
            return -ENOMEM;
        const struct kernels_context *ctx = row->ctx;
        if (ctx->op_range_id) {
            struct kernels_op_instance *inst = op_instance_of(r, ctx->op_range_id);
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

static const struct kernels_conv_output *conv_output_of(struct kernels_state *r,
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
static int model_instance(struct kernels_state *r, struct kernels_op_instance *inst,
                          const struct kernels_row *row)
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
static void attribute_figures(const struct kernels_op_instance *inst, struct kernels_row *row,
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
            .is_gemm_like = inst->is_gemm_like, .dtype = row->name->dtype, .tc = row->tc};
        memcpy(hint.gemm_mnk, inst->gemm_mnk, sizeof hint.gemm_mnk);
        row->hints |= kernels_hints(&hint);
    }
}

static int attribute_second_pass(struct kernels_state *r)
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
        struct kernels_op_instance *inst = kernels_range_of(r, ctx->op_range_id)->op_instance;
        if (!inst->model_done && model_instance(r, inst, row) < 0)
            return -ENOMEM;
        row->params = inst->params;
        attribute_figures(inst, row, (int64_t)i);
    }
    return 0;
}

int kernels_attribute(struct kernels_state *r)
{
    int rc = attribute_first_pass(r);
    return rc < 0 ? rc : attribute_second_pass(r);
}
