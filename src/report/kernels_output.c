/* The columns of `lantern kernels` and its three writers: columnated text (space separated,
 * no spaces inside fields, so awk can read it; -w truncates the text columns to fit), CSV and
 * JSON. "na" (JSON null) wherever a value is unknown; a trailing '*' marks a figure computed
 * with an assumed fp32 dtype (JSON: "dtype_assumed": true). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/kernels.h"
#include "report/kernels_internal.h"

#define FIELD_SIZE 512

struct field {
    char text[FIELD_SIZE];
    int is_number; /* JSON: unquoted */
    int is_null;   /* "na" / null */
};

typedef void (*column_fn)(const struct kernels_row *row, size_t idx, struct field *f);

struct column {
    const char *name;
    const char *help;
    int width;    /* text format: minimum width; numbers are right-aligned to it */
    int flexible; /* text column: sized to its longest value, truncated by -w */
    column_fn fn;
};

static void put_na(struct field *f)
{
    strcpy(f->text, "na");
    f->is_null = 1;
}

static void put_int(struct field *f, int64_t v)
{
    if (v < 0) {
        put_na(f);
        return;
    }
    snprintf(f->text, sizeof f->text, "%" PRId64, v);
    f->is_number = 1;
}

static void put_str(struct field *f, const char *s)
{
    if (!s || !*s) {
        put_na(f);
        return;
    }
    snprintf(f->text, sizeof f->text, "%s", s);
}

/* A figure; "*" when it was computed with an assumed dtype. */
static void put_double(struct field *f, double v, const char *format, int assumed)
{
    if (v < 0) {
        put_na(f);
        return;
    }
    int n = snprintf(f->text, sizeof f->text, format, v);
    if (assumed && n > 0 && (size_t)n + 1 < sizeof f->text)
        strcpy(f->text + n, "*");
    f->is_number = 1;
}

static void put_dims(struct field *f, const int64_t dims[3])
{
    if (dims[0] < 0) {
        put_na(f);
        return;
    }
    snprintf(f->text, sizeof f->text, "%" PRId64 "x%" PRId64 "x%" PRId64, dims[0], dims[1],
             dims[2]);
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
    if (row->name->tc != KERNELS_TC_YES)
        return row->dtype == KERNELS_DTYPE_UNKNOWN && !row->dtype_assumed ? 0 : g->peak_fp32;
    switch (row->dtype) {
    case KERNELS_DTYPE_BF16: return g->peak_bf16;
    case KERNELS_DTYPE_FP16: return g->peak_fp16;
    case KERNELS_DTYPE_TF32: return g->peak_tf32;
    default: return 0;
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
 * each term used when known. */
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

static void col_idx(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)row;
    put_int(f, (int64_t)idx);
}
static void col_seq(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->ctx->seq);
}
static void col_altseq(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->ctx->altseq);
}
static void col_tid(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->tid);
}
static void col_start(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->start_ns);
}
static void col_layer(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->layer);
}
static void col_dir(const struct kernels_row *row, size_t idx, struct field *f)
{
    static const char *const names[] = {NULL, "fwd", "bwd", "opt"};
    (void)idx;
    put_str(f, names[row->ctx->dir]);
}
static void col_sub(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->sub);
}
static void col_mod(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->mod);
}
static void col_op(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->ctx->op);
}
static void col_node(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->ctx->node);
}
static void col_kernel(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    if (row->kind == KERNELS_ROW_MEMCPY)
        snprintf(f->text, sizeof f->text, "memcpy_%s", row->copy_kind);
    else if (row->kind == KERNELS_ROW_MEMSET)
        strcpy(f->text, "memset");
    else
        put_str(f, row->name->short_name);
}
static void col_params(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->params);
}
static void col_sil(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->end_ns - row->start_ns);
}
static void col_tc(const struct kernels_row *row, size_t idx, struct field *f)
{
    static const char *const names[] = {NULL, "no", "yes"};
    (void)idx;
    put_str(f, row->kind == KERNELS_ROW_KERNEL ? names[row->name->tc] : "no");
}
static void col_dtype(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    if (row->kind != KERNELS_ROW_KERNEL || row->dtype == KERNELS_DTYPE_UNKNOWN)
        put_na(f);
    else
        put_str(f, kernels_dtype_name(row->dtype));
}
static void col_device(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->device);
}
static void col_stream(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->stream);
}
static void col_grid(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_dims(f, row->grid);
}
static void col_block(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_dims(f, row->block);
}
static void col_regs(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->regs);
}
static void col_smem(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_int(f, row->smem);
}
static void col_occupancy(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    if (row->kind != KERNELS_ROW_KERNEL || !row->gpu || row->block[0] < 0 || row->regs < 0 ||
        row->smem < 0) {
        put_na(f);
        return;
    }
    int64_t threads = row->block[0] * row->block[1] * row->block[2];
    double occupancy = kernels_occupancy(&row->gpu->sm, threads, row->regs, row->smem);
    put_double(f, occupancy < 0 ? -1 : 100 * occupancy, "%.1f", 0);
}
static void col_flops(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, row->flops, "%.0f", 0);
}
static void col_bytes(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, row->bytes, "%.0f", row->dtype_assumed);
}
static void col_tflops(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->flops < 0 || d <= 0 ? -1 : row->flops / d / 1e3, "%.3f", 0);
}
static void col_gbps(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->bytes < 0 || d <= 0 ? -1 : row->bytes / d, "%.1f", row->dtype_assumed);
}
static void col_peak(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, peak_percent(row), "%.1f", row->dtype_assumed);
}
static void col_hints(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    char hints[128];
    put_str(f, kernels_hints_format(row->hints, hints, sizeof hints));
}

