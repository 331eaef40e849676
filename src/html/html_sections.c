/* The sections of the HTML page but the timeline (html_timeline.c): session summary, where
 * the time went (top ranges, kernels, copies), the analyze findings most costly first with
 * their evidence, and energy per range and kernel with error bounds. Every query aggregates or
 * is limited. */
#include "analyze/host_activity.h"
#include "energy/energy_db.h"
#include "html/html_internal.h"
#include "model/gpu_metrics_sources.h"
#include "model/session_losses.h"
#include "output/kernel_name.h"
#include "output/table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t query_int(struct html_page *page, const char *sql)
{
    return analyze_query_int(page->ctx, sql, 0);
}

static void num_cell(FILE *out, double v, const char *text)
{
    fprintf(out, "<td class=\"num\" data-v=\"%.17g\">", v);
    html_text(out, text);
    fputs("</td>", out);
}

static void ns_cell(FILE *out, double ns)
{
    char buf[32];
    table_format_duration(buf, sizeof buf, ns);
    num_cell(out, ns, buf);
}

static void int_cell(FILE *out, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    num_cell(out, (double)v, buf);
}

static void text_cell(FILE *out, const char *s)
{
    fputs("<td class=\"name\">", out);
    html_text(out, s);
    fputs("</td>", out);
}

static void kv_start(FILE *out, const char *key)
{
    fprintf(out, "<tr><th>%s</th><td>", key);
}

/* ---- session ----------------------------------------------------------------------------- */

static void meta_text(struct html_page *page, const char *key, const char *fallback)
{
    sqlite3_stmt *st = html_prepare(page, "SELECT value FROM meta WHERE key = ?1");
    const char *v = NULL;
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = (const char *)sqlite3_column_text(st, 0);
    }
    html_text(page->out, v ? v : fallback);
    sqlite3_finalize(st);
}

#define HTML_PROCESSES 16 /* named in the Session table, then "and N more" */

/* The Processes row: how many, and each by its pid and name (process_labels). */
static int process_list(struct html_page *page)
{
    FILE *out = page->out;
    int64_t count = query_int(page, "SELECT count(*) FROM processes");
    sqlite3_stmt *st =
        html_prepare(page, "SELECT p.pid, l.label FROM processes p JOIN"
                           " process_labels l ON l.id = p.id ORDER BY p.id LIMIT ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int(st, 1, HTML_PROCESSES);
    fprintf(out, "<tr><th>Processes</th><td id=\"processes\">%lld", (long long)count);
    for (int i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
        fprintf(out, "%spid %lld ", i ? ", " : ": ", (long long)sqlite3_column_int64(st, 0));
        html_text(out, (const char *)sqlite3_column_text(st, 1));
    }
    if (count > HTML_PROCESSES)
        fprintf(out, " and %lld more", (long long)(count - HTML_PROCESSES));
    fputs("</td></tr>\n", out);
    sqlite3_finalize(st);
    return 0;
}

/* The summary's first rows: command, host, start, duration, exit status, what was recorded. */
static void summary_run(struct html_page *page)
{
    FILE *out = page->out;
    kv_start(out, "Command");
    fputs("<span class=\"mono\">", out);
    meta_text(page, "command", "(unknown)");
    fputs("</span></td></tr>\n", out);
    kv_start(out, "Host");
    meta_text(page, "host", "(unknown)");
    fputs("</td></tr>\n", out);
    int64_t wall = query_int(page, "SELECT value FROM meta WHERE key = 'start_wall_ns'");
    if (wall > 0) {
        time_t secs = (time_t)(wall / 1000000000);
        struct tm tm;
        char date[64];
        gmtime_r(&secs, &tm);
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
        kv_start(out, "Started");
        html_text(out, date);
        fputs("</td></tr>\n", out);
    }
    kv_start(out, "Duration");
    html_ns(out, (double)page->ctx->duration_ns);
    fputs("</td></tr>\n", out);
    if (query_int(page,
                  "SELECT count(*) FROM meta WHERE key = 'exit_status' AND value IS NOT NULL")) {
        fprintf(out, "<tr><th>Exit status</th><td>%lld</td></tr>\n",
                (long long)query_int(page, "SELECT value FROM meta WHERE key = 'exit_status'"));
    }
    kv_start(out, "Recorded");
    meta_text(page, "trace", "(unknown)");
    fputs("</td></tr>\n", out);
}

/* The summary's GPUs, one per line, and what recorded their metrics. Returns 0 or -EIO. */
static int summary_gpus(struct html_page *page)
{
    FILE *out = page->out;
    sqlite3_stmt *st = html_prepare(page, "SELECT COALESCE(nvml_index, id - 1), name, sm_count,"
                                          " power_limit_mw FROM gpus ORDER BY id");
    if (!st)
        return -EIO;
    kv_start(out, "GPUs");
    int gpus = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        fprintf(out, "%sGPU %lld: ", gpus++ ? "<br>" : "", (long long)sqlite3_column_int64(st, 0));
        html_text(out, (const char *)sqlite3_column_text(st, 1));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            fprintf(out, ", %lld SMs", (long long)sqlite3_column_int64(st, 2));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            fprintf(out, ", power limit %.0f W", sqlite3_column_double(st, 3) / 1000.0);
    }
    sqlite3_finalize(st);
    fprintf(out, "%s</td></tr>\n", gpus ? "" : "none recorded");
    char *metrics = gpu_metrics_sources_lines(page->db);
    if (metrics) { /* one line per GPU */
        kv_start(out, "GPU metrics");
        for (char *line = metrics, *end; (end = strchr(line, '\n')); line = end + 1) {
            *end = '\0';
            fputs(line == metrics ? "" : "<br>", out);
            html_text(out, line);
        }
        fputs("</td></tr>\n", out);
        free(metrics);
    }
    return 0;
}

