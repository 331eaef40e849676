/* The frame of the HTML page (head, style, navigation, the sorting script) and the table of
 * its sections, written in order. The script is ours and inline: the page opens with no
 * network. */
#include "html/html.h"
#include "analyze/host_activity.h"
#include "html/html_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
    "height:10px;margin-right:4px;vertical-align:middle}"
    "svg.flame g.fr{cursor:pointer}svg.flame rect{stroke:#fff;stroke-width:.6}"
    "svg.flame .anc{opacity:.5}svg.flame .hit rect{fill:#e03ee0}"
    "svg.flame g.fr:focus{outline:none}svg.flame g.fr:focus rect{stroke:#1d232b;stroke-width:1.5}"
    ".flamebar input{margin:0 10px}";

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
            rc = -EIO;
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
                return -write_errno;
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
        rc = -EIO;
    }
    return rc;
}
