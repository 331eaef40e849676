/* The columns of `lantern kernels`: each a name, a help line, a text width and a function
 * that formats one row's value (docs/kernels.md). "na" (JSON null) wherever a value is
 * unknown; a trailing '*' marks a figure computed with an assumed dtype, one the kernel name
 * does not give. kernels_output.c writes the chosen columns as text, CSV or JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels.h"
#include "model/kernels_columns.h"

static void put_text(struct kernels_field *f, const char *s, size_t len)
{
    if (len >= sizeof f->text)
        len = sizeof f->text - 1;
    memcpy(f->text, s, len);
    f->text[len] = '\0';
}

static void put_na(struct kernels_field *f)
{
    put_text(f, "na", 2);
    f->is_null = 1;
}

/* Decimal digits of v >= 0 at out; returns the count. */
static size_t format_u64(uint64_t v, char *out)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    return n;
}

static void put_int(struct kernels_field *f, int64_t v)
{
    if (v < 0) {
        put_na(f);
        return;
    }
    f->text[format_u64((uint64_t)v, f->text)] = '\0';
    f->is_number = 1;
}

static void put_str(struct kernels_field *f, const char *s)
{
    if (!s || !*s) {
        put_na(f);
        return;
    }
    put_text(f, s, strlen(s));
}

/* A figure with `decimals` digits after the point (rounded half up), and "*" when it was
 * computed with an assumed dtype. Values past 2^63 / 10^decimals fall back to printf. */
static void put_double(struct kernels_field *f, double v, int decimals, int assumed)
{
    static const double scales[] = {1, 10, 100, 1000};
    if (v < 0) {
        put_na(f);
        return;
    }
    double scaled = v * scales[decimals] + 0.5;
    size_t n;
    if (scaled < 9.2e18) {
        uint64_t units = (uint64_t)scaled, unit = (uint64_t)scales[decimals];
        n = format_u64(units / unit, f->text);
        if (decimals) {
            f->text[n++] = '.';
            uint64_t frac = units % unit;
            for (uint64_t d = unit / 10; d; d /= 10) {
                f->text[n++] = (char)('0' + frac / d);
                frac %= d;
            }
        }
    } else {
        n = (size_t)snprintf(f->text, sizeof f->text, "%.*f", decimals, v);
    }
    if (assumed)
        f->text[n++] = '*';
    f->text[n] = '\0';
    f->is_number = 1;
}

static void put_dims(struct kernels_field *f, const int64_t dims[3])
{
    if (dims[0] < 0) {
        put_na(f);
        return;
    }
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        if (i)
            f->text[n++] = 'x';
        n += format_u64((uint64_t)(dims[i] > 0 ? dims[i] : 0), f->text + n);
    }
    f->text[n] = '\0';
}

static double duration_ns(const struct kernels_row *row)
{
    return (double)(row->end_ns - row->start_ns);
}

/* Peak FLOP/s of the row's GPU for the row's dtype on the units its kernel uses; 0 unknown. */
static double peak_flops(const struct kernels_row *row)
{
    const struct kernels_gpu *g = row->gpu;
    if (!g || row->kind != KERNELS_ROW_KERNEL)
        return 0;
    if (row->dtype == KERNELS_DTYPE_FP64)
        return g->peak_fp64;
    if (row->tc != KERNELS_TC_YES)
        return row->dtype == KERNELS_DTYPE_UNKNOWN && !row->dtype_assumed ? 0 : g->peak_fp32;
    switch (row->dtype) {
    case KERNELS_DTYPE_BF16:
        return g->peak_bf16;
    case KERNELS_DTYPE_FP16:
        return g->peak_fp16;
    case KERNELS_DTYPE_TF32:
        return g->peak_tf32;
    default:
        return 0;
    }
}

/* DRAM bytes the row moved: a device-to-device copy reads and writes each byte. Host copies
 * go over PCIe/NVLink-C2C, whose peak the database does not hold: unknown (-1). */
static double dram_bytes(const struct kernels_row *row)
{
    if (row->kind == KERNELS_ROW_MEMCPY)
        return strcmp(row->copy_kind, "DtoD") == 0 ? 2 * row->bytes : -1;
    return row->bytes;
}

/* Achieved rate as a share of the roofline bound: max(FLOP/s / peak FLOP/s, B/s / peak B/s),
 * each term used when known; -1 when neither is (a value, not an error). */
static double peak_percent(const struct kernels_row *row)
{
    double d = duration_ns(row), best = -1;
    if (d <= 0)
        return -1;
    double pf = peak_flops(row);
    if (row->flops > 0 && pf > 0)
        best = row->flops / d * 1e9 / pf;
    double bytes = dram_bytes(row);
    if (bytes >= 0 && row->gpu && row->gpu->peak_dram > 0) {
        double share = bytes / d * 1e9 / row->gpu->peak_dram;
        if (share > best)
            best = share;
    }
    return best < 0 ? -1 : 100 * best;
}

