/* The table/CSV/JSON writer behind every report, analyze and the HTML page (see table.h). */
#include "output/table.h"
#include "output/csv.h"
#include "output/json.h"
#include "output/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct table {
    FILE *out;
    enum table_format format;
    const struct table_column *cols;
    int ncols, col;
    size_t rows;
    /* text format only: every cell formatted, row-major, until table_finish */
    char **cells;
    size_t ncells, cells_cap;
    size_t width;    /* table_fit: the lines' most columns, 0 for no limit */
    const int *drop; /* table_fit: each column's rank for leaving out (0: kept), or NULL */
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
    return -1;
}

static const char *unit_suffix(enum table_kind kind)
{
    return kind == TABLE_NS        ? " (ns)"
           : kind == TABLE_PERCENT ? " (%)"
           : kind == TABLE_BYTES   ? " (B)"
                                   : "";
}

struct table *table_new(FILE *out, enum table_format format, const struct table_column *cols,
                        int ncols)
{
    struct table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->out = out;
    t->format = format;
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
        csv_write_field(t->out, exact);
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

/* Writes s in width columns: padded (numbers on the right), or cut with a trailing '~' when
 * longer (a table fitted to a width, table_fit). The last column of a line is not padded on the
 * right: no trailing blanks. */
static void print_cell(FILE *out, const char *s, size_t width, int right, int last)
{
    size_t w = utf8_width(s);
    if (w > width) {
        fprintf(out, "%.*s~", (int)utf8_prefix(s, width ? width - 1 : 0), s);
        return;
    }
    if (right)
        fprintf(out, "%*s%s", (int)(width - w), "", s);
    else if (last)
        fputs(s, out);
    else
        fprintf(out, "%s%*s", s, (int)(width - w), "");
}

/* The columns a text table shows within t->width (0: every one, whole): columns with a drop
 * rank (t->drop) are left out, the highest rank first (those of one rank together), while the
 * lines are too long; then the widest
 * text column gives up a column at a time, down to TABLE_MIN_CUT, its cells cut with '~'. */
#define TABLE_MIN_CUT 12
static void fit_columns(const struct table *t, size_t *width, int *shown)
{
    size_t total = 0;
    for (int c = 0; c < t->ncols; c++)
        total += width[c] + (c ? 2 : 0);
    while (t->width && total > t->width) {
        int rank = 0;
        for (int c = 0; c < t->ncols; c++)
            if (shown[c] && t->drop && t->drop[c] > rank)
                rank = t->drop[c];
        if (!rank)
            break;
        for (int c = 0; c < t->ncols; c++) /* columns of one rank go together */
            if (shown[c] && t->drop[c] == rank) {
                shown[c] = 0;
                total -= width[c] + 2;
            }
    }
    while (t->width && total > t->width) {
        int widest = -1;
        for (int c = 0; c < t->ncols; c++)
            if (shown[c] && t->cols[c].kind == TABLE_TEXT && width[c] > TABLE_MIN_CUT &&
                (widest < 0 || width[c] > width[widest]))
                widest = c;
        if (widest < 0)
            break;
        width[widest]--;
        total--;
    }
}

/* Percentages say so in the header ("Time (%)"); durations carry their unit in each cell. */
static void print_text_table(struct table *t)
{
    size_t *width = calloc((size_t)t->ncols, sizeof *width);
    int *shown = calloc((size_t)t->ncols, sizeof *shown);
    char **headers = calloc((size_t)t->ncols, sizeof *headers);
    if (!width || !shown || !headers) {
        t->failed = 1;
        goto done;
    }
    for (int c = 0; c < t->ncols; c++) {
        if (asprintf(&headers[c], "%s%s", t->cols[c].name,
                     t->cols[c].kind == TABLE_PERCENT ? " (%)" : "") < 0) {
            headers[c] = NULL;
            t->failed = 1;
            goto done;
        }
        width[c] = utf8_width(headers[c]);
        shown[c] = 1;
    }
    for (size_t i = 0; i < t->ncells; i++) {
        size_t w = t->cells[i] ? utf8_width(t->cells[i]) : 0;
        if (w > width[i % (size_t)t->ncols])
            width[i % (size_t)t->ncols] = w;
    }
    fit_columns(t, width, shown);
    int first = 0, last = t->ncols - 1;
    while (first < last && !shown[first])
        first++;
    while (last > first && !shown[last])
        last--;
    for (int pass = 0; pass < 2; pass++) { /* the header, then the rule under it */
        for (int c = first; c <= last; c++) {
            if (!shown[c])
                continue;
            fputs(c == first ? "" : "  ", t->out);
            if (pass)
                for (size_t k = 0; k < width[c]; k++)
                    putc('-', t->out);
            else
                print_cell(t->out, headers[c], width[c], t->cols[c].kind != TABLE_TEXT, c == last);
        }
        putc('\n', t->out);
    }
    for (size_t i = 0; i < t->ncells; i++) {
        int c = (int)(i % (size_t)t->ncols);
        if (shown[c]) {
            fputs(c == first ? "" : "  ", t->out);
            print_cell(t->out, t->cells[i] ? t->cells[i] : "", width[c],
                       t->cols[c].kind != TABLE_TEXT, c == last);
        }
        if (c == t->ncols - 1)
            putc('\n', t->out);
    }
done:
    for (int c = 0; headers && c < t->ncols; c++)
        free(headers[c]);
    free(headers);
    free(shown);
    free(width);
}

void table_fit(struct table *t, int width, const int *drop)
{
    t->width = width > 0 ? (size_t)width : 0;
    t->drop = drop;
}

int table_finish(struct table *t)
{
    if (t->format == TABLE_FORMAT_TABLE)
        print_text_table(t);
    else if (t->format == TABLE_FORMAT_JSON)
        fputs(t->rows ? "\n]" : "]", t->out);
    int rc = t->failed || ferror(t->out) ? -1 : 0;
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
    return rc;
}
