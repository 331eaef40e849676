/* The diff as text (the checks and warnings first, then a table fitted to the terminal, the
 * explanations and a summary line), as CSV (one line per row, every field) and as JSON
 * (everything); docs/diff.md describes each field. */
#include "diff/diff_internal.h"
#include "output/csv.h"
#include "output/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const unit_names[] = {
    [DIFF_UNIT_NS] = "ns", [DIFF_UNIT_JOULES] = "J", [DIFF_UNIT_PERCENT] = "%"};

void diff_format_value(char *buf, size_t size, double v, enum diff_unit unit)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else if (unit == DIFF_UNIT_NS)
        table_format_duration(buf, size, v);
    else if (unit == DIFF_UNIT_JOULES)
        snprintf(buf, size, "%.3f J", v);
    else
        snprintf(buf, size, "%.1f %%", v);
}

void diff_format_change(char *buf, size_t size, double v, enum diff_unit unit)
{
    if (isnan(v)) {
        snprintf(buf, size, "-");
    } else if (unit == DIFF_UNIT_NS) {
        buf[0] = v < 0 ? '-' : '+';
        table_format_duration(buf + 1, size - 1, fabs(v));
    } else if (unit == DIFF_UNIT_JOULES) {
        snprintf(buf, size, "%+.3f J", v);
    } else {
        snprintf(buf, size, "%+.1f pp", v); /* percentage points */
    }
}

char *diff_row_label(const struct diff_row *r)
{
    char *label;
    int n = r->kind == DIFF_KIND_RANGE_KERNEL ? asprintf(&label, "%s in %s", r->name, r->scope)
            : r->kind == DIFF_KIND_METRIC     ? asprintf(&label, "%s of %s", r->scope, r->name)
                                              : asprintf(&label, "%s", r->name);
    return n < 0 ? NULL : label;
}

/* "+19.8 %", or the change in the row's unit where the base is 0. */
static void change_cell(char *buf, size_t size, const struct diff_row *r)
{
    if (!isnan(r->percent))
        snprintf(buf, size, "%+.1f %%", r->percent);
    else
        diff_format_change(buf, size, r->change, r->unit);
}

static void interval_cell(char *buf, size_t size, const struct diff_row *r)
{
    char low[40], high[40];
    if (!isnan(r->percent_low)) {
        snprintf(buf, size, "%+.1f…%+.1f %%", r->percent_low, r->percent_high);
    } else if (!isnan(r->change_low)) {
        diff_format_change(low, sizeof low, r->change_low, r->unit);
        diff_format_change(high, sizeof high, r->change_high, r->unit);
        snprintf(buf, size, "%s…%s", low, high);
    } else {
        snprintf(buf, size, "-");
    }
}

static void spread_cell(char *buf, size_t size, const struct diff_side *s, enum diff_unit unit)
{
    char low[40], high[40];
    if (!s->count) {
        snprintf(buf, size, "-");
        return;
    }
    diff_format_value(low, sizeof low, s->p10, unit);
    diff_format_value(high, sizeof high, s->p90, unit);
    snprintf(buf, size, "%s…%s", low, high);
}

static void q_cell(char *buf, size_t size, double q)
{
    if (isnan(q))
        snprintf(buf, size, "-");
    else if (q < 1e-4)
        snprintf(buf, size, "<1e-4");
    else
        snprintf(buf, size, "%.3g", q);
}

static int shown_in_table(const struct diff_row *r, int all)
{
    return all || (r->verdict != DIFF_SAME && r->verdict != DIFF_UNTESTED) ||
           r->kind == DIFF_KIND_RANGE || r->kind == DIFF_KIND_RUN;
}

static const struct table_column text_columns[] = {
    {"Verdict", "verdict", TABLE_TEXT},
    {"Change", "change", TABLE_FORMATTED},
    {"95 % CI", "interval", TABLE_FORMATTED},
    {"Δ Median", "delta", TABLE_FORMATTED},
    {"Base", "base", TABLE_FORMATTED},
    {"New", "new", TABLE_FORMATTED},
    {"Base p10…p90", "base_spread", TABLE_FORMATTED},
    {"New p10…p90", "new_spread", TABLE_FORMATTED},
    {"Base N", "base_count", TABLE_INT},
    {"New N", "new_count", TABLE_INT},
    {"q", "q", TABLE_FORMATTED},
    {"Kind", "kind", TABLE_TEXT},
    {"Name", "name", TABLE_TEXT},
};
/* What a narrow terminal gives up first: the spreads, q, the counts, the change in time, the
 * kind. */
static const int text_drop[] = {0, 0, 0, 3, 0, 0, 6, 6, 2, 2, 5, 4, 0};

static void mode_line(const struct diff_result *res, FILE *out)
{
    fprintf(out,
            "Compared:        %d base run%s with %d new run%s, %s; change beyond %g %% and "
            "false-discovery rate %g %%; 95 %% intervals\n",
            res->base_runs, res->base_runs == 1 ? "" : "s", res->new_runs,
            res->new_runs == 1 ? "" : "s",
            res->mode == DIFF_MODE_RUNS
                ? "by the runs' medians (bootstrap over runs)"
                : "by their instances (Mann-Whitney U, bootstrap of the medians)",
            res->options.threshold_percent, 100 * res->options.alpha);
}

