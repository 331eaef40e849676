/* The frame of the HTML page (head, style, navigation, the sorting script) and the helpers
 * its sections share. The script is ours and inline: the page opens with no network. */
#include "html/html.h"
#include "analyze/host_activity.h"
#include "html/html_internal.h"
#include "output/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

sqlite3_stmt *html_prepare(struct html_page *page, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(page->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(page->ctx->error, sizeof page->ctx->error, "report: %s", sqlite3_errmsg(page->db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

void html_ns(FILE *out, double ns)
{
    char buf[32];
    table_format_duration(buf, sizeof buf, ns);
    html_text(out, buf);
}

void html_color(const char *name, char out[8])
{
    /* FNV-1a of the name picks a hue; fixed saturation and lightness keep text readable */
    uint32_t h = 2166136261u;
    for (const char *p = name ? name : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    double hue = (double)(h % 360) / 60.0, c = 0.45,
           x = c * (1 - __builtin_fabs(__builtin_fmod(hue, 2) - 1));
    double r = 0, g = 0, b = 0;
    switch ((int)hue) {
    case 0:
        r = c;
        g = x;
        break;
    case 1:
        r = x;
        g = c;
        break;
    case 2:
        g = c;
        b = x;
        break;
    case 3:
        g = x;
        b = c;
        break;
    case 4:
        r = x;
        b = c;
        break;
    default:
        r = c;
        b = x;
        break;
    }
    double m = 0.40;
    snprintf(out, 8, "#%02x%02x%02x", (int)((r + m) * 255), (int)((g + m) * 255),
             (int)((b + m) * 255));
}

static void format_value(char *buf, size_t size, double v, const char *unit)
{
    if (!strcmp(unit, "ns"))
        table_format_duration(buf, size, v);
    else if (!strcmp(unit, "B"))
        snprintf(buf, size, "%.2f MB", v / 1e6);
    else
        snprintf(buf, size, "%.3f %s", v, unit);
}

void html_nvtx_color(int has_color, int64_t color, const char *label, char out[8])
{
    if (has_color)
        snprintf(out, 8, "#%06x", (unsigned)(color & 0xFFFFFF));
    else
        html_color(label, out);
}

void html_short_name(FILE *out, const char *full, const char *shown)
{
    if (!shown || !full || !strcmp(shown, full)) {
        html_text(out, full);
        return;
    }
    fputs("<span title=\"", out);
    html_text(out, full);
    fputs("\">", out);
    html_text(out, shown);
    fputs("</span>", out);
}

void html_bar_chart(FILE *out, const struct html_bar *bars, int n, const char *unit)
{
    double max = 0;
    for (int i = 0; i < n; i++)
        if (bars[i].value > max)
            max = bars[i].value;
    if (n == 0 || max <= 0)
        return;
    const int row = 18, label_w = 330, bar_w = 520, width = label_w + bar_w + 110;
    fprintf(out,
            "<svg class=\"bars\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
            "role=\"img\">\n",
            width, n * row + 4, width, n * row + 4);
    for (int i = 0; i < n; i++) {
        const struct html_bar *b = &bars[i];
        char color[8], value[48];
        if (b->color[0])
            memcpy(color, b->color, sizeof color);
        else
            html_color(b->label, color);
        format_value(value, sizeof value, b->value, unit);
        double w = (double)bar_w * b->value / max;
        fprintf(out, "<g><title>");
        html_text(out, b->label);
        fprintf(out, ": %s</title><text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"lbl\">",
                value, label_w - 6, i * row + 13);
        /* long labels (C++ kernel names) are cut for the chart; the tooltip has them whole */
        html_text_cut(out, b->shown ? b->shown : b->label, 50);
        fprintf(out,
                "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%d\" class=\"val\">%s</text></g>\n",
                label_w, i * row + 2, w < 1 ? 1 : w, row - 4, color, label_w + w + 4, i * row + 13,
                value);
    }
    fputs("</svg>\n", out);
}

static const char page_style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;"
    "max-width:1260px;padding:0 20px 40px;color:#1d232b;background:#fff}"
    "h1{font-size:24px;margin:22px 0 2px}h2{font-size:19px;margin:34px 0 8px;"
    "border-bottom:1px solid #d8dde3;padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}"
    "code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}"
    "nav "
    "a{margin-right:14px}a{color:#1559b0;text-decoration:none}a:hover{text-decoration:underline}"
    "table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}"
    "th,td{border:1px solid #d8dde3;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#f1f4f7;cursor:pointer;white-space:nowrap}td.num{text-align:right;"
    "white-space:nowrap;font-variant-numeric:tabular-nums}"
    "td.name{max-width:460px;overflow-wrap:anywhere}td.rule{white-space:nowrap}"
    "svg{max-width:100%;height:auto}"
    "table.kv th{cursor:default;text-align:right;width:190px}"
    ".finding{border-left:4px solid #c4472d;padding:2px 12px;margin:14px 0;background:#fbfbfc}"
    ".finding .cost{font-weight:600}.advice{color:#1f6b35}.note{color:#6b7480}"
    "svg text{font:11px system-ui,sans-serif;fill:#1d232b}svg .lbl{fill:#30363d}"
    "svg .val{fill:#59616b}svg .axis{stroke:#9aa3ad;stroke-width:1}"
    "figure{margin:10px 0 18px}figcaption{color:#59616b;font-size:12.5px}"
    ".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:10px;"
    "height:10px;margin-right:4px;vertical-align:middle}";

/* Sorts a table by the clicked column (numbers by their data-v value, else text). */
static const char page_script[] =
    "(function(){\n"
    "function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:"
    "parseFloat(v);}\n"
    "document.querySelectorAll('table.sortable').forEach(function(table){\n"
    " table.querySelectorAll('th').forEach(function(th,col){\n"
    "  th.title='sort';th.addEventListener('click',function(){\n"
    "   var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);\n"
    "   var dir=th.getAttribute('data-dir')==='d'?1:-1;th.setAttribute('data-dir',"
    "dir>0?'a':'d');\n"
    "   rows.sort(function(a,b){var x=key(a.cells[col]),y=key(b.cells[col]);"
    "return (x<y?-1:x>y?1:0)*dir;});\n"
    "   rows.forEach(function(r){body.appendChild(r);});});});});\n"
    "document.body.setAttribute('data-ready','1');\n"
    "})();\n";

static void write_head(struct html_page *page)
{
    FILE *out = page->out;
    char *command = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(page->db, "SELECT value FROM meta WHERE key = 'command'", -1, &st,
                           NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            command = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"Lantern " LANTERN_VERSION "\">\n<title>Lantern: ",
          out);
    html_text(out, command ? command : "report");
    fprintf(out,
            "</title>\n<style>%s</style>\n</head>\n<body data-ready=\"0\">\n"
            "<header><h1>Lantern report</h1><div class=\"mono\" id=\"command\">",
            page_style);
    html_text(out, command ? command : "(unknown command)");
    fputs("</div></header>\n<nav><a href=\"#summary\">Session</a><a href=\"#timeline\">"
          "Timeline</a><a href=\"#time\">Where the time went</a><a href=\"#findings\">"
          "Findings</a><a href=\"#energy\">Energy</a><a href=\"#gpu-metrics\">GPU metrics</a>",
          out);
    if (analyze_host_asked(page->ctx))
        fputs("<a href=\"#cpu\">Host CPU</a>", out);
    fputs("</nav>\n", out);
    free(command);
}

int html_report_write(sqlite3 *db, FILE *out, char *error, size_t error_size)
{
    struct html_page page = {.db = db, .out = out};
    const char *bad = NULL;
    int rc = analyze_run(db, NULL, ANALYZE_PAGE, &page.run, &bad, error, error_size);
    page.ctx = page.run.ctx;
    if (rc == 0) {
        page.timeline = analyze_timeline(page.ctx);
        if (!page.timeline) {
            snprintf(error, error_size, "%s", page.ctx->error);
            rc = -1;
        }
    }
    if (rc == 0) {
        write_head(&page);
        int (*const sections[])(struct html_page *) = {
            html_section_summary,  html_section_timeline, html_section_time,
            html_section_findings, html_section_energy,   html_section_gpu_metrics,
            html_section_cpu};
        for (size_t i = 0; rc == 0 && i < sizeof sections / sizeof sections[0]; i++) {
            rc = sections[i](&page);
            /* a full disk: stop while errno still says so (the next section's queries would
             * overwrite it, and the caller names the error from it) */
            if (rc == 0 && fflush(out) != 0) {
                int write_errno = errno;
                analyze_run_release(&page.run);
                snprintf(error, error_size, "write error");
                errno = write_errno;
                return -1;
            }
        }
        if (rc < 0)
            snprintf(error, error_size, "%s",
                     page.ctx->error[0] ? page.ctx->error : "cannot read the database");
        fprintf(out,
                "<footer class=\"note\"><p>Written by Lantern %s. Times are relative to "
                "the session start. Costs are estimates (docs/analyze.md) and overlap "
                "between rules: do not add them up.</p></footer>\n<script>%s</script>\n"
                "</body></html>\n",
                LANTERN_VERSION, page_script);
    }
    analyze_run_release(&page.run);
    if (rc == 0 && ferror(out)) {
        snprintf(error, error_size, "write error");
        rc = -1;
    }
    return rc;
}