static const struct column columns[] = {
    {"idx", "row number, in GPU start order (0-based)", 5, 0, col_idx},
    {"start", "GPU start time, ns on the session clock", 16, 0, col_start},
    {"seq", "autograd sequence number linking fwd and bwd: fwd, the op's; bwd, its node's", 5, 0,
     col_seq},
    {"altseq", "fwd: seq of the outermost op when it differs from seq (what bwd rows match)", 6,
     0, col_altseq},
    {"tid", "OS thread id of the launching thread", 7, 0, col_tid},
    {"layer", "user NVTX ranges around the launch, outermost first, joined by '/' (bwd: the "
              "forward op's)", 5, 1, col_layer},
    {"dir", "fwd, bwd (autograd), opt (inside Optimizer.step), na (no PyTorch marker)", 3, 0,
     col_dir},
    {"sub", "index of the kernel/copy within its op (0-based)", 3, 0, col_sub},
    {"mod", "innermost user NVTX range (the module/layer name)", 3, 1, col_mod},
    {"op", "innermost PyTorch op that launched it (aten:: dropped)", 2, 1, col_op},
    {"node", "bwd: the autograd node (e.g. AddmmBackward0)", 4, 1, col_node},
    {"kernel", "kernel name without return type and parameters; memcpy_<kind>, memset", 6, 1,
     col_kernel},
    {"params", "op shapes (GEMM M,N,K; conv N,C,K,in,k,out; else input shapes) and dtype", 6, 1,
     col_params},
    {"sil", "GPU duration, ns", 8, 0, col_sil},
    {"tc", "Tensor Cores used, from the kernel name: yes/no/na", 3, 0, col_tc},
    {"dtype", "data type read from the kernel name", 5, 0, col_dtype},
    {"device", "CUDA device ordinal", 6, 0, col_device},
    {"stream", "CUDA stream id", 6, 0, col_stream},
    {"grid", "grid size XxYxZ", 11, 0, col_grid},
    {"block", "block size XxYxZ", 11, 0, col_block},
    {"regs", "registers per thread", 4, 0, col_regs},
    {"smem", "shared memory per block (static + dynamic), bytes", 6, 0, col_smem},
    {"occupancy", "theoretical occupancy, % of the SM's warps (block size, regs, smem)", 9, 0,
     col_occupancy},
    {"flops", "floating-point operations of the op, on its main kernel (docs/kernels.md)", 12,
     0, col_flops},
    {"bytes", "compulsory DRAM bytes of the op on its main kernel; copies: bytes copied", 11, 0,
     col_bytes},
    {"tflops", "achieved TFLOP/s", 8, 0, col_tflops},
    {"gbps", "achieved GB/s (bytes / sil)", 8, 0, col_gbps},
    {"peak%", "% of the roofline bound: max(FLOP/s / peak for dtype and TC, B/s / DRAM peak)",
     6, 0, col_peak},
    {"hints", "optimisation hints: no-tc-align8, no-tc, small-grid (docs/kernels.md)", 5, 1,
     col_hints},
};

