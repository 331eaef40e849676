/* The pieces behind `lantern kernels` that need no database: PyTorch emit_nvtx marker parsing
 * (kernels_markers.c), dtype and Tensor Core detection from kernel names (kernels_names.c),
 * FLOP and byte models of aten ops (kernels_flops.c), occupancy and hints (kernels_hints.c).
 * Each is a pure function of strings and numbers, so the unit tests check them directly. */
#ifndef LANTERN_MODEL_KERNELS_MODEL_H
#define LANTERN_MODEL_KERNELS_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* ---- PyTorch emit_nvtx markers ------------------------------------------------------------ */

/* What an NVTX range is, judged from its name alone. */
enum kernels_range_kind {
    KERNELS_RANGE_USER,      /* anything else: a user's layer/region range */
    KERNELS_RANGE_OP,        /* an operator: "aten::addmm, seq = 12, op_id = 3, sizes = [...]" */
    KERNELS_RANGE_BACKWARD,  /* an autograd node: "AddmmBackward0, seq = 12, ..." */
    KERNELS_RANGE_ENGINE,    /* "autograd::engine::evaluate_function: AddmmBackward0" */
    KERNELS_RANGE_OPTIMIZER, /* "Optimizer.step#AdamW.step", "Optimizer.zero_grad#..." */
};

struct kernels_marker {
    enum kernels_range_kind kind;
    const char *name;  /* points into the parsed text, not NUL-terminated at name_len */
    size_t name_len;   /* "aten::addmm"; for user ranges the name without a "layer:" prefix */
    int64_t seq;       /* -1 when absent */
    int64_t op_id;     /* -1 when absent */
    const char *sizes; /* "[[64, 128], [128]]" within the text, NULL when absent */
    size_t sizes_len;
};

/* Classifies and splits one range name. Never fails: a name that is no PyTorch marker is a
 * user range. text must outlive out. */
void kernels_marker_parse(const char *text, struct kernels_marker *out);

#define KERNELS_MAX_TENSORS 24
#define KERNELS_MAX_DIMS 8

/* The "sizes = [[...], ...]" list: one shape per operator input; non-tensor inputs are []. */
struct kernels_shapes {
    int count;
    int ndims[KERNELS_MAX_TENSORS];
    int64_t dims[KERNELS_MAX_TENSORS][KERNELS_MAX_DIMS];
};

/* Parses sizes text ("[[64, 128], [], [3]]"). Returns 0, or -EINVAL for malformed text or more
 * tensors/dims than the limits above (the caller then reports the op's figures as na). */
int kernels_shapes_parse(const char *text, size_t len, struct kernels_shapes *out);

/* ---- kernel names: dtype and Tensor Cores ------------------------------------------------- */

enum kernels_dtype {
    KERNELS_DTYPE_UNKNOWN,
    KERNELS_DTYPE_FP64,
    KERNELS_DTYPE_FP32,
    KERNELS_DTYPE_TF32,
    KERNELS_DTYPE_FP16,
    KERNELS_DTYPE_BF16,
    KERNELS_DTYPE_FP8,
    KERNELS_DTYPE_INT8,
};

enum kernels_tc { KERNELS_TC_UNKNOWN, KERNELS_TC_NO, KERNELS_TC_YES };

const char *kernels_dtype_name(enum kernels_dtype dtype); /* "bf16", ...; "na" for unknown */
int kernels_dtype_bytes(enum kernels_dtype dtype);        /* element size; 0 for unknown */

/* The data type a kernel works on, read from its (mangled or demangled) name. */
enum kernels_dtype kernels_name_dtype(const char *kernel_name);
/* Whether the kernel runs on Tensor Cores, read from its name; UNKNOWN rather than a guess. */
enum kernels_tc kernels_name_tensor_cores(const char *kernel_name);

/* Tensor Core activity measured by the GPU metrics (docs/kernels.md, "Measured columns"): a
 * mean tensor_active over a kernel below KERNELS_TENSOR_IDLE_PERCENT is none at all (the
 * counters are exact: a kernel without MMA adds nothing, while a one-block HMMA kernel on a
 * 132-SM GPU still reads ~0.7 %). From KERNELS_TENSOR_BUSY_PERCENT on, the activity may be
 * other kernels' (the samples are GPU-wide): it counts as the kernel's own when others
 * overlapped it for less than KERNELS_MEASURED_OWN_SHARE of its time and its execution filled
 * at least that share of the samples it overlapped. In between the name decides: on an H200
 * PyTorch's randn kernels read 1.0-1.4 %, the edges of samples shared with the next GEMM. */
