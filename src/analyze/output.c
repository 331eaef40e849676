/* The three forms of `lantern analyze`'s output: a text section per rule (findings, advice,
 * an evidence table in human units), CSV (one line per evidence row, exact ns) and JSON (rules
 * > findings > evidence, exact ns). All go through the report table writer (table.h). */
#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "output/json.h"

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
                                FILE *out)
{
    struct table *t = table_new(out, format, evidence_columns, EVIDENCE_COLUMNS);
    if (!t)
        return -1;
    for (int e = 0; e < f->evidence_count; e++)
        evidence_cells(t, &f->evidence[e]);
    return table_finish(t);
}

static double share(const struct analyze_run *run, double ns)
{
    return run->duration_ns > 0 ? 100.0 * ns / (double)run->duration_ns : 0;
}

static int write_text(const struct analyze_run *run, FILE *out)
{
    int rc = 0;
    for (int i = 0; i < run->count; i++) {
        const struct analyze_result *res = &run->results[i];
        double total = 0;
        for (int k = 0; k < res->count; k++)
            total += res->findings[k].cost_ns;
        char cost[32];
        fprintf(out, "== %s: %s\n   threshold: %s\n", res->rule->name, res->rule->looks_for,
                res->rule->threshold);
        if (res->note)
            fprintf(out, "   note: %s\n", res->note);
        if (res->count == 0) {
            fputs("   no finding\n\n", out);
            continue;
        }
        fprintf(out, "   %d finding%s%s, could save up to %s (%.1f %% of the run)\n\n", res->count,
                res->count == 1 ? "" : "s", res->more ? " shown" : "",
                analyze_fmt_ns(cost, sizeof cost, total), share(run, total));
        for (int k = 0; k < res->count; k++) {
            const struct analyze_finding *f = &res->findings[k];
            fprintf(out, "#%d  %s\n    cost: %s (%.1f %% of the run)", k + 1, f->summary,
                    analyze_fmt_ns(cost, sizeof cost, f->cost_ns), share(run, f->cost_ns));
            if (f->cost_j >= 0)
                fprintf(out, ", %.3f J", f->cost_j);
            fprintf(out, "\n    advice: %s\n", f->advice);
            if (f->host && f->host->summary)
                fprintf(out, "    host: %s\n", f->host->summary);
            if (f->evidence_count) {
                fprintf(out, "    evidence (%d of %lld):\n", f->evidence_count,
                        (long long)(f->count > f->evidence_count ? f->count : f->evidence_count));
                if (write_evidence_table(f, TABLE_FORMAT_TABLE, out) < 0)
                    rc = -1;
            }
            putc('\n', out);
        }
        if (res->more)
            fprintf(out, "   (%lld more findings not shown)\n\n", (long long)res->more);
    }
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

static int write_csv(const struct analyze_run *run, FILE *out)
{
    struct table *t = table_new(out, TABLE_FORMAT_CSV, csv_columns,
                                (int)(sizeof csv_columns / sizeof csv_columns[0]));
    if (!t)
        return -1;
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
        fprintf(out, ", \"calls\": %lld, \"ns\": %lld}", (long long)h->blocking[i].calls,
                (long long)h->blocking[i].ns);
    }
    fputs("], \"pattern\": ", out);
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
    fprintf(out, "{\"duration_ns\": %lld, \"rules\": [", (long long)run->duration_ns);
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
            if (write_evidence_table(f, TABLE_FORMAT_JSON, out) < 0)
                rc = -1;
            fputs(", \"host\": ", out);
            write_json_host(f->host, out);
            putc('}', out);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
    return rc;
}

int analyze_write(const struct analyze_run *run, enum table_format format, FILE *out)
{
    int rc = format == TABLE_FORMAT_CSV    ? write_csv(run, out)
             : format == TABLE_FORMAT_JSON ? write_json(run, out)
                                           : write_text(run, out);
    return rc < 0 || ferror(out) ? -1 : 0;
}