int diff_write_checks(const struct diff_result *res, FILE *out)
{
    const char *const *paths[2] = {res->base_paths, res->new_paths};
    int counts[2] = {res->base_runs, res->new_runs};
    for (int side = 0; side < 2; side++) {
        fputs(side ? "New:            " : "Base:           ", out);
        for (int i = 0; i < counts[side]; i++)
            fprintf(out, " %s", paths[side][i]);
        putc('\n', out);
    }
    mode_line(res, out);
    fputs("Checks:\n", out);
    for (size_t i = 0; i < res->check_count; i++) {
        char *text = table_escape_controls(res->checks[i].text); /* a command line's bytes */
        fprintf(out, "  %-18s %s%s\n", res->checks[i].what,
                res->checks[i].differs ? "DIFFERS: " : "", text ? text : "");
        free(text);
    }
    for (size_t i = 0; i < res->warning_count; i++)
        fprintf(out, "warning: %s\n", res->warnings[i]);
    return ferror(out) ? -EIO : 0;
}

static int write_text(const struct diff_result *res, int width, int all, FILE *out)
{
    if (diff_write_checks(res, out) < 0)
        return -EIO;
    putc('\n', out);
    struct table *t = table_new(out, TABLE_FORMAT_TABLE, width, text_columns,
                                sizeof text_columns / sizeof *text_columns);
    if (!t)
        return -ENOMEM;
    table_drop_ranks(t, text_drop);
    size_t hidden = 0;
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        if (!shown_in_table(r, all)) {
            hidden++;
            continue;
        }
        char cell[96];
        table_text(t, diff_verdict_names[r->verdict]);
        change_cell(cell, sizeof cell, r);
        table_text(t, cell);
        interval_cell(cell, sizeof cell, r);
        table_text(t, cell);
        diff_format_change(cell, sizeof cell, r->change, r->unit);
        table_text(t, cell);
        diff_format_value(cell, sizeof cell, r->base.median, r->unit);
        table_text(t, cell);
        diff_format_value(cell, sizeof cell, r->new.median, r->unit);
        table_text(t, cell);
        spread_cell(cell, sizeof cell, &r->base, r->unit);
        table_text(t, cell);
        spread_cell(cell, sizeof cell, &r->new, r->unit);
        table_text(t, cell);
        table_int(t, r->base.count);
        table_int(t, r->new.count);
        q_cell(cell, sizeof cell, r->q);
        table_text(t, cell);
        table_text(t, diff_kinds[r->kind].name);
        char *name = diff_row_label(r);
        table_text(t, name ? name : r->name);
        free(name);
    }
    if (table_finish(t) < 0)
        return -EIO;
    int explained = 0;
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        if (!r->explanation)
            continue;
        char *name = table_escape_controls(r->name), *line = table_escape_controls(r->explanation);
        fprintf(out, "%s  %s  %s\n", explained++ ? "" : "\nWhat changed inside the ranges:\n",
                name ? name : "", line ? line : "");
        free(name);
        free(line);
    }
    fputc('\n', out);
    for (int v = 0; v < DIFF_VERDICT_COUNT; v++)
        fprintf(out, "%s%zu %s", v ? ", " : "", res->verdicts[v], diff_verdict_names[v]);
    fprintf(out, " (%zu rows", res->count);
    if (hidden)
        fprintf(out, "; %zu same or untested not shown: --all shows them", hidden);
    fputs(")\n", out);
    return ferror(out) ? -EIO : 0;
}

static void csv_number(FILE *out, double v)
{
    putc(',', out);
    if (isfinite(v))
        fprintf(out, "%.15g", v);
}

static int write_csv(const struct diff_result *res, FILE *out)
{
    fputs("verdict,kind,scope,name,unit,test,p,q,change,change_low,change_high,percent,"
          "percent_low,percent_high,base_count,base_runs,base_median,base_p10,base_p90,"
          "base_total,new_count,new_runs,new_median,new_p10,new_p90,new_total,explanation\n",
          out);
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        const struct diff_side *sides[2] = {&r->base, &r->new};
        const char *fields[] = {diff_verdict_names[r->verdict],
                                diff_kinds[r->kind].name,
                                r->scope,
                                r->name,
                                unit_names[r->unit],
                                r->test};
        for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) {
            if (f)
                putc(',', out);
            csv_write_field(out, fields[f]);
        }
        const double numbers[] = {r->p,           r->q,       r->change,      r->change_low,
                                  r->change_high, r->percent, r->percent_low, r->percent_high};
        for (size_t f = 0; f < sizeof numbers / sizeof *numbers; f++)
            csv_number(out, numbers[f]);
        for (int s = 0; s < 2; s++) {
            fprintf(out, ",%lld,%d", (long long)sides[s]->count, sides[s]->runs);
            csv_number(out, sides[s]->median);
            csv_number(out, sides[s]->p10);
            csv_number(out, sides[s]->p90);
            csv_number(out, sides[s]->total);
        }
        putc(',', out);
        csv_write_field(out, r->explanation);
        putc('\n', out);
    }
    return ferror(out) ? -EIO : 0;
}

