/* The data every file of the kernels report shares (kernels_load.c fills it,
 * kernels_attribute.c completes it, kernels_columns.c formats it): the resolved row, and the
 * small containers (an arena for strings, an int64 hash map, kernels_containers.c). */
#ifndef LANTERN_MODEL_KERNELS_INTERNAL_H
#define LANTERN_MODEL_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/u64_map.h"
#include "model/kernels_model.h"

/* ---- containers -------------------------------------------------------------------------- */

/* Bump allocator: everything the report keeps (names, layer paths) lives until the end. */
struct kernels_arena {
    struct kernels_arena_block *blocks;
};
char *kernels_arena_strndup(struct kernels_arena *a, const char *s, size_t len);
void *kernels_arena_alloc(struct kernels_arena *a, size_t size);
void kernels_arena_release(struct kernels_arena *a);

/* Maps from int64 ids (database ids, sequence numbers; never INT64_MIN) to pointers, over the
 * shared u64 map: the key's sign bit flipped is never 0, the map's empty mark. */
static inline uint64_t kernels_map_key(int64_t key)
{
    return (uint64_t)key ^ 0x8000000000000000ull;
}
static inline void *kernels_map_get(const struct u64_map *m, int64_t key)
{
    uint64_t *v = u64_map_find(m, kernels_map_key(key));
    return v ? (void *)(uintptr_t)*v : NULL;
}
static inline int kernels_map_put(struct u64_map *m, int64_t key, void *value) /* 0, -ENOMEM */
{
    return u64_map_put(m, kernels_map_key(key), (uint64_t)(uintptr_t)value);
}

/* ---- report rows -------------------------------------------------------------------------- */

enum kernels_row_kind { KERNELS_ROW_KERNEL, KERNELS_ROW_MEMCPY, KERNELS_ROW_MEMSET };
enum kernels_dir { KERNELS_DIR_NA, KERNELS_DIR_FWD, KERNELS_DIR_BWD, KERNELS_DIR_OPT };

struct kernels_gpu {
    int64_t id, sm_count;
    struct kernels_sm_limits sm;
    double peak_fp32, peak_fp16, peak_bf16, peak_tf32, peak_fp64, peak_dram;
};

/* A kernel name's properties, computed once per distinct name. */
struct kernels_name_info {
    const char *short_name;
    enum kernels_dtype dtype;
    enum kernels_tc tc;
    enum kernels_part part;
};

#define KERNELS_CHAIN_SEQS 6

/* Where a launch came from: what the NVTX ranges open on its thread say, computed once per
 * innermost range. Strings are NULL when unknown. */
struct kernels_context {
    enum kernels_dir dir;
    const char *layer; /* user ranges, outermost first, joined by '/' */
    const char *mod;   /* innermost user range */
    const char *op;    /* innermost PyTorch op, without the "aten::" namespace */
    const char *node;  /* autograd node of a backward launch ("AddmmBackward0") */
    const char *sizes; /* the op's "sizes = [...]" text */
    size_t sizes_len;
    int64_t op_range_id;                    /* the op instance (its range id); 0 without an op */
    int64_t seq, altseq;                    /* -1 when absent (see docs/kernels.md) */
    int64_t chain_seqs[KERNELS_CHAIN_SEQS]; /* seqs of every op in the chain, for matching */
    int chain_seq_count;
};

struct kernels_row {
    enum kernels_row_kind kind;
    int64_t start_ns, end_ns;
    int64_t process_id, device, stream, tid; /* -1 when unknown */
    int64_t range_id;
    int64_t grid[3], block[3], regs, smem; /* -1 when unknown */
    int64_t copy_bytes;                    /* memcpy/memset bytes */
    const char *copy_kind;                 /* memcpy: "HtoD", ...; memset: NULL */
    const char *trace;                     /* the launch's backtrace; NULL: not recorded */
    const struct kernels_name_info *name;  /* kernels only */
    const struct kernels_gpu *gpu;         /* NULL when unknown */
    const struct kernels_context *ctx;     /* never NULL (an empty context at worst) */
    /* filled by the attribution pass */
    const char *layer, *mod; /* ctx's, or the forward op's for backward rows */
    const char *params;
    int64_t sub;                      /* index within its op instance; -1 without op */
    double flops, bytes;              /* -1 when unknown */
    int dtype_assumed;                /* 1: its figures use an assumed dtype (docs/kernels.md) */
    enum kernels_dtype dtype;         /* the kernel's, or its op's assumed one */
    enum kernels_dtype assumed_dtype; /* that of the last earlier kernel whose name says one */
    unsigned hints;
    /* measured by the GPU metrics (kernels_metrics.c): means over the kernel, -1 unknown */
    double sm_active, warp_occupancy, tensor_active;
    enum kernels_tc tc; /* Tensor Cores: measured when tc_measured, else from the name */
    int tc_measured;
};

struct kernels_rows {
    struct kernels_row *rows;
    size_t count;
    int has_metrics; /* the database has GPU metrics: the measured columns are shown */
};

#endif
