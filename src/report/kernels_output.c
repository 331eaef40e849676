/* The columns of `lantern kernels` and its three writers: columnated text (space separated,
 * no spaces inside fields, so awk can read it; -w truncates the text columns to fit), CSV and
 * JSON. "na" (JSON null) wherever a value is unknown; a trailing '*' marks a figure computed
 * with an assumed dtype, one the kernel name does not give (JSON: "dtype_assumed": true). */
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

/* The formatters below avoid printf: the report formats millions of fields and snprintf
 * was most of its time (bench/bench_kernels.c). */

static void put_text(struct field *f, const char *s, size_t len)
{
    if (len >= sizeof f->text)
        len = sizeof f->text - 1;
    memcpy(f->text, s, len);
    f->text[len] = '\0';
}

static void put_na(struct field *f)
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

static void put_int(struct field *f, int64_t v)
{
    if (v < 0) {
        put_na(f);
        return;
    }
    f->text[format_u64((uint64_t)v, f->text)] = '\0';
    f->is_number = 1;
}

static void put_str(struct field *f, const char *s)
{
    if (!s || !*s) {
        put_na(f);
        return;
    }
    put_text(f, s, strlen(s));
}

/* A figure with `decimals` digits after the point (rounded half up), and "*" when it was
 * computed with an assumed dtype. Values past 2^63 / 10^decimals fall back to printf. */
static void put_double(struct field *f, double v, int decimals, int assumed)
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

static void put_dims(struct field *f, const int64_t dims[3])
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
    if (row->name->tc != KERNELS_TC_YES)
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
static void col_trace(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_str(f, row->trace);
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
    if (row->kind != KERNELS_ROW_KERNEL || row->name->dtype == KERNELS_DTYPE_UNKNOWN)
        put_na(f);
    else
        put_str(f, kernels_dtype_name(row->name->dtype));
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
    put_double(f, occupancy < 0 ? -1 : 100 * occupancy, 1, 0);
}
static void col_flops(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, row->flops, 0, 0);
}
static void col_bytes(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, row->bytes, 0, row->dtype_assumed);
}
static void col_tflops(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->flops < 0 || d <= 0 ? -1 : row->flops / d / 1e3, 3, 0);
}
static void col_gbps(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    double d = duration_ns(row);
    put_double(f, row->bytes < 0 || d <= 0 ? -1 : row->bytes / d, 1, row->dtype_assumed);
}
static void col_peak(const struct kernels_row *row, size_t idx, struct field *f)
{
    (void)idx;
    put_double(f, peak_percent(row), 1, row->dtype_assumed);
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

static void fill(const struct column *c, const struct kernels_row *row, size_t idx, struct field *f)
{
    f->is_number = f->is_null = 0;
    f->text[0] = '\0';
    c->fn(row, idx, f);
}

/* Text widths: fixed columns keep theirs; flexible ones take their longest value and, with
 * -w, the widest are cut down in turn until the line fits (never below 4). Returns the line's
 * length. */
static int text_widths(const struct kernels_rows *rows, const struct kernels_options *opt,
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
    return total;
}

/* Appends one text field to line, padded to width (numbers on the right) or cut with a
 * trailing '~'. Text fields never hold spaces or control characters (awk splits on them): a
 * user range named "step 3" prints as step_3. CSV and JSON keep names as they are. Returns the new
 * length. */
static size_t append_text_field(char *line, size_t at, const char *text, int width, int right,
                                int last)
{
    size_t len = strlen(text), w = (size_t)width;
    size_t shown = len > w ? w : len, pad = w > len ? w - len : 0;
    if (right) {
        memset(line + at, ' ', pad);
        at += pad;
    }
    for (size_t i = 0; i < shown; i++) { /* also tabs, newlines, DEL and C1 controls */
        unsigned char ch = (unsigned char)text[i],
                      next = i + 1 < len ? (unsigned char)text[i + 1] : 0;
        int c1 = ch == 0xC2 && next >= 0x80 && next <= 0x9F; /* U+0080-U+009F: ESC [ is 0x9B */
        line[at + i] = ch <= ' ' || ch == 0x7F || c1 ? '_' : text[i];
        if (c1 && i + 1 < shown)
            line[at + ++i] = '_';
    }
    if (len > w)
        line[at + shown - 1] = '~';
    at += shown;
    if (!right && !last) {
        memset(line + at, ' ', pad);
        at += pad;
    }
    return at;
}

static int write_text(const struct kernels_rows *rows, const struct kernels_options *opt,
                      const struct column **cols, int ncols, FILE *out)
{
    int widths[MAX_SELECTED], total = 0, all = ncols;
    int length = text_widths(rows, opt, cols, ncols, widths);
    /* In a terminal, columns that still do not fit are left out from the right (the caller
     * says how many), rather than every line wrapping. */
    while (opt->drop_columns && opt->width > 0 && length > opt->width && ncols > 1)
        length -= widths[--ncols] + 1;
    for (int c = 0; c < ncols; c++)
        total += (widths[c] > FIELD_SIZE ? widths[c] : FIELD_SIZE) + 1;
    char *line = malloc((size_t)total + 1);
    if (!line)
        return -ENOMEM;
    struct field f;
    size_t at = 0;
    for (int c = 0; c < ncols; c++) {
        if (c)
            line[at++] = ' ';
        at = append_text_field(line, at, cols[c]->name, widths[c], !cols[c]->flexible,
                               c == ncols - 1);
    }
    line[at++] = '\n';
    fwrite(line, 1, at, out);
    for (size_t i = 0; i < rows->count; i++) {
        if (!row_selected(&rows->rows[i], opt))
            continue;
        at = 0;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], &rows->rows[i], i, &f);
            if (c)
                line[at++] = ' ';
            at = append_text_field(line, at, f.text, widths[c], !cols[c]->flexible, c == ncols - 1);
        }
        line[at++] = '\n';
        fwrite(line, 1, at, out);
    }
    free(line);
    return all - ncols;
}

