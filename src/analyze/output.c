/* The three forms of `lantern analyze`'s output: text (the findings most costly first, one line
 * each; with details, each finding's advice and evidence table in human units, then every
 * rule), CSV (one line per evidence row, exact ns) and JSON (the ranking, then rules >
 * findings > evidence, exact ns). All go through the report table writer (table.h). */
#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "output/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct table_column evidence_columns[] = {
    {"Start", "start_ns", TABLE_NS},     {"Duration", "duration_ns", TABLE_NS},
    {"PID", "pid", TABLE_INT},           {"TID", "tid", TABLE_INT},
    {"GPU", "gpu", TABLE_INT},           {"Stream", "stream", TABLE_INT},
    {"NVTX Range", "range", TABLE_TEXT}, {"Name", "name", TABLE_TEXT},
    {"Detail", "detail", TABLE_TEXT},
};
#define EVIDENCE_COLUMNS (int)(sizeof evidence_columns / sizeof evidence_columns[0])

static void cell_int(struct table *t, int64_t v)
{
    if (v < 0)
        table_text(t, NULL);
    else
        table_int(t, v);
}

static void cell_ns(struct table *t, int64_t v)
{
    if (v < 0)
        table_text(t, NULL);
    else
        table_ns(t, (double)v);
}

static void evidence_cells(struct table *t, const struct analyze_evidence *e)
{
    cell_ns(t, e->start_ns);
    cell_ns(t, e->duration_ns);
    cell_int(t, e->pid);
    cell_int(t, e->tid);
    cell_int(t, e->gpu);
    cell_int(t, e->stream);
    table_text(t, e->range);
    table_text(t, e->name);
    table_text(t, e->detail);
}

static int write_evidence_table(const struct analyze_finding *f, enum table_format format,
                                int width, FILE *out)
{
    struct table *t = table_new(out, format, width, evidence_columns, EVIDENCE_COLUMNS);
    if (!t)
        return -ENOMEM;
    for (int e = 0; e < f->evidence_count; e++)
        evidence_cells(t, &f->evidence[e]);
    return table_finish(t);
}

static double share(const struct analyze_run *run, double ns)
{
    return run->duration_ns > 0 ? 100.0 * ns / (double)run->duration_ns : 0;
}

static const struct table_column summary_columns[] = {
    {"#", "rank", TABLE_INT},
    {"Could Save", "cost_ns", TABLE_NS},
    {"Share", "share_percent", TABLE_PERCENT},
    {"Rule", "rule", TABLE_TEXT},
    {"Finding", "summary", TABLE_TEXT},
};
#define SUMMARY_COLUMNS (int)(sizeof summary_columns / sizeof summary_columns[0])

/* The findings most costly first, one line each, as the HTML page ranks them. */
static int write_summary(const struct analyze_ranked *ranked, size_t n,
                         const struct analyze_run *run, int width, FILE *out)
{
    if (n == 0) {
        fputs("No rule found anything to fix.\n", out);
        return 0;
    }
    fputs("Findings, most costly first (the time each could save; the costs of different rules "
          "can overlap):\n\n",
          out);
    struct table *t = table_new(out, TABLE_FORMAT_TABLE, width, summary_columns, SUMMARY_COLUMNS);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        table_int(t, (int64_t)i + 1);
        table_ns(t, ranked[i].finding->cost_ns);
        table_percent(t, share(run, ranked[i].finding->cost_ns));
        table_text(t, ranked[i].result->rule->name);
        table_text(t, ranked[i].finding->summary);
    }
    return table_finish(t);
}