static void col_idx(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)row;
    put_int(f, (int64_t)idx);
}
static void col_seq(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->ctx->seq);
}
static void col_altseq(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->ctx->altseq);
}
static void col_tid(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->tid);
}
static void col_start(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->start_ns);
}
static void col_layer(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->layer);
}
static void col_dir(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    static const char *const names[] = {NULL, "fwd", "bwd", "opt"};
    (void)idx;
    put_str(f, names[row->ctx->dir]);
}
static void col_sub(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->sub);
}
static void col_mod(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->mod);
}
static void col_op(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->ctx->op);
}
static void col_node(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->ctx->node);
}
static void col_kernel(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    if (row->kind == KERNELS_ROW_MEMCPY) {
        size_t len = strlen(row->copy_kind);
        if (len > sizeof f->text - 8)
            len = sizeof f->text - 8;
        memcpy(f->text, "memcpy_", 7);
        memcpy(f->text + 7, row->copy_kind, len);
        f->text[7 + len] = '\0';
    } else if (row->kind == KERNELS_ROW_MEMSET) {
        put_text(f, "memset", 6);
    } else
        put_str(f, row->name->short_name);
}
static void col_trace(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->trace);
}
static void col_params(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->params);
}
static void col_sil(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->end_ns - row->start_ns);
}
static void col_tc(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    static const char *const names[] = {NULL, "no", "yes"};
    (void)idx;
    put_str(f, names[row->tc]);
}
static void col_tcby(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_str(f, row->kind != KERNELS_ROW_KERNEL ? NULL : row->tc_measured ? "metrics" : "name");
}
/* A measured percentage: two decimals, the resolution the trace stores. */
static void col_smact(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, row->sm_active, 2, 0);
}
static void col_achieved(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, row->warp_occupancy, 2, 0);
}
static void col_tensor(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, row->tensor_active, 2, 0);
}
static void col_dtype(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    if (row->kind != KERNELS_ROW_KERNEL || row->name->dtype == KERNELS_DTYPE_UNKNOWN)
        put_na(f);
    else
        put_str(f, kernels_dtype_name(row->name->dtype));
}
static void col_device(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->device);
}
static void col_stream(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->stream);
}
static void col_grid(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_dims(f, row->grid);
}
static void col_block(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_dims(f, row->block);
}
static void col_regs(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->regs);
}
static void col_smem(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_int(f, row->smem);
}
static void col_occupancy(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    if (row->kind != KERNELS_ROW_KERNEL || !row->gpu || row->block[0] < 0 || row->regs < 0 ||
        row->smem < 0) {
        put_na(f);
        return;
    }
    int64_t threads = row->block[0] * row->block[1] * row->block[2];
    double occupancy = kernels_occupancy(&row->gpu->sm, threads, row->regs, row->smem);
    put_double(f, occupancy < 0 ? -1 : 100 * occupancy, 1, 0);
}
static void col_flops(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, row->flops, 0, 0);
}
static void col_bytes(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, row->bytes, 0, row->dtype_assumed);
}
static void col_tflops(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->flops < 0 || d <= 0 ? -1 : row->flops / d / 1e3, 3, 0);
}
static void col_gbps(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->bytes < 0 || d <= 0 ? -1 : row->bytes / d, 1, row->dtype_assumed);
}
static void col_peak(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    put_double(f, peak_percent(row), 1, row->dtype_assumed);
}
static void col_hints(const struct kernels_row *row, size_t idx, struct kernels_field *f)
{
    (void)idx;
    char hints[128];
    put_str(f, kernels_hints_format(row->hints, hints, sizeof hints));
}