static void json_key_number(FILE *out, const char *key, double v)
{
    fprintf(out, ", \"%s\": ", key);
    json_write_double(out, v);
}

static void json_side(FILE *out, const char *key, const struct diff_side *s)
{
    fprintf(out, ", \"%s\": {\"count\": %lld, \"runs\": %d", key, (long long)s->count, s->runs);
    json_key_number(out, "median", s->median);
    json_key_number(out, "p10", s->p10);
    json_key_number(out, "p90", s->p90);
    json_key_number(out, "total", s->total);
    putc('}', out);
}

static void json_parts(FILE *out, const struct diff_row *r)
{
    fputs(", \"parts\": [", out);
    for (size_t i = 0; i < r->part_count; i++) {
        const struct diff_part *p = &r->parts[i];
        fprintf(out, "%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "", diff_part_names[p->kind]);
        json_write_cstring(out, p->name);
        json_key_number(out, "base_ns", p->base);
        json_key_number(out, "new_ns", p->new);
        json_key_number(out, "change_ns", p->new - p->base);
        json_key_number(out, "tensor_active", p->tensor >= 0 ? p->tensor : NAN);
        putc('}', out);
    }
    putc(']', out);
}

static void json_row(FILE *out, const struct diff_row *r)
{
    fputs("{\"kind\": ", out);
    json_write_cstring(out, diff_kinds[r->kind].name);
    fputs(", \"scope\": ", out);
    json_write_cstring(out, r->scope);
    fputs(", \"name\": ", out);
    json_write_cstring(out, r->name);
    fprintf(out, ", \"unit\": \"%s\", \"verdict\": \"%s\", \"test\": ", unit_names[r->unit],
            diff_verdict_names[r->verdict]);
    json_write_cstring(out, r->test);
    json_key_number(out, "p", r->p);
    json_key_number(out, "q", r->q);
    json_key_number(out, "change", r->change);
    json_key_number(out, "change_low", r->change_low);
    json_key_number(out, "change_high", r->change_high);
    json_key_number(out, "percent", r->percent);
    json_key_number(out, "percent_low", r->percent_low);
    json_key_number(out, "percent_high", r->percent_high);
    json_side(out, "base", &r->base);
    json_side(out, "new", &r->new);
    fputs(", \"explanation\": ", out);
    json_write_cstring(out, r->explanation);
    if (r->explanation)
        json_parts(out, r);
    putc('}', out);
}

static void json_paths(FILE *out, const char *key, const char *const *paths, int n)
{
    fprintf(out, "\"%s\": [", key);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", out);
        json_write_cstring(out, paths[i]);
    }
    fputs("], ", out);
}

static int write_json(const struct diff_result *res, FILE *out)
{
    fputs("{", out);
    json_paths(out, "base", res->base_paths, res->base_runs);
    json_paths(out, "new", res->new_paths, res->new_runs);
    fprintf(out, "\"mode\": \"%s\", \"threshold_percent\": ",
            res->mode == DIFF_MODE_RUNS ? "runs" : "instances");
    json_write_double(out, res->options.threshold_percent);
    fputs(", \"alpha\": ", out);
    json_write_double(out, res->options.alpha);
    fputs(", \"confidence\": 0.95,\n \"checks\": [", out);
    for (size_t i = 0; i < res->check_count; i++) {
        fprintf(out, "%s{\"what\": ", i ? ", " : "");
        json_write_cstring(out, res->checks[i].what);
        fputs(", \"text\": ", out);
        json_write_cstring(out, res->checks[i].text);
        fprintf(out, ", \"differs\": %s}", res->checks[i].differs ? "true" : "false");
    }
    fputs("],\n \"warnings\": [", out);
    for (size_t i = 0; i < res->warning_count; i++) {
        fputs(i ? ", " : "", out);
        json_write_cstring(out, res->warnings[i]);
    }
    fputs("],\n \"summary\": {", out);
    for (int v = 0; v < DIFF_VERDICT_COUNT; v++)
        fprintf(out, "%s\"%s\": %zu", v ? ", " : "", diff_verdict_names[v], res->verdicts[v]);
    fprintf(out, "}, \"regressions\": %zu,\n \"rows\": [", diff_regressions(res));
    for (size_t i = 0; i < res->count; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        json_row(out, &res->rows[i]);
    }
    fputs("]}\n", out);
    return ferror(out) ? -EIO : 0;
}

int diff_write(const struct diff_result *res, enum table_format format, int width, int all,
               FILE *out)
{
    if (format == TABLE_FORMAT_CSV)
        return write_csv(res, out);
    if (format == TABLE_FORMAT_JSON)
        return write_json(res, out);
    return write_text(res, width, all, out);
}
