/* The table/CSV/JSON writer behind every report, analyze and the HTML page (see table.h). */
#include "output/table.h"
#include "output/csv.h"
#include "output/fit.h"
#include "output/json.h"
#include "output/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Characters of a name a fitted table keeps before it leaves numbers out (output/fit.h) */
#define TABLE_NAME_KEEP 20

struct table {
    FILE *out;
    enum table_format format;
    int width;       /* text: fit into this many columns (0: no limit) */
    int csv_escaped; /* CSV: control characters escaped (a terminal) */
    const struct table_column *cols;
    int ncols, col;
    size_t rows;
    /* text format only: every cell formatted, row-major, until table_finish */
    char **cells;
    size_t ncells, cells_cap;
    const int *drop; /* text: each column's rank for leaving out (table_drop_ranks), or NULL */
    int failed;
};

int table_parse_format(const char *name, enum table_format *out)
{
    static const char *const names[] = {"table", "csv", "json"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) {
            *out = (enum table_format)i;
            return 0;
        }
    return -EINVAL;
}

static const char *unit_suffix(enum table_kind kind)
{
    return kind == TABLE_NS        ? " (ns)"
           : kind == TABLE_PERCENT ? " (%)"
           : kind == TABLE_BYTES   ? " (B)"
                                   : "";
}

struct table *table_new(FILE *out, enum table_format format, int width,
                        const struct table_column *cols, int ncols)
{
    struct table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->out = out;
    t->format = format;
    t->width = width;
    t->cols = cols;
    t->ncols = ncols;
    if (format == TABLE_FORMAT_CSV) {
        for (int i = 0; i < ncols; i++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", cols[i].name, unit_suffix(cols[i].kind));
            if (i)
                putc(',', out);
            csv_write_field(out, name);
        }
        putc('\n', out);
    } else if (format == TABLE_FORMAT_JSON) {
        putc('[', out);
    }
    return t;
}

char *table_escape_controls(const char *text)
{
    size_t len = strlen(text);
    char *out = malloc(len * 4 + 1), *o = out; /* each byte at most 4: \xNN */
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        size_t control = utf8_control(p);
        if (!control) {
            *o++ = (char)*p;
            continue;
        }
        unsigned code = control == 2 ? *++p : *p; /* a C1 control: its second byte */
        const char *named = code == '\n'   ? "\\n"
                            : code == '\t' ? "\\t"
                            : code == '\r' ? "\\r"
                            : code == 0x1B ? "\\e"
                                           : NULL;
        if (named) {
            memcpy(o, named, 2);
            o += 2;
        } else {
            o += sprintf(o, "\\x%02x", code);
        }
    }
    *o = 0;
    return out;
}

static void store_cell(struct table *t, const char *text)
{
    if (t->ncells == t->cells_cap) {
        size_t cap = t->cells_cap ? t->cells_cap * 2 : 64;
        char **cells = realloc(t->cells, cap * sizeof *cells);
        if (!cells) {
            t->failed = 1;
            return;
        }
        t->cells = cells;
        t->cells_cap = cap;
    }
    char *copy = table_escape_controls(text ? text : "");
    if (!copy)
        t->failed = 1;
    t->cells[t->ncells++] = copy;
}

void table_escape_csv_controls(struct table *t)
{
    t->csv_escaped = 1;
}

/* A CSV field, its control characters escaped for a terminal when asked. */
static void put_csv_field(struct table *t, const char *exact)
{
    char *shown = t->csv_escaped && exact ? table_escape_controls(exact) : NULL;
    if (t->csv_escaped && exact && !shown)
        t->failed = 1;
    csv_write_field(t->out, shown ? shown : exact);
    free(shown);
}

/* Every cell passes here: text tables store it, CSV and JSON write it now. json_value is
 * the exact form (already JSON), text the human form. */
static void put_cell(struct table *t, const char *text, const char *exact, int is_string)
{
    const struct table_column *c = &t->cols[t->col];
    switch (t->format) {
    case TABLE_FORMAT_TABLE:
        store_cell(t, text);
        break;
    case TABLE_FORMAT_CSV:
        if (t->col)
            putc(',', t->out);
        put_csv_field(t, exact);
        break;
    case TABLE_FORMAT_JSON:
        fputs(t->col ? ", " : t->rows ? ",\n {" : "\n {", t->out);
        json_write_cstring(t->out, c->key);
        fputs(": ", t->out);
        if (is_string || !exact)
            json_write_cstring(t->out, exact);
        else
            fputs(exact, t->out);
        break;
    }
    if (++t->col < t->ncols)
        return;
    t->col = 0;
    t->rows++;
    if (t->format == TABLE_FORMAT_CSV)
        putc('\n', t->out);
    else if (t->format == TABLE_FORMAT_JSON)
        putc('}', t->out);
}

void table_text(struct table *t, const char *text)
{
    put_cell(t, text, text, 1);
}

void table_int(struct table *t, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    put_cell(t, buf, buf, 0);
}

/* Whole numbers print without a fraction; otherwise up to three decimals (averages and
 * standard deviations of integer nanoseconds). */
static void format_exact(char *buf, size_t size, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, size, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9e15) {
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    snprintf(buf, size, "%.3f", v);
    char *end = buf + strlen(buf) - 1;
    while (*end == '0')
        *end-- = 0;
    if (*end == '.') /* 1.0002 -> "1.000" -> "1", not "1." (no JSON number) */
        *end = 0;
}

void table_format_duration(char *buf, size_t size, double ns)
{
    double a = fabs(ns);
    if (a < 1e3)
        snprintf(buf, size, "%.0f ns", ns);
    else if (a < 1e6)
        snprintf(buf, size, "%.3f µs", ns / 1e3);
    else if (a < 1e9)
        snprintf(buf, size, "%.3f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", ns / 1e9);
}

