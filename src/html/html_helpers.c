/* The helpers every section of the HTML page shares (html_internal.h): queries, durations,
 * colors, short names with their tooltip, bar charts. They call nothing of the page's frame
 * (html.c) or sections, so each section only looks down at them. */
#include "html/html_internal.h"
#include "output/table.h"

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
