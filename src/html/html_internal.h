/* Shared by the page's frame (html.c) and its sections (html_sections.c, html_timeline.c,
 * html_gpu_metrics.c, html_flame.c): the page, escaping (output/html.h, shared with `lantern
 * diff --html`), and the helpers of html_helpers.c (number formatting, queries, the SVG chart
 * helpers). Sections call the helpers, never each other; only html.c calls the sections. */
#ifndef LANTERN_HTML_INTERNAL_H
#define LANTERN_HTML_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/timeline.h"
#include "output/html.h"

#define HTML_TOP 15 /* rows of each "top" table and chart */

struct html_page {
    sqlite3 *db;
    FILE *out;
    struct analyze_run run;
    struct analyze_ctx *ctx;           /* run.ctx */
    struct analyze_timeline *timeline; /* NULL when the run has no GPU work */
};

/* A prepared statement on page->db, or NULL with page->ctx->error set. */
sqlite3_stmt *html_prepare(struct html_page *page, const char *sql);
/* A duration in human units, escaped. */
void html_ns(FILE *out, double ns);
/* A stable color (#rrggbb) for a name. */
void html_color(const char *name, char out[8]);

/* The color of an NVTX range or mark: the program's (color: 0xAARRGGBB, as in ranges.color)
 * when it gave one (has_color), else html_color(label). */
void html_nvtx_color(int has_color, int64_t color, const char *label, char out[8]);
/* A name shown short with the whole name as its tooltip (title), both escaped: a kernel's base
 * name (output/kernel_name.h) with its demangled name. Writes the whole name alone when shown
 * is NULL or the same. */
void html_short_name(FILE *out, const char *full, const char *shown);

/* One bar of a chart: label (its tooltip, whole), shown (its text; NULL: label, cut to fit),
 * color ("": html_color(label)), value (>= 0). */
struct html_bar {
    const char *label, *shown;
    char color[8];
    double value;
};
/* A horizontal bar chart of n bars, values formatted by `unit` ("ns" durations, "B" bytes, "J"
 * joules). */
void html_bar_chart(FILE *out, const struct html_bar *bars, int n, const char *unit);

/* Sections, in page order. Each returns 0 or -EIO (SQLite error: page->ctx->error set)
 * or -ENOMEM. */
int html_section_summary(struct html_page *page);
int html_section_timeline(struct html_page *page);
int html_section_time(struct html_page *page);
int html_section_findings(struct html_page *page);
int html_section_energy(struct html_page *page);
int html_section_gpu_metrics(struct html_page *page); /* html_gpu_metrics.c */
int html_section_cpu(struct html_page *page);         /* html_flame.c: only with -t cpu */
/* The flame graphs' zoom and search script (html_flame_script.c), written by html_flame.c. */
extern const char html_flame_script[];

#endif
