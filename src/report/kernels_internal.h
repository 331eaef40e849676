/* Shared by the files of the kernels report: kernels.c (the entry points), kernels_load.c
 * (rows, ranges, names and GPUs from the database), kernels_attribute.c (layer, op and figures
 * of each row), kernels_columns.c (the columns) and kernels_output.c (text/CSV/JSON): the
 * resolved row, the loaded state, and the small containers (an arena for strings, an int64
 * hash map). */
#ifndef LANTERN_REPORT_KERNELS_INTERNAL_H
#define LANTERN_REPORT_KERNELS_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/kernels_model.h"

/* ---- containers -------------------------------------------------------------------------- */

/* Bump allocator: everything the report keeps (names, layer paths) lives until the end. */
struct kernels_arena {
    struct kernels_arena_block *blocks;
};
char *kernels_arena_strndup(struct kernels_arena *a, const char *s, size_t len);
void *kernels_arena_alloc(struct kernels_arena *a, size_t size);
void kernels_arena_release(struct kernels_arena *a);

/* Open-addressing map from int64 keys to pointers. */
struct kernels_map {
    int64_t *keys;
    void **values;
    size_t capacity, count;
};
void *kernels_map_get(const struct kernels_map *m, int64_t key);
int kernels_map_put(struct kernels_map *m, int64_t key, void *value); /* 0 or -ENOMEM */
void kernels_map_release(struct kernels_map *m);

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
};

struct kernels_rows {
    struct kernels_row *rows;
    size_t count;
};

/* ---- the loaded state -------------------------------------------------------------------- */

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
    struct kernels_map names, conv_out_by_seq, last_dtype;
    struct kernels_forward_index forward; /* forward launches by (process, seq) */
    struct kernels_map tids;   /* threads.id -> OS tid (stored as tid + 1, 0 being "absent") */
    struct kernels_map traces; /* strings.id of a launch's backtrace -> its text */
    struct kernels_gpu *gpus;
    size_t gpu_count;
    struct kernels_rows rows;
    size_t row_capacity;
    struct kernels_context empty_context;
};

/* kernels_load.c: reads rows (sorted by GPU start), GPUs, threads and the ranges open at some
 * launch into s (s->db set, the rest zero). Returns 0, -ENOMEM, or -EIO (no kernels tables). */
int kernels_load(struct kernels_state *s, int no_memops);
/* The loaded range of id (NULL when absent or not open at any launch). */
struct kernels_range *kernels_range_of(struct kernels_state *s, int64_t id);
void kernels_state_release(struct kernels_state *s);

/* kernels_attribute.c: each row's layer, op, sub-index, FLOPs, bytes and hints. 0 or -ENOMEM. */
int kernels_attribute(struct kernels_state *s);

/* ---- columns (kernels_columns.c) -------------------------------------------------------- */

#define KERNELS_FIELD_SIZE 512 /* a field's text is cut to fit */
#define KERNELS_MAX_COLUMNS 64 /* a -c list longer than this is refused */

/* One row's value in one column, as text. */
struct kernels_field {
    char text[KERNELS_FIELD_SIZE];
    int is_number; /* JSON: unquoted */
    int is_null;   /* "na" / null */
};

struct kernels_column {
    const char *name;
    const char *help;
    int width;    /* text format: minimum width; numbers are right-aligned to it */
    int flexible; /* text column: sized to its longest value, truncated by -w */
    void (*fn)(const struct kernels_row *row, size_t idx, struct kernels_field *f);
};

/* Splits a -c list into columns, adding hints with add_hints; returns the count, or -EINVAL
 * with *bad pointing at the unknown name (a static copy). */
int kernels_columns_select(const char *list, int add_hints, const struct kernels_column **out,
                           const char **bad);

/* Formats row number idx's value of column c into f. */
static inline void kernels_column_fill(const struct kernels_column *c,
                                       const struct kernels_row *row, size_t idx,
                                       struct kernels_field *f)
{
    f->is_number = f->is_null = 0;
    f->text[0] = '\0';
    c->fn(row, idx, f);
}

/* kernels_output.c */
struct kernels_options;
/* Returns 0 or the number of columns left out (drop_columns), or a negative errno. */
int kernels_output_write(const struct kernels_rows *rows, const struct kernels_options *opt,
                         FILE *out);

#endif