void table_ns(struct table *t, double ns)
{
    char human[32], exact[32];
    table_format_duration(human, sizeof human, ns);
    format_exact(exact, sizeof exact, ns);
    put_cell(t, human, exact, 0);
}

void table_percent(struct table *t, double percent)
{
    char human[32], exact[32];
    snprintf(human, sizeof human, "%.1f", percent);
    snprintf(exact, sizeof exact, "%.3f", percent);
    put_cell(t, human, exact, 0);
}

void table_bytes(struct table *t, double bytes)
{
    char human[32], exact[32];
    snprintf(human, sizeof human, "%.3f MB", bytes / 1e6);
    format_exact(exact, sizeof exact, bytes);
    put_cell(t, human, exact, 0);
}

void table_real(struct table *t, double v)
{
    char human[32], exact[32];
    snprintf(human, sizeof human, "%.2f", v);
    format_exact(exact, sizeof exact, v);
    put_cell(t, human, exact, 0);
}

/* s in width columns: padded (on the left when right), or cut to width - 1 of its
 * characters and '~'. With last, no blanks after it. */
static void print_padded(FILE *out, const char *s, int width, int right, int last)
{
    int w = (int)utf8_width(s);
    if (w > width) {
        fprintf(out, "%.*s~", (int)utf8_prefix(s, width > 0 ? (size_t)width - 1 : 0), s);
    } else if (right) {
        fprintf(out, "%*s%s", width - w, "", s);
    } else if (last) {
        fputs(s, out); /* no trailing blanks after the last column */
    } else {
        fprintf(out, "%s%*s", s, width - w, "");
    }
}

/* The columns that fit t->width (output/fit.h): text cut; numbers left out from the right,
 * or the columns the caller ranked (table_drop_ranks) in their order (width 0). Returns how
 * many were left out, or -ENOMEM. */
static int fit_widths(struct table *t, char **headers, int *width)
{
    unsigned *flags = calloc((size_t)t->ncols, sizeof *flags);
    int *drop = calloc((size_t)t->ncols, sizeof *drop);
    if (!flags || !drop) {
        free(flags);
        free(drop);
        return -ENOMEM;
    }
    for (int c = 0; c < t->ncols; c++) {
        width[c] = (int)utf8_width(headers[c]);
        flags[c] = t->cols[c].kind == TABLE_TEXT ? OUTPUT_FIT_FLEXIBLE : 0;
        drop[c] = t->drop ? t->drop[c] : t->cols[c].kind == TABLE_TEXT ? 0 : c + 1;
    }
    for (size_t i = 0; i < t->ncells; i++) {
        int w = t->cells[i] ? (int)utf8_width(t->cells[i]) : 0;
        if (w > width[i % (size_t)t->ncols])
            width[i % (size_t)t->ncols] = w;
    }
    int left_out = output_fit_columns(width, flags, drop, t->ncols, 2, t->width, TABLE_NAME_KEEP);
    free(flags);
    free(drop);
    return left_out;
}

/* Percentages say so in the header ("Time (%)"); durations carry their unit in each cell. */
static void print_text_table(struct table *t)
{
    int ncols = t->ncols, *width = calloc((size_t)ncols, sizeof *width), left_out = -1;
    char **headers = calloc((size_t)ncols, sizeof *headers);
    int ok = width && headers;
    for (int c = 0; ok && c < ncols; c++)
        if (asprintf(&headers[c], "%s%s", t->cols[c].name,
                     t->cols[c].kind == TABLE_PERCENT ? " (%)" : "") < 0) {
            headers[c] = NULL;
            ok = 0;
        }
    if (ok)
        left_out = fit_widths(t, headers, width);
    if (left_out < 0) {
        t->failed = 1;
        goto out;
    }
    int first = 0, last = ncols - 1; /* the columns shown first and last */
    while (first < last && !width[first])
        first++;
    while (last > first && !width[last])
        last--;
    for (int pass = 0; pass < 2; pass++) { /* the header, then the rule under it */
        for (int c = first; c <= last; c++) {
            if (!width[c])
                continue;
            fputs(c == first ? "" : "  ", t->out);
            if (pass)
                for (int k = 0; k < width[c]; k++)
                    putc('-', t->out);
            else
                print_padded(t->out, headers[c], width[c], t->cols[c].kind != TABLE_TEXT,
                             c == last);
        }
        putc('\n', t->out);
    }
    for (size_t i = 0; i < t->ncells; i++) {
        int c = (int)(i % (size_t)ncols);
        if (width[c]) {
            fputs(c == first ? "" : "  ", t->out);
            print_padded(t->out, t->cells[i] ? t->cells[i] : "", width[c],
                         t->cols[c].kind != TABLE_TEXT, c == last);
        }
        if (c == ncols - 1)
            putc('\n', t->out);
    }
    if (left_out > 0) { /* the columns left out, by name */
        fputs("(left out to fit", t->out);
        for (int c = 0, n = 0; c < ncols; c++)
            if (!width[c])
                fprintf(t->out, "%s %s", n++ ? "," : ":", headers[c]);
        fputs("; -w 0 or a wider terminal shows them)\n", t->out);
    }
out:
    for (int c = 0; headers && c < ncols; c++)
        free(headers[c]);
    free(headers);
    free(width);
}

void table_drop_ranks(struct table *t, const int *drop)
{
    t->drop = drop;
}

int table_finish(struct table *t)
{
    if (t->format == TABLE_FORMAT_TABLE)
        print_text_table(t);
    else if (t->format == TABLE_FORMAT_JSON)
        fputs(t->rows ? "\n]" : "]", t->out);
    int rc = t->failed ? -ENOMEM : ferror(t->out) ? -EIO : 0;
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
    return rc;
}