/* CSV and JSON lines are built in a buffer and written with one fwrite, like text lines. */
struct line {
    char *text;
    size_t used, size;
};

static int line_reserve(struct line *l, size_t more)
{
    if (l->used + more <= l->size)
        return 0;
    size_t size = (l->size ? l->size : 4096);
    while (size < l->used + more)
        size *= 2;
    char *grown = realloc(l->text, size);
    if (!grown)
        return -ENOMEM;
    l->text = grown;
    l->size = size;
    return 0;
}

static void line_put(struct line *l, const char *s, size_t len)
{
    memcpy(l->text + l->used, s, len); /* room reserved by the caller */
    l->used += len;
}

/* Room for any one field: FIELD_SIZE chars, each escaped to at most 6 (JSON \u00XX). */
#define FIELD_ROOM (6 * FIELD_SIZE + 64)

static void put_csv_value(struct line *l, const char *text)
{
    size_t len = strlen(text);
    if (!strpbrk(text, ",\"\n")) {
        line_put(l, text, len);
        return;
    }
    l->text[l->used++] = '"';
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            l->text[l->used++] = '"';
        l->text[l->used++] = *p;
    }
    l->text[l->used++] = '"';
}

static int write_csv(const struct kernels_rows *rows, const struct kernels_options *opt,
                     const struct column **cols, int ncols, FILE *out)
{
    struct line l = {0};
    struct field f;
    if (line_reserve(&l, (size_t)ncols * FIELD_ROOM + 2) < 0)
        return -ENOMEM;
    for (int c = 0; c < ncols; c++) {
        if (c)
            l.text[l.used++] = ',';
        put_csv_value(&l, cols[c]->name);
    }
    l.text[l.used++] = '\n';
    fwrite(l.text, 1, l.used, out);
    for (size_t i = 0; i < rows->count; i++) {
        if (!row_selected(&rows->rows[i], opt))
            continue;
        l.used = 0;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], &rows->rows[i], i, &f);
            if (c)
                l.text[l.used++] = ',';
            put_csv_value(&l, f.text);
        }
        l.text[l.used++] = '\n';
        fwrite(l.text, 1, l.used, out);
    }
    free(l.text);
    return 0;
}

static void put_json_string(struct line *l, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    l->text[l->used++] = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            l->text[l->used++] = '\\';
            l->text[l->used++] = (char)ch;
        } else if (ch < 0x20) {
            line_put(l, "\\u00", 4);
            l->text[l->used++] = hex[ch >> 4];
            l->text[l->used++] = hex[ch & 15];
        } else {
            l->text[l->used++] = (char)ch;
        }
    }
    l->text[l->used++] = '"';
}

static void put_json_value(struct line *l, const struct field *f)
{
    size_t len = strlen(f->text);
    if (f->is_null)
        line_put(l, "null", 4);
    else if (f->is_number) /* without the assumed-dtype '*': the row says dtype_assumed */
        line_put(l, f->text, len && f->text[len - 1] == '*' ? len - 1 : len);
    else
        put_json_string(l, f->text);
}

static int write_json(const struct kernels_rows *rows, const struct kernels_options *opt,
                      const struct column **cols, int ncols, FILE *out)
{
    struct line l = {0};
    struct field f;
    if (line_reserve(&l, (size_t)ncols * (FIELD_ROOM + 2 * FIELD_SIZE) + 64) < 0)
        return -ENOMEM;
    int first = 1;
    fputs("[", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct kernels_row *row = &rows->rows[i];
        if (!row_selected(row, opt))
            continue;
        l.used = 0;
        line_put(&l, first ? "\n{" : ",\n{", first ? 2 : 3);
        first = 0;
        for (int c = 0; c < ncols; c++) {
            fill(cols[c], row, i, &f);
            if (c)
                l.text[l.used++] = ',';
            put_json_string(&l, cols[c]->name);
            l.text[l.used++] = ':';
            put_json_value(&l, &f);
        }
        const char *assumed =
            row->dtype_assumed ? ",\"dtype_assumed\":true}" : ",\"dtype_assumed\":false}";
        line_put(&l, assumed, strlen(assumed));
        fwrite(l.text, 1, l.used, out);
    }
    fputs(first ? "]\n" : "\n]\n", out);
    free(l.text);
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
    case KERNELS_FORMAT_CSV:
        rc = write_csv(rows, opt, cols, ncols, out);
        break;
    case KERNELS_FORMAT_JSON:
        rc = write_json(rows, opt, cols, ncols, out);
        break;
    default:
        rc = write_text(rows, opt, cols, ncols, out);
        break;
    }
    return ferror(out) ? -EIO : rc;
}