/* One finding whole: what it could save, the advice and its evidence. */
static int write_finding(const struct analyze_run *run, size_t rank, const struct analyze_ranked *r,
                         int width, FILE *out)
{
    const struct analyze_finding *f = r->finding;
    char cost[32];
    fprintf(out, "#%zu  %s: %s\n    could save: %s (%.1f %% of the run)", rank,
            r->result->rule->name, f->summary, analyze_fmt_ns(cost, sizeof cost, f->cost_ns),
            share(run, f->cost_ns));
    if (f->cost_j >= 0)
        fprintf(out, ", %.3f J", f->cost_j);
    fprintf(out, "\n    advice: %s\n", f->advice);
    if (f->host && f->host->summary)
        fprintf(out, "    host: %s\n", f->host->summary);
    int rc = 0;
    if (f->evidence_count) {
        fprintf(out, "    evidence (%d of %lld):\n", f->evidence_count,
                (long long)(f->count > f->evidence_count ? f->count : f->evidence_count));
        rc = write_evidence_table(f, TABLE_FORMAT_TABLE, width, out);
    }
    putc('\n', out);
    return rc;
}

/* Every rule: what it looks for, its threshold, what it found or why it could not look. */
static void write_rules(const struct analyze_run *run, FILE *out)
{
    fputs("Rules:\n", out);
    for (int i = 0; i < run->count; i++) {
        const struct analyze_result *res = &run->results[i];
        fprintf(out, "== %s: %s\n   threshold: %s\n", res->rule->name, res->rule->looks_for,
                res->rule->threshold);
        if (res->note)
            fprintf(out, "   note: %s\n", res->note);
        if (res->count)
            fprintf(out, "   %d finding%s%s", res->count, res->count == 1 ? "" : "s",
                    res->more ? " shown" : "");
        else
            fputs("   no finding", out);
        if (res->more)
            fprintf(out, " (%lld more not shown)", (long long)res->more);
        putc('\n', out);
    }
}

/* The summary; with details, each finding whole in the same order, then every rule. */
static int write_text(const struct analyze_run *run, const struct analyze_write_options *opt,
                      FILE *out)
{
    size_t n = 0;
    struct analyze_ranked *ranked = analyze_rank(run, &n);
    if (!ranked)
        return -ENOMEM;
    int rc = write_summary(ranked, n, run, opt->width, out), found = 0;
    for (int i = 0; i < run->count; i++)
        found += run->results[i].count > 0;
    if (!opt->details) {
        fprintf(out,
                "\n%d of %d rules found something (--details: each finding's advice and "
                "evidence, and what every rule looks for, its threshold and notes)\n",
                found, run->count);
        free(ranked);
        return rc;
    }
    putc('\n', out);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = write_finding(run, i + 1, &ranked[i], opt->width, out);
    write_rules(run, out);
    free(ranked);
    return rc;
}

static const struct table_column csv_columns[] = {
    {"Rule", "rule", TABLE_TEXT},
    {"Finding", "finding", TABLE_INT},
    {"Cost", "cost_ns", TABLE_NS},
    {"Share", "share", TABLE_PERCENT},
    {"Energy Cost (J)", "cost_j", TABLE_REAL},
    {"Count", "count", TABLE_INT},
    {"Summary", "summary", TABLE_TEXT},
    {"Advice", "advice", TABLE_TEXT},
    {"Start", "start_ns", TABLE_NS},
    {"Duration", "duration_ns", TABLE_NS},
    {"PID", "pid", TABLE_INT},
    {"TID", "tid", TABLE_INT},
    {"GPU", "gpu", TABLE_INT},
    {"Stream", "stream", TABLE_INT},
    {"NVTX Range", "range", TABLE_TEXT},
    {"Name", "name", TABLE_TEXT},
    {"Detail", "detail", TABLE_TEXT},
    {"Host", "host", TABLE_TEXT},
};

static void csv_finding_cells(struct table *t, const struct analyze_run *run,
                              const struct analyze_result *res, int k)
{
    const struct analyze_finding *f = &res->findings[k];
    table_text(t, res->rule->name);
    table_int(t, k + 1);
    table_ns(t, f->cost_ns);
    table_percent(t, share(run, f->cost_ns));
    if (f->cost_j >= 0)
        table_real(t, f->cost_j);
    else
        table_text(t, NULL);
    table_int(t, f->count);
    table_text(t, f->summary);
    table_text(t, f->advice);
}