#define KERNELS_TENSOR_IDLE_PERCENT 0.1
#define KERNELS_TENSOR_BUSY_PERCENT 5.0
#define KERNELS_MEASURED_OWN_SHARE 0.5
/* NO below the idle threshold; YES when the activity is the kernel's own (overlapped and
 * filled: shares in [0, 1]; filled < 0 skips its test, for a kernel name whose executions
 * share samples with each other); UNKNOWN otherwise: the name has to decide. */
enum kernels_tc kernels_measured_tensor_cores(double tensor_percent, double overlapped,
                                              double filled);
/* The name shown in the kernel column: demangled name without the return type and parameter
 * list, with no spaces (awk splits on them). Writes at most size bytes; returns out. */
char *kernels_name_short(const char *kernel_name, char *out, size_t size);

/* ---- FLOP and byte models ----------------------------------------------------------------- */

/* What a kernel of the op is, for attribution: the op's figures go to its longest kernel of
 * the matching part (convolution_backward splits into dgrad and wgrad). */
enum kernels_part { KERNELS_PART_ALL, KERNELS_PART_DGRAD, KERNELS_PART_WGRAD, KERNELS_PARTS };

struct kernels_op_model {
    int known;                   /* 0: the op has no model or its shapes are missing */
    double flops[KERNELS_PARTS]; /* per part; PART_ALL holds the total */
    double bytes[KERNELS_PARTS];
    int split;           /* 1: flops/bytes of DGRAD and WGRAD are set */
    int is_gemm_like;    /* matmul or convolution family (Tensor Core candidates) */
    int64_t gemm_mnk[3]; /* M, N, K (GEMM) or output channels, input channels/group,
                            0 (conv); -1 when not a GEMM or conv; for hints */
    char params[128];    /* "M=64,N=128,K=256" or the shapes, no spaces */
};

/* Output spatial sizes of a forward convolution, when known from elsewhere (the matching
 * convolution_backward's grad_output); NULL when unknown. */
struct kernels_conv_output {
    int ndims;
    int64_t dims[KERNELS_MAX_DIMS];
};

/* Fills model for aten op `op` (without the "aten::" namespace) with input shapes and element
 * size elem_bytes. conv_output may be NULL. */
void kernels_op_model(const char *op, const struct kernels_shapes *shapes, int elem_bytes,
                      const struct kernels_conv_output *conv_output,
                      struct kernels_op_model *model);

/* Which part of an op a kernel computes, from its name ("dgrad"/"wgrad" in cuDNN names). */
enum kernels_part kernels_name_part(const char *kernel_name);

/* ---- occupancy and hints ------------------------------------------------------------------ */

struct kernels_sm_limits {
    int cc_major;
    int64_t max_threads_per_sm, max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm;
};

/* Theoretical occupancy (active warps / maximum warps per SM, 0..1) of a launch of
 * block_threads threads with regs_per_thread registers and smem_bytes shared memory per block,
 * following the CUDA occupancy calculator's rules. Returns -1 when a limit is unknown (<= 0)
 * or the launch cannot fit. */
double kernels_occupancy(const struct kernels_sm_limits *sm, int64_t block_threads,
                         int64_t regs_per_thread, int64_t smem_bytes);

enum kernels_hint {
    KERNELS_HINT_NO_TC_ALIGN8 = 1 << 0, /* fp16/bf16 GEMM/conv off Tensor Cores, dim % 8 != 0 */
    KERNELS_HINT_NO_TC = 1 << 1,        /* fp16/bf16 GEMM/conv off Tensor Cores, dims aligned */
    KERNELS_HINT_SMALL_GRID = 1 << 2,   /* fewer blocks than the GPU has SMs */
};

struct kernels_hint_input {
    int is_gemm_like;
    int64_t gemm_mnk[3]; /* -1 where unknown */
    enum kernels_dtype dtype;
    enum kernels_tc tc;
    int64_t blocks;   /* grid_x * grid_y * grid_z; <= 0 unknown */
    int64_t sm_count; /* <= 0 unknown */
};

unsigned kernels_hints(const struct kernels_hint_input *in); /* KERNELS_HINT_* bits */
/* "no-tc-align8,small-grid" (no spaces); "" for none. Returns out. */
char *kernels_hints_format(unsigned hints, char *out, size_t size);

#endif
