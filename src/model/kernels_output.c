/* The three writers of `lantern kernels` over the columns of kernels_columns.c: columnated
 * text (space separated, no spaces or controls inside fields, so awk can read it; -w cuts the
 * text columns to fit), CSV and JSON, the last two escaped by the shared writers (src/output/).
 * Lines are built in a buffer and written with one fwrite: the report prints millions of
 * fields (bench/bench_kernels.c). JSON marks an assumed dtype with "dtype_assumed": true. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels.h"
#include "model/kernels_columns.h"
#include "model/kernels_output.h"
#include "output/csv.h"
#include "output/fit.h"
#include "output/json.h"
#include "output/utf8.h"

static int row_selected(const struct kernels_row *row, const struct kernels_options *opt)
{
    return !opt->hints_only || row->hints != 0;
}

/* Text widths: fixed columns keep theirs; flexible ones take their longest value and, with
 * -w, the widest are cut down in turn until the line fits (never below 4); in a terminal,
 * columns that still do not fit are left out from the right (output_fit_columns). Returns how
 * many were left out. */
static int text_widths(const struct kernels_rows *rows, const struct kernels_options *opt,
                       const struct kernels_column **cols, int ncols, int *widths)
{
    struct kernels_field f;
    unsigned flags[KERNELS_MAX_COLUMNS];
    int drop[KERNELS_MAX_COLUMNS];
    for (int c = 0; c < ncols; c++) {
        int header = (int)strlen(cols[c]->name);
        widths[c] = cols[c]->width > header ? cols[c]->width : header;
        if (cols[c]->flexible) {
            for (size_t i = 0; i < rows->count; i++) {
                if (!row_selected(&rows->rows[i], opt))
                    continue;
                kernels_column_fill(cols[c], &rows->rows[i], i, &f);
                int len = (int)strlen(f.text);
                if (len > widths[c])
                    widths[c] = len;
            }
        }
        flags[c] = cols[c]->flexible ? OUTPUT_FIT_FLEXIBLE : 0;
        drop[c] = opt->drop_columns ? c : 0; /* the rightmost first, never the first */
    }
    return output_fit_columns(widths, flags, drop, ncols, 1, opt->width, OUTPUT_FIT_MIN);
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
    for (size_t i = 0; i < shown; i++) { /* spaces and every control: C0, DEL and C1 */
        size_t control = text[i] == ' ' ? 1 : utf8_control((const unsigned char *)text + i);
        line[at + i] = control ? '_' : text[i];
        if (control == 2 && i + 1 < shown)
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
                      const struct kernels_column **cols, int ncols, FILE *out)
{
    int widths[KERNELS_MAX_COLUMNS], total = 0;
    /* in a terminal, rather than every line wrapping (the caller says how many) */
    int left_out = text_widths(rows, opt, cols, ncols, widths);
    ncols -= left_out; /* from the right */
    for (int c = 0; c < ncols; c++)
        total += (widths[c] > KERNELS_FIELD_SIZE ? widths[c] : KERNELS_FIELD_SIZE) + 1;
    char *line = malloc((size_t)total + 1);
    if (!line)
        return -ENOMEM;
    struct kernels_field f;
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
            kernels_column_fill(cols[c], &rows->rows[i], i, &f);
            if (c)
                line[at++] = ' ';
            at = append_text_field(line, at, f.text, widths[c], !cols[c]->flexible, c == ncols - 1);
        }
        line[at++] = '\n';
        fwrite(line, 1, at, out);
    }
    free(line);
    return left_out;
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

/* Room for any one field: KERNELS_FIELD_SIZE chars, each escaped to at most 6 (JSON \u00XX). */
#define FIELD_ROOM (JSON_ESCAPED_MAX(KERNELS_FIELD_SIZE) + 64)

static void put_csv_value(struct line *l, const char *text)
{
    l->used += csv_escape(l->text + l->used, text);
}

static int write_csv(const struct kernels_rows *rows, const struct kernels_options *opt,
                     const struct kernels_column **cols, int ncols, FILE *out)
{
    struct line l = {0};
    struct kernels_field f;
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
            kernels_column_fill(cols[c], &rows->rows[i], i, &f);
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
    l->used += json_escape(l->text + l->used, s, strlen(s));
}

static void put_json_value(struct line *l, const struct kernels_field *f)
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
                      const struct kernels_column **cols, int ncols, FILE *out)
{
    struct line l = {0}, keys = {0};
    struct kernels_field f;
    size_t key_end[KERNELS_MAX_COLUMNS]; /* column c's key ('"name":', ',' before all but the
                                          * first), escaped once, ends at keys.text + key_end[c] */
    if (line_reserve(&l, (size_t)ncols * (FIELD_ROOM + 2 * KERNELS_FIELD_SIZE) + 64) < 0 ||
        line_reserve(&keys, (size_t)ncols * (FIELD_ROOM + 2)) < 0) {
        free(l.text);
        return -ENOMEM;
    }
    for (int c = 0; c < ncols; c++) {
        if (c)
            keys.text[keys.used++] = ',';
        put_json_string(&keys, cols[c]->name);
        keys.text[keys.used++] = ':';
        key_end[c] = keys.used;
    }
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
            kernels_column_fill(cols[c], row, i, &f);
            size_t key_start = c ? key_end[c - 1] : 0;
            line_put(&l, keys.text + key_start, key_end[c] - key_start);
            put_json_value(&l, &f);
        }
        const char *assumed =
            row->dtype_assumed ? ",\"dtype_assumed\":true}" : ",\"dtype_assumed\":false}";
        line_put(&l, assumed, strlen(assumed));
        fwrite(l.text, 1, l.used, out);
    }
    fputs(first ? "]\n" : "\n]\n", out);
    free(keys.text);
    free(l.text);
    return 0;
}

int kernels_output_write(const struct kernels_rows *rows, const struct kernels_options *opt,
                         FILE *out)
{
    const struct kernels_column *cols[KERNELS_MAX_COLUMNS];
    const char *bad;
    const char *defaults =
        rows->has_metrics ? kernels_default_columns_measured : kernels_default_columns;
    int ncols =
        kernels_columns_select(opt->columns ? opt->columns : defaults, opt->hints_only, cols, &bad);
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