static const struct kernels_column columns[] = {
    {"idx", "row number, in GPU start order (0-based)", 5, 0, col_idx},
    {"start", "GPU start time, ns on the session clock", 16, 0, col_start},
    {"seq", "autograd sequence number linking fwd and bwd: fwd, the op's; bwd, its node's", 5, 0,
     col_seq},
    {"altseq", "fwd: seq of the outermost op when it differs from seq (what bwd rows match)", 6, 0,
     col_altseq},
    {"tid", "OS thread id of the launching thread", 7, 0, col_tid},
    {"layer",
     "user NVTX ranges around the launch, outermost first, joined by '/' (bwd: the "
     "forward op's)",
     5, 1, col_layer},
    {"dir", "fwd, bwd (autograd), opt (inside Optimizer.step), na (no PyTorch marker)", 3, 0,
     col_dir},
    {"sub", "index of the kernel/copy within its op (0-based)", 3, 0, col_sub},
    {"mod", "innermost user NVTX range (the module/layer name)", 3, 1, col_mod},
    {"op", "innermost PyTorch op that launched it (aten:: dropped)", 2, 1, col_op},
    {"node", "bwd: the autograd node (e.g. AddmmBackward0)", 4, 1, col_node},
    {"kernel", "kernel name without return type and parameters; memcpy_<kind>, memset", 6, 1,
     col_kernel},
    {"trace",
     "who launched it (--python-backtrace): file:line:function, innermost user frame first, "
     "joined by '<-'; native: symbol+0xoff(object)",
     5, 1, col_trace},
    {"params", "op shapes (GEMM M,N,K; conv N,C,K,in,k,out; else input shapes) and dtype", 6, 1,
     col_params},
    {"sil", "GPU duration, ns", 8, 0, col_sil},
    {"tc",
     "Tensor Cores used, yes/no/na: measured where GPU metrics cover the kernel (tcby), else "
     "from its name",
     3, 0, col_tc},
    {"tcby", "where tc comes from: metrics (tensor active, measured) or name (a guess)", 7, 0,
     col_tcby},
    {"dtype", "data type read from the kernel name", 5, 0, col_dtype},
    {"device", "CUDA device ordinal", 6, 0, col_device},
    {"stream", "CUDA stream id", 6, 0, col_stream},
    {"grid", "grid size XxYxZ", 11, 0, col_grid},
    {"block", "block size XxYxZ", 11, 0, col_block},
    {"regs", "registers per thread", 4, 0, col_regs},
    {"smem", "shared memory per block (static + dynamic), bytes", 6, 0, col_smem},
    {"occupancy", "theoretical occupancy, % of the SM's warps (block size, regs, smem)", 9, 0,
     col_occupancy},
    {"achieved",
     "achieved warp occupancy, % of the whole GPU's warp slots (GPU metrics, time-weighted over "
     "the kernel; GPU-wide: idle SMs and concurrent kernels count)",
     8, 0, col_achieved},
    {"smact", "SMs active, % (GPU metrics, as achieved)", 6, 0, col_smact},
    {"tensor", "Tensor Cores active, % (GPU metrics, as achieved)", 6, 0, col_tensor},
    {"flops", "floating-point operations of the op, on its main kernel (docs/kernels.md)", 12, 0,
     col_flops},
    {"bytes", "compulsory DRAM bytes of the op on its main kernel; copies: bytes copied", 11, 0,
     col_bytes},
    {"tflops", "achieved TFLOP/s", 8, 0, col_tflops},
    {"gbps", "achieved GB/s (bytes / sil)", 8, 0, col_gbps},
    {"peak%", "% of the roofline bound: max(FLOP/s / peak for dtype and TC, B/s / DRAM peak)", 6, 0,
     col_peak},
    {"hints", "optimisation hints: no-tc-align8, no-tc, small-grid (docs/kernels.md)", 5, 1,
     col_hints},
};

#define COLUMN_COUNT (sizeof columns / sizeof columns[0])

const char kernels_default_columns[] =
    "idx,dir,layer,op,kernel,params,sil,tc,grid,block,occupancy,flops,tflops,gbps,peak%";
const char kernels_default_columns_measured[] = "idx,dir,layer,op,kernel,params,sil,tc,tcby,"
                                                "grid,block,occupancy,achieved,tensor,flops,"
                                                "tflops,gbps,peak%";

static const struct kernels_column *column_named(const char *name, size_t len)
{
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        if (strlen(columns[i].name) == len && strncmp(columns[i].name, name, len) == 0)
            return &columns[i];
    return NULL;
}

int kernels_columns_select(const char *list, int add_hints, const struct kernels_column **out,
                           const char **bad)
{
    static char bad_name[64];
    int count = 0;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const struct kernels_column *c = column_named(p, len);
        if (!c || count == KERNELS_MAX_COLUMNS) {
            snprintf(bad_name, sizeof bad_name, "%.*s", (int)len, p);
            *bad = bad_name;
            return -EINVAL;
        }
        out[count++] = c;
        p += len + (end ? 1 : 0);
    }
    if (add_hints && count < KERNELS_MAX_COLUMNS) {
        int present = 0;
        for (int i = 0; i < count; i++)
            present |= out[i]->fn == col_hints;
        if (!present)
            out[count++] = column_named("hints", 5);
    }
    return count;
}

int kernels_columns_check(const char *list, const char **bad)
{
    const struct kernels_column *selected[KERNELS_MAX_COLUMNS];
    return kernels_columns_select(list ? list : kernels_default_columns, 0, selected, bad) < 0
               ? -EINVAL
               : 0;
}

void kernels_columns_help(FILE *out)
{
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        fprintf(out, "  %-10s %s\n", columns[i].name, columns[i].help);
}
