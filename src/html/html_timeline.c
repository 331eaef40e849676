/* The timeline section of the HTML page: an overview per GPU (busy time and power in 500
 * bins) with the longest top-level NVTX ranges of up to MAX_LANES threads above it, each over
 * a strip of its thread's states where -t cpu recorded them (blocked, preempted), then the
 * busiest sampled threads without such a lane (MAX_CPU_LANES): their CPU samples as a running
 * share and their states; drawn as SVG over the analyze timeline. Every query aggregates or is
 * limited, and every strip is at most TIMELINE_LANE_PX rectangles. */
#include "html/html_internal.h"
#include "model/thread_states.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_LEFT 190 /* the lanes' names: 30 characters */
#define LANE_NAME_CHARS 30
#define PLOT_WIDTH 1000
#define MAX_LANES 6 /* of TIMELINE_MAX_LANES threads */
#define MAX_RANGE_RECTS 1500
#define MAX_CPU_LANES 4 /* sampled threads without an NVTX lane */
/* A sample stands for a period of CPU time: where a column is shorter than a few periods, one
 * sample would be a spike, so columns are pooled into buckets of at least this many periods. */
#define SAMPLE_BUCKET_PERIODS 8
/* a thread's strips: running (its CPU samples), blocked and preempted (its states) */
#define RUNNING_FILL "#3f9a58"
#define BLOCKED_FILL "#3b6fb6"
#define PREEMPTED_FILL "#d1495b"
#define LANE_STATES_SQL                                                                            \
    "SELECT start_ns, end_ns, state = 'preempted', state_ns FROM cpu_thread_states"                \
    " WHERE thread_id = ?1"
#define LANE_NAMES_SQL                                                                             \
    "SELECT tl.label, t.tid, pl.label, p.pid FROM threads t"                                       \
    " JOIN thread_labels tl ON tl.id = t.id JOIN processes p ON p.id = t.process_id"               \
    " JOIN process_labels pl ON pl.id = p.id WHERE t.id = ?1"

/* ---- timeline ------------------------------------------------------------------------------ */

static double x_of(const struct analyze_ctx *ctx, int64_t ts)
{
    double x = (double)(ts - ctx->start_ns) / (double)ctx->duration_ns;
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    return PLOT_LEFT + x * PLOT_WIDTH;
}

static void time_axis(FILE *out, const struct analyze_ctx *ctx, int y)
{
    fprintf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", PLOT_LEFT, y,
            PLOT_LEFT + PLOT_WIDTH, y);
    for (int i = 0; i <= 5; i++) {
        char label[32];
        table_format_duration(label, sizeof label, (double)ctx->duration_ns * i / 5.0);
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>",
                PLOT_LEFT + PLOT_WIDTH * i / 5, y + 13,
                i == 0   ? "start"
                : i == 5 ? "end"
                         : "middle",
                label);
    }
}

/* A lane's name: its thread's and its process's (`loader-0 \u00b7 train.py`), cut to fit,
 * whole with the tid and pid in the tooltip. names: thread_labels, tid, process_labels, pid. */
static void lane_name(FILE *out, sqlite3_stmt *names, int64_t thread_id, int y)
{
    sqlite3_reset(names);
    sqlite3_bind_int64(names, 1, thread_id);
    if (sqlite3_step(names) != SQLITE_ROW)
        return;
    const char *thread = (const char *)sqlite3_column_text(names, 0),
               *process = (const char *)sqlite3_column_text(names, 2);
    fprintf(out, "<text class=\"lane\" x=\"2\" y=\"%d\"><title>thread ", y);
    html_text(out, thread);
    fprintf(out, " (tid %lld) of process ", (long long)sqlite3_column_int64(names, 1));
    html_text(out, process);
    fprintf(out, " (pid %lld)</title>", (long long)sqlite3_column_int64(names, 3));
    char *name = NULL;
    if (asprintf(&name, "%s \u00b7 %s", thread ? thread : "", process ? process : "") >= 0) {
        html_text_cut(out, name, LANE_NAME_CHARS);
        free(name);
    }
    fputs("</text>\n", out);
}

static int by_lane_time(const void *a, const void *b)
{
    const struct timeline_lane *x = *(const struct timeline_lane *const *)a,
                               *y = *(const struct timeline_lane *const *)b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return (x->thread_id > y->thread_id) - (x->thread_id < y->thread_id);
}

