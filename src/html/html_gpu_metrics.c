/* The GPU metrics section of the HTML page (lantern profile --gpu-metrics): per GPU, four of
 * its metrics over the run as lines (time-weighted means in 500 bins, broken where no sample
 * measured the GPU), and the run's min / mean / max of every recorded metric. The samples go
 * through model/gpu_metrics_series.h, as gpu_metrics_sum's, so the numbers agree. */
#include "html/html_internal.h"
#include "model/gpu_metrics_series.h"
#include "model/gpu_metrics_sources.h"
#include "output/table.h"

#include <errno.h>
#include <stdlib.h>

#define BINS 500
#define PLOT_LEFT 70
#define PLOT_WIDTH 1000
#define PLOT_HEIGHT 90

/* The lines drawn: what the GPU did, from "something ran" to "the Tensor Cores were busy". */
static const struct {
    enum gpu_metric_id metric;
    const char *color;
} plotted[] = {
    {GPU_METRIC_SM_ACTIVE, "#2f6db5"},
    {GPU_METRIC_WARP_OCCUPANCY, "#1f8a5a"},
    {GPU_METRIC_TENSOR_ACTIVE, "#c4472d"},
    {GPU_METRIC_DRAM_BW, "#8a5cc2"},
};
#define PLOTTED (sizeof plotted / sizeof plotted[0])

static void plot(struct html_page *page, const struct gpu_metrics_series *s)
{
    FILE *out = page->out;
    const struct analyze_ctx *ctx = page->ctx;
    static struct gpu_metric_acc bins[BINS][GPU_METRIC_COUNT];
    struct gpu_metrics_cursor c = {0};
    for (int b = 0; b < BINS; b++) {
        int64_t from = ctx->start_ns + ctx->duration_ns * b / BINS;
        int64_t to = ctx->start_ns + ctx->duration_ns * (b + 1) / BINS;
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            bins[b][m] = (struct gpu_metric_acc){0};
        if (to > from)
            gpu_metrics_series_add(s, &c, from, to, bins[b]);
    }
    const int top = 6, height = top + PLOT_HEIGHT + 8;
    fprintf(out,
            "<figure><svg class=\"gpu-metrics\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
            "role=\"img\">\n<text x=\"2\" y=\"%d\">100 %%</text><text x=\"2\" y=\"%d\">0</text>\n",
            PLOT_LEFT + PLOT_WIDTH + 10, height, PLOT_LEFT + PLOT_WIDTH + 10, height, top + 10,
            top + PLOT_HEIGHT);
    double bin_w = (double)PLOT_WIDTH / BINS;
    for (size_t p = 0; p < PLOTTED; p++) {
        int m = plotted[p].metric;
        if (!s->values[m])
            continue;
        fprintf(out, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" d=\"",
                plotted[p].color);
        int drawing = 0; /* a bin no sample measured breaks the line */
        for (int b = 0; b < BINS; b++) {
            double mean = gpu_metric_acc_mean(&bins[b][m]);
            if (mean < 0) {
                drawing = 0;
                continue;
            }
            double y = top + PLOT_HEIGHT - (mean > 100 ? 100 : mean) / 100 * PLOT_HEIGHT;
            fprintf(out, "%s%.1f %.1f L%.1f %.1f ", drawing ? "L" : "M", PLOT_LEFT + b * bin_w, y,
                    PLOT_LEFT + (b + 1) * bin_w, y);
            drawing = 1;
        }
        fprintf(out, "\"><title>%s (%%)</title></path>\n", gpu_metrics[m].column);
    }
    fputs("</svg><figcaption class=\"legend\">", out);
    for (size_t p = 0; p < PLOTTED; p++)
        if (s->values[plotted[p].metric])
            fprintf(out, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>",
                    plotted[p].color, gpu_metrics[plotted[p].metric].column);
    fputs("(means over 1/500 of the run; no line where no sample measured the GPU)"
          "</figcaption></figure>\n",
          out);
}

static void run_table(struct html_page *page, const struct gpu_metrics_series *s)
{
    FILE *out = page->out;
    struct gpu_metric_acc run[GPU_METRIC_COUNT] = {{0}};
    struct gpu_metrics_cursor c = {0};
    gpu_metrics_series_add(s, &c, s->start[0], s->end[s->count - 1], run);
    fputs("<table class=\"sortable\"><thead><tr><th>Metric</th><th>Unit</th><th>Min</th>"
          "<th>Mean</th><th>Max</th><th>Sampled</th></tr></thead><tbody>\n",
          out);
    for (int m = 0; m < GPU_METRIC_COUNT; m++) {
        if (!s->values[m] || run[m].covered_ns == 0)
            continue;
        int percent = gpu_metric_is_percent(m);
        double scale = percent ? 1 : 1e-9;
        fprintf(out, "<tr><td title=\"");
        html_text(out, gpu_metrics[m].definition);
        fprintf(out, "\">%s</td><td>%s</td>", gpu_metrics[m].column, percent ? "%" : "GB/s");
        double v[3] = {run[m].min, gpu_metric_acc_mean(&run[m]), run[m].max};
        for (int k = 0; k < 3; k++)
            fprintf(out, "<td class=\"num\" data-v=\"%.17g\">%.2f</td>", v[k] * scale,
                    v[k] * scale);
        fprintf(out, "<td class=\"num\" data-v=\"%lld\">", (long long)run[m].covered_ns);
        html_ns(out, (double)run[m].covered_ns);
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

int html_section_gpu_metrics(struct html_page *page)
{
    FILE *out = page->out;
    sqlite3_stmt *gpus = html_prepare(
        page, "SELECT g.id, 'GPU ' || COALESCE(" GPU_METRICS_SQL_GPU_INDEX ", g.uuid) || ': ' ||"
              " COALESCE(g.name, 'unknown GPU') FROM gpus g"
              " WHERE g.id IN (SELECT gpu_id FROM gpu_metric_sets) ORDER BY g.id");
    if (!gpus)
        return -EIO;
    fputs("<section id=\"gpu-metrics\"><h2>GPU metrics</h2>\n", out);
    int shown = 0, rc = 0;
    while (rc == 0 && sqlite3_step(gpus) == SQLITE_ROW) {
        struct gpu_metrics_series s;
        if ((rc = gpu_metrics_series_load(page->db, sqlite3_column_int64(gpus, 0), &s)) < 0) {
            snprintf(page->ctx->error, sizeof page->ctx->error,
                     "report: cannot read the GPU "
                     "metrics: %s",
                     sqlite3_errmsg(page->db));
            break;
        }
        if (s.count) {
            fputs("<h3>", out);
            html_text(out, (const char *)sqlite3_column_text(gpus, 1));
            fputs("</h3>\n", out);
            plot(page, &s);
            run_table(page, &s);
            shown++;
        }
        gpu_metrics_series_release(&s);
    }
    sqlite3_finalize(gpus);
    if (rc == 0)
        fprintf(out,
                "<p class=\"note\">%s Samples are GPU-wide averages: <code>lantern stats --report "
                "gpu_metrics_sum</code> gives them per NVTX range and kernel "
                "(docs/gpu-metrics.md)."
                "</p>\n</section>\n",
                shown ? "Min, mean and max over the run, first to last sample, time-weighted."
                      : "No GPU hardware metrics in this database (profile with --gpu-metrics).");
    return rc;
}
