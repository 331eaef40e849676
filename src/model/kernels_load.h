/* Loading for `lantern kernels` (kernels_load.c): the state the report builds from the
 * database (rows, GPUs, threads, the NVTX ranges open at some launch), which the attribution
 * (kernels_attribute.h) completes. */
#ifndef LANTERN_MODEL_KERNELS_LOAD_H
#define LANTERN_MODEL_KERNELS_LOAD_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "model/kernels_internal.h"

/* Ranges nest a few levels deep; a longer chain means a damaged database (a cycle). */
#define KERNELS_MAX_RANGE_DEPTH 256

/* One op instance (one range of an op): its kernels, for numbering and attribution. */
struct kernels_op_instance {
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
struct kernels_forward_entry {
    int64_t process_id, seq;
    size_t order;
    const struct kernels_context *ctx;
};

struct kernels_forward_index {
    struct kernels_forward_entry *entries;
    size_t count, capacity;
};

struct kernels_range {
    int64_t id, parent_id;
    struct kernels_marker marker;
    const char *user_path;                   /* USER ranges: the layer path ending in this range */
    struct kernels_context *context;         /* launches whose innermost range this is */
    struct kernels_op_instance *op_instance; /* OP ranges with launches: the instance */
    int64_t engine_seq; /* ENGINE ranges: the seq of the node they evaluate, -1 unknown */
};

/* Every push/pop range's id and parent, sorted by id (two columns read in one scan, far
 * cheaper than a query per range); nodes[] holds the parsed name of the ranges some launch
 * sits in, NULL for the others. */
struct kernels_range_table {
    int64_t *ids, *parents;
    struct kernels_range **nodes;
    size_t count;
    /* The importer numbers ranges densely, so id - first_id indexes `direct` (-1: no such
     * range); NULL when the ids are too sparse, and range_index searches instead. */
    int32_t *direct;
    int64_t first_id, span;
};

/* Everything the report loads and derives, freed at once by kernels_state_release. */
struct kernels_state {
    sqlite3 *db;
    sqlite3_stmt *get_string;
    struct kernels_arena arena;
    struct kernels_range_table ranges;
    struct u64_map names, conv_out_by_seq, last_dtype;
    struct kernels_forward_index forward; /* forward launches by (process, seq) */
    struct u64_map tids;   /* threads.id -> OS tid (stored as tid + 1, 0 being "absent") */
    struct u64_map traces; /* strings.id of a launch's backtrace -> its text */
    struct kernels_gpu *gpus;
    size_t gpu_count;
    struct kernels_rows rows;
    size_t row_capacity;
    struct kernels_context empty_context;
};

/* Reads rows (sorted by GPU start), GPUs, threads and the ranges open at some
 * launch into s (s->db set, the rest zero). Returns 0, -ENOMEM, or -EIO (no kernels tables). */
int kernels_load(struct kernels_state *s, int no_memops);
/* The measured columns (kernels_metrics.c): each kernel row's GPU metrics and, where they
 * decide it, its Tensor Core use. 0, -ENOMEM or -EIO. */
int kernels_metrics(struct kernels_state *s);
/* The loaded range of id (NULL when absent or not open at any launch). */
struct kernels_range *kernels_range_of(struct kernels_state *s, int64_t id);
void kernels_state_release(struct kernels_state *s);

#endif