/* One state's share of each of TIMELINE_LANE_PX columns of the session. */
struct lane_states {
    float blocked[TIMELINE_LANE_PX], preempted[TIMELINE_LANE_PX];
    double blocked_ns, preempted_ns; /* the thread's totals */
};

/* Adds the thread's off-CPU time of one row, [s, e) holding state_ns of it (a merged row
 * holds some running time too: spread evenly, as the model does), to the columns it covers. */
static void lane_states_add(const struct analyze_ctx *ctx, float *cols, int64_t s, int64_t e,
                            double state_ns)
{
    double col_ns = (double)ctx->duration_ns / TIMELINE_LANE_PX, density = state_ns / (double)(e - s);
    double a = (double)(s - ctx->start_ns), b = (double)(e - ctx->start_ns);
    int first = a < 0 ? 0 : (int)(a / col_ns), last = (int)(b / col_ns);
    for (int x = first; x <= last && x < TIMELINE_LANE_PX; x++) {
        double lo = fmax(a, x * col_ns), hi = fmin(b, (x + 1) * col_ns);
        if (hi > lo)
            cols[x] += (float)((hi - lo) * density / col_ns);
    }
}

/* The thread's states in columns (st: its rows, bound to the thread here); 1 when it has any,
 * 0 when none, -EIO. */
static int lane_states_load(const struct analyze_ctx *ctx, sqlite3_stmt *st, int64_t thread,
                            struct lane_states *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, thread);
    int rc, any = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        if (e <= s || ctx->duration_ns <= 0)
            continue;
        int preempted = sqlite3_column_int(st, 2);
        double state_ns = sqlite3_column_double(st, 3);
        lane_states_add(ctx, preempted ? out->preempted : out->blocked, s, e, state_ns);
        *(preempted ? &out->preempted_ns : &out->blocked_ns) += state_ns;
        any = 1;
    }
    return rc == SQLITE_DONE ? any : -EIO;
}

/* Columns of one value in runs of like shade: a rect per run above 1 %. */
static void shaded_runs(FILE *out, const float *cols, int y, int h, const char *fill)
{
    for (int x = 0; x < TIMELINE_LANE_PX;) {
        float c = cols[x] > 1 ? 1 : cols[x];
        int run = 1;
        while (x + run < TIMELINE_LANE_PX &&
               fabsf((cols[x + run] > 1 ? 1 : cols[x + run]) - c) < 0.05f)
            run++;
        if (c > 0.01f)
            fprintf(out,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"%s\" fill-opacity=\"%.2f\"/>",
                    PLOT_LEFT + x * PLOT_WIDTH / TIMELINE_LANE_PX, y,
                    run * PLOT_WIDTH / TIMELINE_LANE_PX, h, fill, c);
        x += run;
    }
}

/* A thread's states' strip, 3 px high at y: blue while it was blocked, red while preempted. */
static void states_strip(FILE *out, const struct lane_states *cols, int y)
{
    shaded_runs(out, cols->blocked, y, 3, BLOCKED_FILL);
    shaded_runs(out, cols->preempted, y, 3, PREEMPTED_FILL);
}

/* Under each lane, at y0 + its index x lane_h, its thread's blocked (blue) and preempted
 * (red) shares per column. The number of lanes with states, or -EIO / -ENOMEM. */
static int state_strips(struct html_page *page, const struct timeline_lane *const *lanes,
                        int nlanes, int y0, int lane_h)
{
    sqlite3_stmt *st = html_prepare(page, LANE_STATES_SQL);
    struct lane_states *cols = malloc(sizeof *cols);
    int with_states = st && cols ? 0 : st ? -ENOMEM : -EIO;
    for (int i = 0; i < nlanes && with_states >= 0; i++) {
        int got = lane_states_load(page->ctx, st, lanes[i]->thread_id, cols);
        if (got < 0)
            with_states = got;
        else if (got > 0) {
            states_strip(page->out, cols, y0 + i * lane_h);
            putc('\n', page->out);
            with_states++;
        }
    }
    free(cols);
    sqlite3_finalize(st);
    return with_states;
}

/* The lanes of NVTX ranges (timeline_ranges done): the MAX_LANES threads with the most time in
 * top-level ranges, most first. */