static int write_csv(const struct analyze_run *run, int terminal, FILE *out)
{
    struct table *t = table_new(out, TABLE_FORMAT_CSV, 0, csv_columns,
                                (int)(sizeof csv_columns / sizeof csv_columns[0]));
    if (!t)
        return -ENOMEM;
    if (terminal)
        table_escape_csv_controls(t);
    static const struct analyze_evidence none = {-1, -1, -1, -1, -1, -1, NULL, NULL, NULL};
    for (int i = 0; i < run->count; i++) {
        const struct analyze_result *res = &run->results[i];
        if (res->note && res->count == 0) { /* the note, so CSV readers see why */
            table_text(t, res->rule->name);
            for (int c = 1; c < 6; c++)
                table_text(t, NULL);
            table_text(t, res->note);
            table_text(t, NULL);
            evidence_cells(t, &none);
            table_text(t, NULL);
        }
        for (int k = 0; k < res->count; k++) {
            const struct analyze_finding *f = &res->findings[k];
            for (int e = 0; e < (f->evidence_count ? f->evidence_count : 1); e++) {
                csv_finding_cells(t, run, res, k);
                evidence_cells(t, f->evidence_count ? &f->evidence[e] : &none);
                table_text(t, f->host ? f->host->summary : NULL);
            }
        }
    }
    return table_finish(t);
}

/* "ranked": the findings most costly first, each by its rule and place in the rule's list. */
static int write_json_ranked(const struct analyze_run *run, FILE *out)
{
    size_t n = 0;
    struct analyze_ranked *ranked = analyze_rank(run, &n);
    if (!ranked)
        return -ENOMEM;
    fputs("\"ranked\": [", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n {\"rule\": " : "\n {\"rule\": ", out);
        json_write_cstring(out, ranked[i].result->rule->name);
        fprintf(out, ", \"finding\": %lld, \"cost_ns\": ",
                (long long)(ranked[i].finding - ranked[i].result->findings) + 1);
        json_write_double(out, ranked[i].finding->cost_ns);
        fputs(", \"share_percent\": ", out);
        json_write_double(out, share(run, ranked[i].finding->cost_ns));
        fputs(", \"summary\": ", out);
        json_write_cstring(out, ranked[i].finding->summary);
        putc('}', out);
    }
    fputs("], ", out);
    free(ranked);
    return 0;
}