/* The summary's counts: threads, events, and what was dropped, lost or left open. */
static void summary_events(struct html_page *page)
{
    FILE *out = page->out;
    fprintf(out, "<tr><th>Threads</th><td>%lld</td></tr>\n",
            (long long)query_int(page, "SELECT count(*) FROM threads"));
    fprintf(out,
            "<tr><th>Events</th><td>%lld NVTX ranges, %lld marks, %lld CUDA API calls, %lld "
            "kernels, %lld copies, %lld memsets, %lld GPU samples</td></tr>\n",
            (long long)query_int(page, "SELECT count(*) FROM ranges"),
            (long long)query_int(page, "SELECT count(*) FROM marks"),
            (long long)query_int(page, "SELECT count(*) FROM cuda_api"),
            (long long)query_int(page, "SELECT count(*) FROM kernels"),
            (long long)query_int(page, "SELECT count(*) FROM memcpys"),
            (long long)query_int(page, "SELECT count(*) FROM memsets"),
            (long long)query_int(page, "SELECT count(*) FROM gpu_samples"));
    int64_t dropped = query_int(page, "SELECT value FROM meta WHERE key = 'dropped_events'");
    fprintf(out, "<tr><th>Dropped events</th><td>%lld%s</td></tr>\n", (long long)dropped,
            dropped ? " (some events are missing: see LANTERN_BUFFER_KB)" : "");
    char *losses = session_losses_line(page->db);
    kv_start(out, "Lost events");
    html_text(out, losses ? losses : "(unknown)");
    fputs("</td></tr>\n", out);
    free(losses);
    fprintf(out,
            "<tr><th>Unended ranges</th><td>%lld</td></tr>\n<tr><th>Import warnings</th>"
            "<td>%lld</td></tr>\n",
            (long long)query_int(page, "SELECT count(*) FROM ranges WHERE end_ns IS NULL"),
            (long long)query_int(page, "SELECT value FROM meta WHERE key = 'import_warnings'"));
}

/* The summary's last row: what Lantern itself cost the program and the launcher. */
static void summary_overhead(struct html_page *page)
{
    FILE *out = page->out;
    kv_start(out, "Lantern's own overhead");
    int64_t flushes = query_int(page, "SELECT count(*) FROM cupti_overhead");
    fprintf(out, "%lld CUPTI buffer operations, ", (long long)flushes);
    html_ns(out, (double)query_int(page, "SELECT sum(end_ns - start_ns) FROM cupti_overhead"));
    fprintf(out, " in the profiled threads; %lld CUDA records rejected",
            (long long)query_int(page, "SELECT sum(cuda_rejected_records) FROM processes"));
    int64_t sampler = query_int(page, "SELECT sum(cpu_ns) FROM nvml_sampler");
    if (sampler > 0) { /* the NVML sampler runs in the launcher, not in the program */
        fputs("; the power sampler (in the launcher) used ", out);
        html_ns(out, (double)sampler);
        fputs(" of CPU", out);
    }
    fputs("</td></tr>\n", out);
}