static int nvtx_lanes(const struct analyze_timeline *t, const struct timeline_lane **lanes)
{
    int n = t->lanes ? t->lane_count : 0;
    for (int i = 0; i < n; i++)
        lanes[i] = &t->lanes[i];
    qsort(lanes, (size_t)n, sizeof *lanes, by_lane_time);
    return n < MAX_LANES ? n : MAX_LANES;
}

/* Top-level ranges (depth 0 push/pop, and start/end), one lane per thread (the threads with
 * the most time in them): grey where they cover the time, from the coverage the timeline
 * pass summed per pixel column (so ranges far shorter than a pixel still show), and in color
 * the longest, named. */
static int range_lanes(struct html_page *page)
{
    FILE *out = page->out;
    struct analyze_timeline *t = page->timeline;
    int rc = timeline_ranges(page->ctx, t);
    if (rc < 0)
        return rc;
    const struct timeline_lane *lanes[TIMELINE_MAX_LANES];
    int nlanes = nvtx_lanes(t, lanes);
    if (nlanes == 0)
        return 0;
    sqlite3_stmt *st = html_prepare(
        page, "SELECT r.start_thread_id, r.start_ns, r.end_ns, r.color, " ANALYZE_RANGE_LABEL
              " FROM (SELECT id, start_thread_id, start_ns, end_ns, name_id, domain_id, color"
              "  FROM ranges"
              "  WHERE end_ns IS NOT NULL AND (depth = 0 OR style = 1)"
              "  ORDER BY end_ns - start_ns DESC LIMIT 1500) r"
              " LEFT JOIN strings rs ON rs.id = r.name_id LEFT JOIN domains rd ON rd.id ="
              " r.domain_id LEFT JOIN strings rds ON rds.id = rd.name_id");
    sqlite3_stmt *names = html_prepare(page, LANE_NAMES_SQL);
    if (!st || !names) {
        sqlite3_finalize(st);
        sqlite3_finalize(names);
        return -EIO;
    }
    /* with states, each lane has a strip of them under its ranges */
    int has_states = thread_states_present(page->ctx->db);
    const int bar_h = 13, lane_h = has_states ? 20 : 16, top = 4,
              height = top + nlanes * lane_h + 18;
    fprintf(out,
            "<figure><svg id=\"nvtx-lanes\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">\n",
            PLOT_LEFT + PLOT_WIDTH + 10, height, PLOT_LEFT + PLOT_WIDTH + 10, height);
    for (int i = 0; i < nlanes; i++) { /* coverage: grey, as dense as the ranges */
        int y = top + i * lane_h;
        lane_name(out, names, lanes[i]->thread_id, y + 11);
        shaded_runs(out, lanes[i]->cover, y, bar_h, "#8a94a0");
        putc('\n', out);
    }
    int with_states = has_states ? state_strips(page, lanes, nlanes, top + bar_h + 1, lane_h) : 0;
    if (with_states < 0) {
        sqlite3_finalize(st);
        sqlite3_finalize(names);
        return with_states;
    }
    int drawn = 0;
    while (sqlite3_step(st) == SQLITE_ROW) { /* the longest, named (hover) */
        int64_t thread = sqlite3_column_int64(st, 0);
        int lane = -1;
        for (int i = 0; i < nlanes; i++)
            if (lanes[i]->thread_id == thread)
                lane = i;
        int64_t s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
        double x0 = x_of(page->ctx, s), x1 = x_of(page->ctx, e);
        if (lane < 0 || x1 - x0 < 0.3) /* under a third of a pixel: the coverage shows it */
            continue;
        const char *label = (const char *)sqlite3_column_text(st, 4);
        char color[8];
        html_nvtx_color(sqlite3_column_type(st, 3) != SQLITE_NULL, sqlite3_column_int64(st, 3),
                        label, color);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                "<title>",
                x0, top + lane * lane_h, x1 - x0, bar_h, color);
        html_text(out, label);
        fputs(" (", out);
        html_ns(out, (double)(e - s));
        fputs(")</title></rect>\n", out);
        drawn++;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(names);
    time_axis(out, page->ctx, top + nlanes * lane_h + 2);
    fprintf(out,
            "</svg><figcaption>Top-level NVTX ranges of the %d thread%s with the most (named "
            "thread \u00b7 process): grey where they cover the time (darker: denser), in color "
            "the %d longest, in the colors the program gave them (hover for names).%s"
            "</figcaption></figure>\n",
            nlanes, nlanes == 1 ? "" : "s", drawn,
            with_states ? " Under a lane, its thread's state (-t cpu's context switches): blue "
                          "while it was blocked, red while preempted (darker: more of the time)."
                        : "");
    return 0;
}