#define COLUMN_COUNT (sizeof columns / sizeof columns[0])
#define MAX_SELECTED 64

const char kernels_default_columns[] =
    "idx,dir,layer,op,kernel,params,sil,tc,grid,block,occupancy,flops,tflops,gbps,peak%";

static const struct column *column_named(const char *name, size_t len)
{
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        if (strlen(columns[i].name) == len && strncmp(columns[i].name, name, len) == 0)
            return &columns[i];
    return NULL;
}

/* Splits a -c list into columns; returns the count or -EINVAL (bad set to the name). */
static int select_columns(const char *list, int add_hints, const struct column **out,
                          const char **bad)
{
    static char bad_name[64];
    int count = 0;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const struct column *c = column_named(p, len);
        if (!c || count == MAX_SELECTED) {
            snprintf(bad_name, sizeof bad_name, "%.*s", (int)len, p);
            *bad = bad_name;
            return -EINVAL;
        }
        out[count++] = c;
        p += len + (end ? 1 : 0);
    }
    if (add_hints && count < MAX_SELECTED) {
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
    const struct column *selected[MAX_SELECTED];
    return select_columns(list ? list : kernels_default_columns, 0, selected, bad) < 0 ? -EINVAL
                                                                                       : 0;
}

void kernels_columns_help(FILE *out)
{
    for (size_t i = 0; i < COLUMN_COUNT; i++)
        fprintf(out, "  %-10s %s\n", columns[i].name, columns[i].help);
}

/* ---- writers ------------------------------------------------------------------------------ */

static int row_selected(const struct kernels_row *row, const struct kernels_options *opt)
{
    return !opt->hints_only || row->hints != 0;
}

static void fill(const struct column *c, const struct kernels_row *row, size_t idx,
                 struct field *f)
{
    f->is_number = f->is_null = 0;
    f->text[0] = '\0';
    c->fn(row, idx, f);
}

/* Text widths: fixed columns keep theirs; flexible ones take their longest value and, with
 * -w, the widest are cut down in turn until the line fits (never below 4). */
static void text_widths(const struct kernels_rows *rows, const struct kernels_options *opt,
                        const struct column **cols, int ncols, int *widths)
{
    struct field f;
    int total = 0;
    for (int c = 0; c < ncols; c++) {
        int header = (int)strlen(cols[c]->name);
        widths[c] = cols[c]->width > header ? cols[c]->width : header;
        if (cols[c]->flexible) {
            for (size_t i = 0; i < rows->count; i++) {
                if (!row_selected(&rows->rows[i], opt))
                    continue;
                fill(cols[c], &rows->rows[i], i, &f);
                int len = (int)strlen(f.text);
                if (len > widths[c])
                    widths[c] = len;
            }
        }
        total += widths[c] + (c ? 1 : 0);
    }
    while (opt->width > 0 && total > opt->width) {
        int widest = -1;
        for (int c = 0; c < ncols; c++)
            if (cols[c]->flexible && widths[c] > 4 && (widest < 0 || widths[c] > widths[widest]))
                widest = c;
        if (widest < 0)
            break;
        widths[widest]--;
        total--;
    }
}