int html_section_summary(struct html_page *page)
{
    fputs("<section id=\"summary\"><h2>Session</h2>\n<table class=\"kv\">\n", page->out);
    summary_run(page);
    int rc = summary_gpus(page);
    if (rc == 0)
        rc = process_list(page);
    if (rc < 0)
        return rc;
    summary_events(page);
    summary_overhead(page);
    fputs("</table></section>\n", page->out);
    return 0;
}

/* ---- where the time went ------------------------------------------------------------------ */

/* The rows of a "top" chart and table: each label (owned), what is shown of it (owned; NULL:
 * the label) and its bar. */
struct top_rows {
    char *labels[HTML_TOP], *shown[HTML_TOP];
    struct html_bar bars[HTML_TOP];
    int n;
};

/* Adds a row (label copied; NULL: fallback) colored color ("" or NULL: by its label). */
static void top_add(struct top_rows *t, const char *label, const char *fallback, const char *color,
                    double value)
{
    char *copy = strdup(label ? label : fallback); /* NULL (out of memory): shown empty */
    struct html_bar *b = &t->bars[t->n];
    memset(b, 0, sizeof *b);
    t->labels[t->n] = copy;
    t->shown[t->n] = NULL;
    b->label = copy;
    b->value = value;
    if (color)
        snprintf(b->color, sizeof b->color, "%s", color);
    t->n++;
}

/* Adds a kernel's row, shown by its base name (the whole name in the tooltip). */
static void top_add_kernel(struct top_rows *t, const char *name, double value)
{
    top_add(t, name, "(unnamed kernel)", NULL, value);
    const char *full = t->labels[t->n - 1];
    char *shown = malloc(strlen(full) + 1);
    if (shown)
        kernel_name_base(full, shown, strlen(full) + 1);
    t->shown[t->n - 1] = shown;
    t->bars[t->n - 1].shown = shown;
}

static void top_release(struct top_rows *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->labels[i]);
        free(t->shown[i]);
    }
    t->n = 0;
}

/* The label and color of a range: a statement from range_statement. */
#define RANGE_LABEL_SQL                                                                            \
    "SELECT " ANALYZE_RANGE_LABEL ", r.color FROM (SELECT ?1 AS id) q" ANALYZE_RANGE_JOINS("q.id")

/* Adds the row of the range example_id (its label, and the color the program gave it). */
static void top_add_range(struct top_rows *t, sqlite3_stmt *st, int64_t example_id, double value)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, example_id);
    int row = sqlite3_step(st) == SQLITE_ROW;
    const char *label = row ? (const char *)sqlite3_column_text(st, 0) : NULL;
    char color[8];
    html_nvtx_color(row && sqlite3_column_type(st, 1) != SQLITE_NULL, sqlite3_column_int64(st, 1),
                    label, color);
    top_add(t, label, "(unnamed)", color, value);
}

/* A table cell with a name shown short (its whole name in the tooltip). */
static void short_name_cell(FILE *out, const char *full, const char *shown)
{
    fputs("<td class=\"name\">", out);
    html_short_name(out, full, shown);
    fputs("</td>", out);
}

static int by_range_time(const void *a, const void *b)
{
    const struct timeline_range_energy *x = *(const struct timeline_range_energy *const *)a,
                                       *y = *(const struct timeline_range_energy *const *)b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return (x->example_id > y->example_id) - (x->example_id < y->example_id);
}