/* ---- sampled threads without an NVTX lane ------------------------------------------------- */

/* A thread of a CPU lane: its samples and its process's sampling period (CPU time a sample
 * stands for). */
struct cpu_lane {
    int64_t thread_id, samples, period_ns;
};

/* What drawing a CPU lane reads and fills, prepared once for all lanes. */
struct cpu_lane_work {
    sqlite3_stmt *samples, *states, *names;
    float running[TIMELINE_LANE_PX];
    struct lane_states states_cols;
};

/* The sampled threads (samples or states) without an NVTX lane, most samples first: up to
 * MAX_CPU_LANES into lanes, the number of the others in *more. The count, or -EIO. */
static int cpu_lanes_pick(struct html_page *page, const struct timeline_lane *const *nvtx,
                          int nnvtx, struct cpu_lane *lanes, int64_t *more)
{
    sqlite3_stmt *st = html_prepare(
        page, "SELECT x.thread_id, sum(x.n), c.period_ns FROM (SELECT thread_id, count(*) AS n"
              " FROM cpu_samples GROUP BY thread_id UNION ALL SELECT DISTINCT thread_id, 0"
              " FROM cpu_thread_states) x JOIN threads t ON t.id = x.thread_id"
              " LEFT JOIN cpu_sampling c ON c.process_id = t.process_id"
              " GROUP BY x.thread_id ORDER BY 2 DESC, 1");
    if (!st)
        return -EIO;
    int n = 0, rc;
    *more = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        int laned = 0;
        for (int i = 0; i < nnvtx; i++)
            laned |= nvtx[i]->thread_id == id;
        if (laned)
            continue;
        if (n == MAX_CPU_LANES)
            (*more)++;
        else
            lanes[n++] =
                (struct cpu_lane){id, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? n : -EIO;
}

/* The thread's running share of each column: its samples x the period over the time of each
 * bucket of columns (SAMPLE_BUCKET_PERIODS periods at least). 0, or -EIO. */
static int lane_samples_load(const struct analyze_ctx *ctx, sqlite3_stmt *st,
                             const struct cpu_lane *lane, float *cols)
{
    int64_t counts[TIMELINE_LANE_PX] = {0};
    double col_ns = (double)ctx->duration_ns / TIMELINE_LANE_PX;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, lane->thread_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double x = (double)(sqlite3_column_int64(st, 0) - ctx->start_ns) / col_ns;
        if (x >= 0 && x < TIMELINE_LANE_PX)
            counts[(int)x]++;
    }
    if (rc != SQLITE_DONE)
        return -EIO;
    double bucket = ceil(SAMPLE_BUCKET_PERIODS * (double)lane->period_ns / col_ns);
    int width = bucket < 1 ? 1 : bucket > TIMELINE_LANE_PX ? TIMELINE_LANE_PX : (int)bucket;
    for (int b = 0; b < TIMELINE_LANE_PX; b += width) {
        int end = b + width < TIMELINE_LANE_PX ? b + width : TIMELINE_LANE_PX;
        int64_t sum = 0;
        for (int x = b; x < end; x++)
            sum += counts[x];
        for (int x = b; x < end; x++)
            cols[x] = (float)((double)sum * (double)lane->period_ns / ((end - b) * col_ns));
    }
    return 0;
}

/* One CPU lane at y: its name, its running share (green) over its states' strip, in a group
 * whose tooltip gives its totals. 1 when it has states, 0 when none, or -EIO. */
