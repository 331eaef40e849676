/* `lantern diff --html`: one self-contained page (no network, no script): the runs and the
 * checks, the warnings, the changed ranges, kernels, copies and calls as paired bars (base and
 * new median, the new one with the 95 % interval of the change as a whisker), what changed
 * inside the ranges, and every row in a table. Its size is bounded: at most DIFF_HTML_BARS
 * pairs and DIFF_HTML_ROWS rows. */
#include "diff/diff_internal.h"
#include "output/html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define DIFF_HTML_BARS 40
#define DIFF_HTML_ROWS 2000
#define BAR_WIDTH 520 /* px of the longest bar of a pair */

static const char style[] =
    "body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:left;"
    "border-bottom:1px solid #eee;vertical-align:top}td.n{text-align:right;white-space:nowrap}"
    ".differs{color:#b00020;font-weight:600}.warn{background:#fff4d6;border:1px solid #e6c200;"
    "padding:6px 10px;margin:4px 0}.slower,.higher,.gone{color:#b00020}.faster,.lower,.new"
    "{color:#1b7f3b}.pair{margin:10px 0}.pair .name{font-family:monospace;font-size:12px;"
    "overflow-wrap:anywhere}svg text{font:11px system-ui,sans-serif}";

static void text(FILE *out, const char *s)
{
    html_text(out, s);
}

static void value(FILE *out, double v, enum diff_unit unit)
{
    char buf[48];
    diff_format_value(buf, sizeof buf, v, unit);
    text(out, buf);
}

static void change(FILE *out, double v, enum diff_unit unit)
{
    char buf[48];
    diff_format_change(buf, sizeof buf, v, unit);
    text(out, buf);
}

static int is_change(const struct diff_row *r)
{
    return r->verdict != DIFF_SAME && r->verdict != DIFF_UNTESTED;
}

/* One pair: the base median's bar, the new median's with the change's interval as a whisker
 * around its end, on the pair's own scale. */
static void pair(FILE *out, const struct diff_row *r)
{
    double low = r->base.median + r->change_low, high = r->base.median + r->change_high;
    double top = fmax(fmax(r->base.count ? r->base.median : 0, r->new.count ? r->new.median : 0),
                      isnan(high) ? 0 : high);
    double scale = top > 0 ? BAR_WIDTH / top : 0;
    char *label = diff_row_label(r);
    fprintf(out, "<div class=\"pair\"><div><span class=\"%s\">%s</span> ",
            diff_verdict_names[r->verdict], diff_verdict_names[r->verdict]);
    text(out, diff_kinds[r->kind].name);
    fputs(" <span class=\"name\">", out);
    text(out, label ? label : r->name);
    free(label);
    fputs("</span></div><svg width=\"760\" height=\"40\" role=\"img\">", out);
    const struct diff_side *sides[2] = {&r->base, &r->new};
    for (int s = 0; s < 2; s++) {
        double v = sides[s]->count ? sides[s]->median : 0;
        int y = 2 + 19 * s;
        fprintf(out,
                "<rect x=\"60\" y=\"%d\" width=\"%.1f\" height=\"15\" fill=\"%s\"/>"
                "<text x=\"0\" y=\"%d\">%s</text><text x=\"%.1f\" y=\"%d\">",
                y, v * scale, s ? "#e07b39" : "#4a7ebb", y + 12, s ? "new" : "base",
                70 + fmax(v, s && !isnan(high) ? high : 0) * scale, y + 12);
        if (sides[s]->count)
            value(out, v, r->unit);
        else
            fputs("none", out);
        fputs("</text>", out);
    }
    if (r->new.count && !isnan(low) && !isnan(high))
        fprintf(out,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"29\" y2=\"29\" stroke=\"#222\"/>"
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"24\" y2=\"34\" stroke=\"#222\"/>"
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"24\" y2=\"34\" stroke=\"#222\"/>",
                60 + fmax(low, 0) * scale, 60 + high * scale, 60 + fmax(low, 0) * scale,
                60 + fmax(low, 0) * scale, 60 + high * scale, 60 + high * scale);
    fputs("</svg></div>\n", out);
}