static int top_ranges(struct html_page *page)
{
    FILE *out = page->out;
    struct analyze_timeline *t = page->timeline;
    fputs("<h3>NVTX ranges</h3>\n", out);
    int rc = timeline_ranges(page->ctx, t);
    if (rc < 0)
        return rc;
    if (t->range_energy_count == 0) {
        fputs("<p class=\"note\">No NVTX ranges.</p>\n", out);
        return 0;
    }
    const struct timeline_range_energy **v = calloc(t->range_energy_count, sizeof *v);
    sqlite3_stmt *label = html_prepare(page, RANGE_LABEL_SQL);
    if (!v || !label) {
        free(v);
        sqlite3_finalize(label);
        return !label ? -EIO : -ENOMEM;
    }
    for (size_t i = 0; i < t->range_energy_count; i++)
        v[i] = &t->range_energy[i];
    qsort(v, t->range_energy_count, sizeof *v, by_range_time);
    struct top_rows top = {0};
    for (size_t i = 0; i < t->range_energy_count && top.n < HTML_TOP; i++)
        top_add_range(&top, label, v[i]->example_id, v[i]->ns);
    html_bar_chart(out, top.bars, top.n, "ns");
    fputs("<table class=\"sortable\" id=\"top-ranges\"><thead><tr><th>Range</th>"
          "<th>Instances</th><th>Total</th><th>Average</th></tr></thead><tbody>\n",
          out);
    for (int i = 0; i < top.n; i++) {
        fputs("<tr>", out);
        text_cell(out, top.labels[i]);
        int_cell(out, v[i]->instances);
        ns_cell(out, v[i]->ns);
        ns_cell(out, v[i]->ns / (double)v[i]->instances);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    top_release(&top);
    free(v);
    sqlite3_finalize(label);
    return 0;
}

static int by_kernel_time(const void *a, const void *b)
{
    const struct timeline_kernel_name *x = *(const struct timeline_kernel_name *const *)a,
                                      *y = *(const struct timeline_kernel_name *const *)b;
    return x->kernel_ns < y->kernel_ns ? 1 : x->kernel_ns > y->kernel_ns ? -1 : 0;
}

static int by_kernel_energy(const void *a, const void *b)
{
    const struct timeline_kernel_name *x = *(const struct timeline_kernel_name *const *)a,
                                      *y = *(const struct timeline_kernel_name *const *)b;
    return x->joules < y->joules ? 1 : x->joules > y->joules ? -1 : 0;
}

/* The kernel names of the timeline pass, sorted by cmp; the caller frees the array. */
static const struct timeline_kernel_name **sorted_names(const struct analyze_timeline *t,
                                                        int (*cmp)(const void *, const void *))
{
    const struct timeline_kernel_name **v = calloc(t->name_count ? t->name_count : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < t->name_count; i++)
        v[i] = &t->names[i];
    qsort(v, t->name_count, sizeof *v, cmp);
    return v;
}

/* The string id of st ("SELECT value FROM strings WHERE id = ?1"), valid until its next step;
 * NULL when there is none. */
static const char *string_of(sqlite3_stmt *st, int64_t id)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    return sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
}