static int cpu_lane_draw(struct html_page *page, struct cpu_lane_work *w,
                         const struct cpu_lane *lane, int y)
{
    FILE *out = page->out;
    const int bar_h = 13;
    int states = page->ctx->duration_ns > 0
                     ? lane_states_load(page->ctx, w->states, lane->thread_id, &w->states_cols)
                     : 0;
    if (states < 0 || (page->ctx->duration_ns > 0 &&
                       lane_samples_load(page->ctx, w->samples, lane, w->running) < 0))
        return -EIO;
    lane_name(out, w->names, lane->thread_id, y + 11);
    fprintf(out, "<g class=\"cpu-lane\"><title>%lld samples: ", (long long)lane->samples);
    html_ns(out, (double)(lane->samples * lane->period_ns));
    fprintf(out, " of CPU time (%.1f %% of the session)",
            page->ctx->duration_ns > 0
                ? 100.0 * (double)(lane->samples * lane->period_ns) / (double)page->ctx->duration_ns
                : 0.0);
    if (states > 0) {
        fputs("; blocked ", out);
        html_ns(out, w->states_cols.blocked_ns);
        fputs(", preempted ", out);
        html_ns(out, w->states_cols.preempted_ns);
    }
    fputs("</title>", out);
    if (page->ctx->duration_ns > 0 && lane->period_ns > 0)
        shaded_runs(out, w->running, y, bar_h, RUNNING_FILL);
    if (states > 0)
        states_strip(out, &w->states_cols, y + bar_h + 1);
    fputs("</g>\n", out);
    return states > 0;
}

/* A lane per busy sampled thread without an NVTX lane (a data loader's, PyTorch's autograd
 * thread): its CPU samples and states, MAX_CPU_LANES at most, the others counted. */
static int cpu_lanes(struct html_page *page)
{
    const struct timeline_lane *nvtx[TIMELINE_MAX_LANES];
    int nnvtx = nvtx_lanes(page->timeline, nvtx);
    struct cpu_lane lanes[MAX_CPU_LANES];
    int64_t more = 0;
    int n = cpu_lanes_pick(page, nvtx, nnvtx, lanes, &more);
    if (n <= 0)
        return n;
    struct cpu_lane_work *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->samples = html_prepare(page, "SELECT ts_ns FROM cpu_samples WHERE thread_id = ?1");
    w->states = html_prepare(page, LANE_STATES_SQL);
    w->names = html_prepare(page, LANE_NAMES_SQL);
    int rc = w->samples && w->states && w->names ? 0 : -EIO, with_states = 0;
    FILE *out = page->out;
    const int lane_h = 20, top = 4, height = top + n * lane_h + 18;
    fprintf(out,
            "<figure><svg id=\"cpu-lanes\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">\n",
            PLOT_LEFT + PLOT_WIDTH + 10, height, PLOT_LEFT + PLOT_WIDTH + 10, height);
    for (int i = 0; i < n && rc >= 0; i++) {
        rc = cpu_lane_draw(page, w, &lanes[i], top + i * lane_h);
        with_states += rc > 0;
    }
    sqlite3_finalize(w->samples);
    sqlite3_finalize(w->states);
    sqlite3_finalize(w->names);
    free(w);
    if (rc < 0)
        return rc;
    time_axis(out, page->ctx, top + n * lane_h + 2);
    fprintf(out,
            "</svg><figcaption>CPU samples of the %d sampled thread%s without an NVTX lane "
            "with the most (named thread \u00b7 process): green as dense as the thread ran "
            "(its samples \u00d7 the sampling period over the time of each column, pooled over "
            "%d periods at least)%s (hover a lane for its totals).",
            n, n == 1 ? "" : "s", SAMPLE_BUCKET_PERIODS,
            with_states ? "; under it, blue while it was blocked, red while preempted" : "");
    if (more)
        fprintf(out,
                " %lld more thread%s sampled: see <code>lantern stats -r cpu_sample_sum"
                "</code>.",
                (long long)more, more == 1 ? "" : "s");
    fputs("</figcaption></figure>\n", out);
    return 0;
}