static void header(const struct diff_result *res, FILE *out)
{
    fprintf(out,
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>lantern diff"
            "</title><style>%s</style></head><body><h1>lantern diff</h1><table>",
            style);
    const char *const *paths[2] = {res->base_paths, res->new_paths};
    int counts[2] = {res->base_runs, res->new_runs};
    for (int s = 0; s < 2; s++) {
        fprintf(out, "<tr><th>%s</th><td>", s ? "New" : "Base");
        for (int i = 0; i < counts[s]; i++) {
            fputs(i ? "<br>" : "", out);
            text(out, paths[s][i]);
        }
        fputs("</td></tr>", out);
    }
    fprintf(out,
            "<tr><th>Compared</th><td>%s; a change beyond %g %% at a false-discovery rate "
            "of %g %% counts; intervals at 95 %%</td></tr>",
            res->mode == DIFF_MODE_RUNS
                ? "by the runs' medians (bootstrap over runs)"
                : "by their instances (Mann-Whitney U, bootstrap of the medians)",
            res->options.threshold_percent, 100 * res->options.alpha);
    for (size_t i = 0; i < res->check_count; i++) {
        fputs("<tr><th>", out);
        text(out, res->checks[i].what);
        fprintf(out, "</th><td%s>", res->checks[i].differs ? " class=\"differs\"" : "");
        text(out, res->checks[i].text);
        fputs("</td></tr>", out);
    }
    fputs("</table>\n", out);
    for (size_t i = 0; i < res->warning_count; i++) {
        fputs("<div class=\"warn\">", out);
        text(out, res->warnings[i]);
        fputs("</div>\n", out);
    }
    fputs("<p>", out);
    for (int v = 0; v < DIFF_VERDICT_COUNT; v++)
        fprintf(out, "%s%zu %s", v ? ", " : "", res->verdicts[v], diff_verdict_names[v]);
    fputs("</p>\n", out);
}

static void all_rows(const struct diff_result *res, FILE *out)
{
    fputs("<h2>Every row</h2><table><tr><th>Verdict</th><th>Kind</th><th>Name</th><th>Base"
          "</th><th>New</th><th>Change</th><th>95 % CI</th><th>Base N</th><th>New N</th>"
          "<th>q</th></tr>\n",
          out);
    for (size_t i = 0; i < res->count && i < DIFF_HTML_ROWS; i++) {
        const struct diff_row *r = &res->rows[i];
        char *label = diff_row_label(r);
        fprintf(out, "<tr><td class=\"%s\">%s</td><td>", diff_verdict_names[r->verdict],
                diff_verdict_names[r->verdict]);
        text(out, diff_kinds[r->kind].name);
        fputs("</td><td class=\"name\">", out);
        text(out, label ? label : r->name);
        free(label);
        fputs("</td><td class=\"n\">", out);
        value(out, r->base.count ? r->base.median : NAN, r->unit);
        fputs("</td><td class=\"n\">", out);
        value(out, r->new.count ? r->new.median : NAN, r->unit);
        fputs("</td><td class=\"n\">", out);
        if (!isnan(r->percent))
            fprintf(out, "%+.1f %%", r->percent);
        else
            change(out, r->change, r->unit);
        fputs("</td><td class=\"n\">", out);
        if (!isnan(r->percent_low))
            fprintf(out, "%+.1f…%+.1f %%", r->percent_low, r->percent_high);
        else if (!isnan(r->change_low)) {
            change(out, r->change_low, r->unit);
            fputs("…", out);
            change(out, r->change_high, r->unit);
        }
        fprintf(out, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td><td class=\"n\">",
                (long long)r->base.count, (long long)r->new.count);
        if (!isnan(r->q))
            fprintf(out, "%.3g", r->q);
        fputs("</td></tr>\n", out);
    }
    fputs("</table>", out);
    if (res->count > DIFF_HTML_ROWS)
        fprintf(out, "<p>%zu more rows: lantern diff --format csv gives them all.</p>",
                res->count - DIFF_HTML_ROWS);
}

int diff_write_html(const struct diff_result *res, FILE *out)
{
    header(res, out);
    fputs("<h2>What changed</h2>\n", out);
    int bars = 0;
    for (size_t i = 0; i < res->count && bars < DIFF_HTML_BARS; i++)
        if (is_change(&res->rows[i]) && res->rows[i].kind != DIFF_KIND_RUN) {
            pair(out, &res->rows[i]);
            bars++;
        }
    if (!bars)
        fputs("<p>Nothing changed beyond the threshold.</p>\n", out);
    int explained = 0;
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        if (!r->explanation)
            continue;
        fputs(explained++ ? "" : "<h2>What changed inside the ranges</h2><ul>", out);
        fputs("<li><b>", out);
        text(out, r->name);
        fputs("</b> ", out);
        text(out, r->explanation);
        fputs("</li>\n", out);
    }
    fputs(explained ? "</ul>\n" : "", out);
    all_rows(res, out);
    fputs("</body></html>\n", out);
    return ferror(out) ? -EIO : 0;
}