static int top_kernels(struct html_page *page)
{
    FILE *out = page->out;
    const struct analyze_timeline *t = page->timeline;
    fputs("<h3>Kernels</h3>\n", out);
    if (t->name_count == 0) {
        fputs("<p class=\"note\">No kernels.</p>\n", out);
        return 0;
    }
    const struct timeline_kernel_name **v = sorted_names(t, by_kernel_time);
    sqlite3_stmt *st = html_prepare(page, "SELECT value FROM strings WHERE id = ?1");
    if (!v || !st) {
        free(v);
        sqlite3_finalize(st);
        return !st ? -EIO : -ENOMEM;
    }
    struct top_rows top = {0};
    int64_t all = 0;
    for (size_t i = 0; i < t->name_count; i++)
        all += t->names[i].kernel_ns;
    for (size_t i = 0; i < t->name_count && top.n < HTML_TOP; i++)
        top_add_kernel(&top, string_of(st, v[i]->name_id), (double)v[i]->kernel_ns);
    html_bar_chart(out, top.bars, top.n, "ns");
    fputs("<table class=\"sortable\" id=\"top-kernels\"><thead><tr><th>Kernel</th><th>Instances"
          "</th><th>Total</th><th>Share of kernel time</th><th>Average</th></tr></thead><tbody>\n",
          out);
    for (int i = 0; i < top.n; i++) {
        char pct[32];
        snprintf(pct, sizeof pct, "%.1f %%",
                 all ? 100.0 * (double)v[i]->kernel_ns / (double)all : 0);
        fputs("<tr>", out);
        short_name_cell(out, top.labels[i], top.shown[i]);
        int_cell(out, v[i]->count);
        ns_cell(out, (double)v[i]->kernel_ns);
        num_cell(out, all ? (double)v[i]->kernel_ns / (double)all : 0, pct);
        ns_cell(out, (double)v[i]->kernel_ns / (double)v[i]->count);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    top_release(&top);
    free(v);
    sqlite3_finalize(st);
    return 0;
}

static int by_copy_time(const void *a, const void *b)
{
    const struct timeline_copy_kind *x = *(const struct timeline_copy_kind *const *)a,
                                    *y = *(const struct timeline_copy_kind *const *)b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

static int copies(struct html_page *page)
{
    FILE *out = page->out;
    const struct analyze_timeline *t = page->timeline;
    fputs("<h3>Copies and memsets by kind</h3>\n", out);
    if (!t->copy_kind_count) {
        fputs("<p class=\"note\">No copies or memsets.</p>\n", out);
        return 0;
    }
    const struct timeline_copy_kind *v[TIMELINE_MAX_COPY_GROUPS];
    for (int i = 0; i < t->copy_kind_count; i++)
        v[i] = &t->copy_kinds[i];
    qsort(v, (size_t)t->copy_kind_count, sizeof *v, by_copy_time);
    struct top_rows top = {0};
    for (int i = 0; i < t->copy_kind_count && top.n < HTML_TOP; i++) {
        char label[64];
        if (v[i]->src[0])
            snprintf(label, sizeof label, "%s %s -> %s", v[i]->kind, v[i]->src, v[i]->dst);
        else
            snprintf(label, sizeof label, "%s", v[i]->kind);
        top_add(&top, label, label, NULL, (double)v[i]->ns);
    }
    html_bar_chart(out, top.bars, top.n, "ns");
    fputs("<table class=\"sortable\" id=\"copies\"><thead><tr><th>Kind (source -&gt; destination)"
          "</th><th>Count</th><th>Total time</th><th>Bytes</th><th>Throughput</th></tr></thead>"
          "<tbody>\n",
          out);
    for (int i = 0; i < top.n; i++) {
        char mb[32], rate[32];
        double ns = (double)v[i]->ns, rate_v = ns > 0 ? v[i]->bytes / ns : 0;
        snprintf(mb, sizeof mb, "%.2f MB", v[i]->bytes / 1e6);
        snprintf(rate, sizeof rate, "%.2f GB/s", rate_v);
        fputs("<tr>", out);
        text_cell(out, top.labels[i]);
        int_cell(out, v[i]->count);
        ns_cell(out, ns);
        num_cell(out, v[i]->bytes, mb);
        num_cell(out, rate_v, rate);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    top_release(&top);
    return 0;
}

int html_section_time(struct html_page *page)
{
    fputs("<section id=\"time\"><h2>Where the time went</h2>\n", page->out);
    int rc = top_ranges(page);
    if (rc == 0)
        rc = top_kernels(page);
    if (rc == 0)
        rc = copies(page);
    if (rc < 0)
        return rc;
    fputs("</section>\n", page->out);
    return 0;
}

/* ---- findings ------------------------------------------------------------------------------ */

/* An evidence row's name (a kernel's, an API call's): its base name, whole in the tooltip. */
static void evidence_name_cell(FILE *out, const char *name)
{
    char shown[256];
    if (name)
        kernel_name_base(name, shown, sizeof shown);
    short_name_cell(out, name, name ? shown : NULL);
}

static void evidence_table(FILE *out, const struct analyze_finding *f, int index)
{
    fprintf(out,
            "<table class=\"sortable evidence\" id=\"evidence-%d\"><thead><tr><th>Start</th>"
            "<th>Duration</th><th>PID</th><th>TID</th><th>GPU</th><th>Stream</th>"
            "<th>NVTX range</th><th>Name</th><th>Detail</th></tr></thead><tbody>\n",
            index);
    for (int e = 0; e < f->evidence_count; e++) {
        const struct analyze_evidence *ev = &f->evidence[e];
        const int64_t ids[] = {ev->pid, ev->tid, ev->gpu, ev->stream};
        fputs("<tr>", out);
        if (ev->start_ns >= 0)
            ns_cell(out, (double)ev->start_ns);
        else
            fputs("<td></td>", out);
        if (ev->duration_ns >= 0)
            ns_cell(out, (double)ev->duration_ns);
        else
            fputs("<td></td>", out);
        for (int k = 0; k < 4; k++) {
            if (ids[k] >= 0)
                int_cell(out, ids[k]);
            else
                fputs("<td></td>", out);
        }
        text_cell(out, ev->range);
        evidence_name_cell(out, ev->name);
        text_cell(out, ev->detail);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

int html_section_findings(struct html_page *page)
{
    FILE *out = page->out;
    const struct analyze_run *run = &page->run;
    size_t n = 0;
    struct analyze_ranked *ranked = analyze_rank(run, &n);
    if (!ranked) {
        snprintf(page->ctx->error, sizeof page->ctx->error, "report: out of memory");
        return -ENOMEM;
    }
    fputs("<section id=\"findings\"><h2>Findings</h2>\n", out);
    if (n == 0)
        fputs("<p>No rule found anything to fix.</p>\n", out);
    else
        fputs("<p>Most costly first (the time each could save; costs of different rules can "
              "overlap).</p>\n<ol id=\"finding-index\">\n",
              out);
    for (size_t i = 0; i < n; i++) {
        const struct analyze_finding *f = ranked[i].finding;
        fprintf(out, "<li><a href=\"#finding-%zu\"><b>", i + 1);
        html_ns(out, f->cost_ns);
        fprintf(out, "</b> (%.1f %%)", analyze_share(page->ctx, f->cost_ns));
        if (f->cost_j >= 0)
            fprintf(out, ", %.3f J", f->cost_j);
        fputs(" <code>", out);
        html_text(out, ranked[i].result->rule->name);
        fputs("</code> ", out);
        html_text(out, f->summary);
        fputs("</a></li>\n", out);
    }
    if (n)
        fputs("</ol>\n", out);
    for (size_t i = 0; i < n; i++) {
        const struct analyze_finding *f = ranked[i].finding;
        fprintf(out, "<article class=\"finding\" id=\"finding-%zu\"><h3>%zu. <code>", i + 1, i + 1);
        html_text(out, ranked[i].result->rule->name);
        fputs("</code>: ", out);
        html_text(out, f->summary);
        fputs("</h3>\n<p class=\"cost\">Could save ", out);
        html_ns(out, f->cost_ns);
        fprintf(out, " (%.1f %% of the run)", analyze_share(page->ctx, f->cost_ns));
        if (f->cost_j >= 0)
            fprintf(out, " and %.3f J", f->cost_j);
        fprintf(out,
                "; %lld occurrence%s.</p>\n<p class=\"advice\">What to do: ", (long long)f->count,
                f->count == 1 ? "" : "s");
        html_text(out, f->advice);
        fputs("</p>\n", out);
        if (f->host && f->host->summary) { /* what the host did meanwhile (CPU samples) */
            fputs("<p class=\"host\">Host: ", out);
            html_text(out, f->host->summary);
            fputs("</p>\n", out);
        }
        if (f->evidence_count)
            evidence_table(out, f, (int)i + 1);
        fputs("</article>\n", out);
    }
    free(ranked);
    fputs("<h3>Rules</h3>\n<table class=\"sortable\" id=\"rules\"><thead><tr><th>Rule</th>"
          "<th>Looks for</th><th>Threshold</th><th>Findings</th><th>Note</th></tr></thead>"
          "<tbody>\n",
          out);
    for (int r = 0; r < run->count; r++) {
        const struct analyze_result *res = &run->results[r];
        fputs("<tr><td class=\"rule\"><code>", out);
        html_text(out, res->rule->name);
        fputs("</code></td>", out);
        text_cell(out, res->rule->looks_for);
        text_cell(out, res->rule->threshold);
        int_cell(out, res->count + res->more);
        text_cell(out, res->note);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
    return 0;
}

/* ---- energy -------------------------------------------------------------------------------- */

static void energy_row(FILE *out, const char *label, const char *shown, int64_t instances,
                       double ns, double j, double err)
{
    char buf[64];
    fputs("<tr>", out);
    short_name_cell(out, label, shown);
    int_cell(out, instances);
    ns_cell(out, ns);
    snprintf(buf, sizeof buf, "%.3f", j);
    num_cell(out, j, buf);
    snprintf(buf, sizeof buf, "%.3f", err);
    num_cell(out, err, buf);
    snprintf(buf, sizeof buf, "%.1f", ns > 0 ? j * 1e9 / ns : 0);
    num_cell(out, ns > 0 ? j * 1e9 / ns : 0, buf);
    fputs("</tr>\n", out);
}

static const char energy_head[] =
    "<thead><tr><th>Name</th><th>Instances</th><th>Time</th><th>Energy (J)</th>"
    "<th>Error bound (J)</th><th>Average power (W)</th></tr></thead><tbody>\n";

int html_section_energy(struct html_page *page)
{
    FILE *out = page->out;
    struct analyze_timeline *t = page->timeline;
    fputs("<section id=\"energy\"><h2>Energy</h2>\n", out);
    if (t->energy_count == 0) {
        fputs("<p class=\"note\">No GPU power samples in this database (profile with -t nvml)."
              "</p></section>\n",
              out);
        return 0;
    }
    fputs("<p>GPU energy from NVML's energy counter, interpolated with power samples between "
          "its updates; each value has the error bound Lantern computes (docs/energy.md). "
          "Nested ranges each count their whole energy.</p>\n<table class=\"sortable\" "
          "id=\"energy-run\">",
          out);
    fputs(energy_head, out);
    for (int g = 0; g < t->energy_count; g++) {
        struct energy_interval iv = energy_track_between(
            &t->energy[g].track, (uint64_t)page->ctx->start_ns, (uint64_t)page->ctx->end_ns);
        char label[48];
        int64_t shown = t->energy[g].gpu_id - 1;
        for (int k = 0; k < t->gpu_count; k++)
            if (t->gpus[k].gpu_id == t->energy[g].gpu_id)
                shown = t->gpus[k].label;
        snprintf(label, sizeof label, "whole run, GPU %lld", (long long)shown);
        energy_row(out, label, NULL, 1, (double)page->ctx->duration_ns, iv.mj / 1000.0,
                   iv.error_mj / 1000.0);
    }
    fputs("</tbody></table>\n", out);
    int rc = timeline_ranges(page->ctx, t);
    if (rc < 0)
        return rc;
    sqlite3_stmt *label = html_prepare(page, RANGE_LABEL_SQL);
    sqlite3_stmt *name = html_prepare(page, "SELECT value FROM strings WHERE id = ?1");
    const struct timeline_kernel_name **v = sorted_names(t, by_kernel_energy);
    if (!label || !name || !v) {
        sqlite3_finalize(label);
        sqlite3_finalize(name);
        free(v);
        return !label || !name ? -EIO : -ENOMEM;
    }
    struct top_rows top = {0};
    for (size_t i = 0; i < t->range_energy_count && top.n < HTML_TOP; i++)
        top_add_range(&top, label, t->range_energy[i].example_id, t->range_energy[i].joules);
    fputs("<h3>Per NVTX range</h3>\n", out);
    html_bar_chart(out, top.bars, top.n, "J");
    fputs("<table class=\"sortable\" id=\"energy-ranges\">", out);
    fputs(energy_head, out);
    for (int i = 0; i < top.n; i++) {
        const struct timeline_range_energy *r = &t->range_energy[i];
        energy_row(out, top.labels[i], NULL, r->instances, r->ns, r->joules, r->error_j);
    }
    fputs("</tbody></table>\n", out);
    top_release(&top);
    for (size_t i = 0; i < t->name_count && top.n < HTML_TOP; i++)
        top_add_kernel(&top, string_of(name, v[i]->name_id), v[i]->joules);
    fputs("<h3>Per kernel</h3>\n", out);
    html_bar_chart(out, top.bars, top.n, "J");
    fputs("<table class=\"sortable\" id=\"energy-kernels\">", out);
    fputs(energy_head, out);
    for (int i = 0; i < top.n; i++)
        energy_row(out, top.labels[i], top.shown[i], v[i]->count, (double)v[i]->kernel_ns,
                   v[i]->joules, v[i]->error_j);
    fputs("</tbody></table></section>\n", out);
    top_release(&top);
    free(v);
    sqlite3_finalize(label);
    sqlite3_finalize(name);
    return 0;
}