static void write_json_host(const struct analyze_host *h, FILE *out)
{
    if (!h) {
        fputs("null", out);
        return;
    }
    fputs("{\"summary\": ", out);
    json_write_cstring(out, h->summary);
    fprintf(out,
            ", \"sampled\": %s, \"samples\": %lld, \"window_ns\": ", h->sampled ? "true" : "false",
            (long long)h->samples);
    json_write_double(out, h->window_ns);
    fputs(", \"on_cpu_ns\": ", out);
    json_write_double(out, h->on_cpu_ns);
    fputs(", \"functions\": [", out);
    for (int i = 0; i < h->top_count; i++) {
        const struct analyze_host_function *fn = &h->top[i];
        fputs(i ? ", {\"function\": " : "{\"function\": ", out);
        json_write_cstring(out, fn->function);
        fputs(", \"module\": ", out);
        json_write_cstring(out, fn->module);
        fputs(", \"user_function\": ", out);
        json_write_cstring(out, fn->user_function);
        fputs(", \"user_module\": ", out);
        json_write_cstring(out, fn->user_module);
        fprintf(out, ", \"samples\": %lld}", (long long)fn->samples);
    }
    fprintf(out, "], \"blocked_ns\": %lld, \"blocking\": [", (long long)h->blocked_ns);
    for (int i = 0; i < h->blocking_count; i++) {
        fputs(i ? ", {\"name\": " : "{\"name\": ", out);
        json_write_cstring(out, h->blocking[i].name);
        fprintf(out, ", \"calls\": %lld, \"ns\": %lld", (long long)h->blocking[i].calls,
                (long long)h->blocking[i].ns);
        if (h->blocking[i].caller) {
            fputs(", \"caller\": ", out);
            json_write_cstring(out, h->blocking[i].caller);
            fprintf(out, ", \"caller_ns\": %lld", (long long)h->blocking[i].caller_ns);
        }
        fputc('}', out);
    }
    putc(']', out);
    if (h->gil_waits) { /* only where there are some: other sessions' output stays as it was */
        fprintf(out, ", \"gil_waits\": %lld, \"gil_wait_ns\": %lld, \"gil_functions\": [",
                (long long)h->gil_waits, (long long)h->gil_wait_ns);
        for (int i = 0; i < h->gil_top_count; i++) {
            fputs(i ? ", {\"function\": " : "{\"function\": ", out);
            json_write_cstring(out, h->gil_top[i].function);
            fprintf(out, ", \"ns\": %lld}", (long long)h->gil_top[i].ns);
        }
        putc(']', out);
    }
    if (h->state_threads) /* only where the states are known */
        fprintf(out, ", \"state_threads\": %d, \"state_ns\": %.0f, \"blocked_state_ns\": %.0f,"
                     " \"preempted_state_ns\": %.0f",
                h->state_threads, h->state_ns, h->state_blocked_ns, h->state_preempted_ns);
    fputs(", \"pattern\": ", out);
    json_write_cstring(out, h->pattern);
    fputs(", \"pattern_percent\": ", out);
    if (h->pattern)
        json_write_double(out, h->pattern_percent);
    else
        fputs("null", out);
    putc('}', out);
}

static int write_json(const struct analyze_run *run, FILE *out)
{
    int rc = 0;
    fprintf(out, "{\"duration_ns\": %lld, ", (long long)run->duration_ns);
    if (write_json_ranked(run, out) < 0)
        return -ENOMEM;
    fputs("\"rules\": [", out);
    for (int i = 0; i < run->count; i++) {
        const struct analyze_result *res = &run->results[i];
        fputs(i ? ",\n {\"name\": " : "\n {\"name\": ", out);
        json_write_cstring(out, res->rule->name);
        fputs(", \"looks_for\": ", out);
        json_write_cstring(out, res->rule->looks_for);
        fputs(", \"threshold\": ", out);
        json_write_cstring(out, res->rule->threshold);
        fputs(", \"note\": ", out);
        json_write_cstring(out, res->note);
        fprintf(out, ", \"findings_not_shown\": %lld, \"findings\": [", (long long)res->more);
        for (int k = 0; k < res->count; k++) {
            const struct analyze_finding *f = &res->findings[k];
            fputs(k ? ",\n  {\"summary\": " : "\n  {\"summary\": ", out);
            json_write_cstring(out, f->summary);
            fputs(", \"advice\": ", out);
            json_write_cstring(out, f->advice);
            fputs(", \"cost_ns\": ", out);
            json_write_double(out, f->cost_ns);
            fputs(", \"share_percent\": ", out);
            json_write_double(out, share(run, f->cost_ns));
            fputs(", \"cost_j\": ", out);
            if (f->cost_j >= 0)
                json_write_double(out, f->cost_j);
            else
                fputs("null", out);
            fprintf(out, ", \"count\": %lld, \"evidence\": ", (long long)f->count);
            if (write_evidence_table(f, TABLE_FORMAT_JSON, 0, out) < 0)
                rc = -EIO;
            fputs(", \"host\": ", out);
            write_json_host(f->host, out);
            putc('}', out);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    return rc;
}

int analyze_write(const struct analyze_run *run, enum table_format format,
                  const struct analyze_write_options *opt, FILE *out)
{
    int rc = format == TABLE_FORMAT_CSV    ? write_csv(run, opt->terminal, out)
             : format == TABLE_FORMAT_JSON ? write_json(run, out)
                                           : write_text(run, opt, out);
    return rc < 0 ? rc : ferror(out) ? -EIO : 0;
}