static void write_text_field(FILE *out, const char *text, int width, int right, int last)
{
    int len = (int)strlen(text);
    if (len > width) { /* cut, and say so with a trailing '~' */
        fwrite(text, 1, (size_t)(width - 1), out);
        fputc('~', out);
    } else if (right) {
        fprintf(out, "%*s", width, text);
    } else if (last) {
        fputs(text, out);
    } else {
        fprintf(out, "%-*s", width, text);
    }
}

static int write_text(const struct kernels_rows *rows, const struct kernels_options *opt,
                      const struct column **cols, int ncols, FILE *out)
{
    int widths[MAX_SELECTED];
    text_widths(rows, opt, cols, ncols, widths);
    struct field f;
    for (int c = 0; c < ncols; c++) {
        fputs(c ? " " : "", out);
        write_text_field(out, cols[c]->name, widths[c], !cols[c]->flexible, c == ncols - 1);
    }
    fputc('\n', out);
    for (size_t i = 0; i < rows->count; i++) {
        if (!row_selected(&rows->rows[i], opt))
            continue;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], &rows->rows[i], i, &f);
            fputs(c ? " " : "", out);
            write_text_field(out, f.text, widths[c], !cols[c]->flexible, c == ncols - 1);
        }
        fputc('\n', out);
    }
    return 0;
}

static void write_csv_value(FILE *out, const char *text)
{
    if (!strpbrk(text, ",\"\n")) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static int write_csv(const struct kernels_rows *rows, const struct kernels_options *opt,
                     const struct column **cols, int ncols, FILE *out)
{
    struct field f;
    for (int c = 0; c < ncols; c++) {
        fputs(c ? "," : "", out);
        write_csv_value(out, cols[c]->name);
    }
    fputc('\n', out);
    for (size_t i = 0; i < rows->count; i++) {
        if (!row_selected(&rows->rows[i], opt))
            continue;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], &rows->rows[i], i, &f);
            fputs(c ? "," : "", out);
            write_csv_value(out, f.text);
        }
        fputc('\n', out);
    }
    return 0;
}

static void write_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static int write_json(const struct kernels_rows *rows, const struct kernels_options *opt,
                      const struct column **cols, int ncols, FILE *out)
{
    struct field f;
    int first = 1;
    fputs("[", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct kernels_row *row = &rows->rows[i];
        if (!row_selected(row, opt))
            continue;
        fputs(first ? "\n{" : ",\n{", out);
        first = 0;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], row, i, &f);
            fputs(c ? "," : "", out);
            write_json_string(out, cols[c]->name);
            fputc(':', out);
            size_t len = strlen(f.text);
            if (f.is_null)
                fputs("null", out);
            else if (f.is_number && len && f.text[len - 1] == '*')
                fwrite(f.text, 1, len - 1, out);
            else if (f.is_number)
                fputs(f.text, out);
            else
                write_json_string(out, f.text);
        }
        fprintf(out, ",\"dtype_assumed\":%s}", row->dtype_assumed ? "true" : "false");
    }
    fputs(first ? "]\n" : "\n]\n", out);
    return 0;
}

int kernels_output_write(const struct kernels_rows *rows, const struct kernels_options *opt,
                         FILE *out)
{
    const struct column *cols[MAX_SELECTED];
    const char *bad;
    int ncols = select_columns(opt->columns ? opt->columns : kernels_default_columns,
                               opt->hints_only, cols, &bad);
    if (ncols < 0)
        return -EINVAL;
    int rc;
    switch (opt->format) {
    case KERNELS_FORMAT_CSV: rc = write_csv(rows, opt, cols, ncols, out); break;
    case KERNELS_FORMAT_JSON: rc = write_json(rows, opt, cols, ncols, out); break;
    default: rc = write_text(rows, opt, cols, ncols, out); break;
    }
    return ferror(out) ? -EIO : rc;
}