static int gpu_plot(struct html_page *page, const struct timeline_gpu *g, sqlite3_stmt *power)
{
    FILE *out = page->out;
    const struct analyze_timeline *t = page->timeline;
    const int h = 90, top = 6, height = top + h + 20;
    fprintf(out,
            "<h3>GPU %lld</h3><figure><svg class=\"gpu-timeline\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\">\n",
            (long long)g->label, PLOT_LEFT + PLOT_WIDTH + 10, height, PLOT_LEFT + PLOT_WIDTH + 10,
            height);
    fprintf(out, "<text x=\"2\" y=\"%d\">100 %%</text><text x=\"2\" y=\"%d\">0</text>\n", top + 10,
            top + h);
    /* busy share of each bin, as an area */
    fprintf(out, "<path fill=\"#7fb3e6\" stroke=\"#2f6db5\" stroke-width=\"0.6\" d=\"M%d %d",
            PLOT_LEFT, top + h);
    double bin_w = (double)PLOT_WIDTH / TIMELINE_BINS;
    for (int b = 0; b < TIMELINE_BINS; b++) {
        double util = g->bins[b] / (double)t->bin_ns;
        util = util > 1 ? 1 : util;
        double y = top + h - util * h;
        fprintf(out, " L%.1f %.1f L%.1f %.1f", PLOT_LEFT + b * bin_w, y,
                PLOT_LEFT + (b + 1) * bin_w, y);
    }
    fprintf(out, " L%d %d Z\"><title>GPU busy (share of each bin)</title></path>\n",
            PLOT_LEFT + PLOT_WIDTH, top + h);
    /* power, averaged per bin, scaled to the highest of the run */
    sqlite3_reset(power);
    sqlite3_bind_int64(power, 1, g->gpu_id);
    sqlite3_bind_int64(power, 2, page->ctx->start_ns);
    sqlite3_bind_int64(power, 3, t->bin_ns);
    double max_w = 0;
    int n = 0;
    static double watts[TIMELINE_BINS];
    static int bins[TIMELINE_BINS];
    while (sqlite3_step(power) == SQLITE_ROW && n < TIMELINE_BINS) {
        int64_t b = sqlite3_column_int64(power, 0);
        if (b < 0 || b >= TIMELINE_BINS)
            continue;
        bins[n] = (int)b;
        watts[n] = sqlite3_column_double(power, 1) / 1000.0;
        if (watts[n] > max_w)
            max_w = watts[n];
        n++;
    }
    if (n > 0 && max_w > 0) {
        fputs("<polyline fill=\"none\" stroke=\"#d0471f\" stroke-width=\"1.4\" points=\"", out);
        for (int i = 0; i < n; i++)
            fprintf(out, "%.1f,%.1f ", PLOT_LEFT + (bins[i] + 0.5) * bin_w,
                    top + h - watts[i] / max_w * h);
        fprintf(out,
                "\"><title>GPU power, W (max %.0f W)</title></polyline>\n"
                "<text x=\"%d\" y=\"%d\" fill=\"#d0471f\">%.0f W</text>\n",
                max_w, PLOT_LEFT + PLOT_WIDTH - 40, top + 10, max_w);
    }
    time_axis(out, page->ctx, top + h + 2);
    fprintf(out,
            "</svg><figcaption class=\"legend\"><span><i class=\"sw\" "
            "style=\"background:#7fb3e6\"></i>GPU busy (kernels, copies, memsets; %.1f %% "
            "of the run)</span>%s</figcaption></figure>\n",
            100.0 * (double)g->busy_ns / (double)page->ctx->duration_ns,
            n ? "<span><i class=\"sw\" style=\"background:#d0471f\"></i>power (NVML)</span>"
              : "<span class=\"note\">no power samples</span>");
    return 0;
}

int html_section_timeline(struct html_page *page)
{
    FILE *out = page->out;
    fputs("<section id=\"timeline\"><h2>Timeline</h2>\n", out);
    int rc = range_lanes(page);
    rc = rc < 0 ? rc : cpu_lanes(page);
    if (rc < 0)
        return rc;
    sqlite3_stmt *power = html_prepare(
        page,
        "SELECT (ts_ns - ?2) / ?3 AS b, avg(COALESCE(power_mw, power_avg_mw)) FROM gpu_samples"
        " WHERE gpu_id = ?1 AND COALESCE(power_mw, power_avg_mw) IS NOT NULL"
        " GROUP BY b ORDER BY b");
    if (!power)
        return -EIO;
    int shown = 0;
    for (int i = 0; i < page->timeline->gpu_count; i++) {
        const struct timeline_gpu *g = &page->timeline->gpus[i];
        if (g->first_start < 0 && !timeline_energy_track(page->timeline, g->gpu_id))
            continue;
        gpu_plot(page, g, power);
        shown++;
    }
    sqlite3_finalize(power);
    if (!shown)
        fputs(
            "<p class=\"note\">No GPU activity in this database (profile with -t cuda,nvml).</p>\n",
            out);
    fputs("</section>\n", out);
    return 0;
}
