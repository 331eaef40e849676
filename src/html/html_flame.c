/* The host CPU section of the HTML page (-t cpu): flame graphs of the CPU samples, per process
 * for the whole run and for its top NVTX ranges by time, as inline SVG (callers on top, callees
 * below, width proportional to samples; each frame's tooltip gives its full name, samples and
 * share), coloured by kind (Python, the program's, a library's, unknown) with a legend. Frames
 * are the database's callsites (merged by path already, model/cpu_profile.h); a frame narrower
 * than FLAME_MIN_SHARE of its graph, or than the FLAME_MAX_FRAMES widest, is pruned with its
 * callees and the pruned samples are counted under the graph, so the page's size is bounded
 * whatever the run's, and a zoom into a frame of 5 % shows its callees down to 1 % of it. Each
 * frame carries its sample span for the zoom and search script (html_flame_script.c), written
 * once after. */
#include "analyze/host_activity.h"
#include "common/index_map.h"
#include "html/html_internal.h"
#include "model/cpu_profile.h"
#include "output/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLAME_PROCESSES "4"   /* the processes with the most samples (SQL LIMIT) */
#define FLAME_RANGES "4"      /* per process, the NVTX range names with the most time */
#define FLAME_MIN_SHARE 0.0005 /* frames under 0.05 % of the graph's width are pruned, */
#define FLAME_MAX_FRAMES 2000  /* and those narrower than the 2000 widest */
#define FLAME_MAX_ROWS 64      /* deeper frames are pruned too */
#define FLAME_WIDTH 1140
#define FLAME_ROW 16

struct flame {
    const struct cpu_profile *p;
    int64_t *total; /* by callsite: samples with it on the stack (0: no frame) */
    int64_t *first_child, *next_sibling; /* by callsite: the tree of callsites with samples */
    int64_t samples, pruned;
    int64_t narrowest; /* a frame is drawn when wider than this (samples): FLAME_MAX_FRAMES */
};

/* Children in order of samples (most first), then id: a stable drawing. */
static const int64_t *sort_total;
static int by_total(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (sort_total[x] != sort_total[y])
        return sort_total[x] < sort_total[y] ? 1 : -1;
    return (x > y) - (x < y);
}

/* Links each callsite with samples under its caller (0: the root), children sorted. */
static int build_tree(struct flame *f)
{
    const struct cpu_profile *p = f->p;
    int64_t *kids = calloc(p->callsites ? p->callsites : 1, sizeof *kids);
    if (!kids)
        return -ENOMEM;
    size_t n = 0;
    for (size_t c = 1; c < p->callsites; c++)
        if (f->total[c] > 0)
            kids[n++] = (int64_t)c;
    sort_total = f->total;
    qsort(kids, n, sizeof *kids, by_total);
    for (size_t i = n; i-- > 0;) { /* prepend in reverse: lists end up sorted */
        int64_t c = kids[i], parent = p->parent[c];
        f->next_sibling[c] = f->first_child[parent];
        f->first_child[parent] = c;
    }
    free(kids);
    return 0;
}

/* Frames coloured by kind, a hue per kind with shades picked by the name's hash (neighbours
 * stay apart); the legend lists them. KIND_ALL is the root. */
enum flame_kind { KIND_PYTHON, KIND_NATIVE, KIND_LIBRARY, KIND_UNKNOWN, KIND_ALL, KINDS };
static const struct {
    const char *key, *legend; /* data-k, the legend's words (NULL: not in the legend) */
    const char *shade[4];
} flame_kinds[KINDS] = {
    [KIND_PYTHON] = {"py", "Python function", {"#6fa8dc", "#7fb3e0", "#8fbee5", "#9fc9ea"}},
    [KIND_NATIVE] = {"native",
                     "native, the program's own",
                     {"#e8734a", "#ec8558", "#ef9766", "#f2a974"}},
    [KIND_LIBRARY] = {"lib",
                      "native, a library's (or the interpreter's)",
                      {"#e5b83c", "#e9c251", "#edcb66", "#f0d47b"}},
    [KIND_UNKNOWN] = {"unknown",
                      "kernel / unknown (no user-space frame, [vdso], [anon])",
                      {"#b4b9bf", "#bdc2c7", "#c6cacf", "#cfd2d6"}},
    [KIND_ALL] = {"all", NULL, {"#dfe3e8", "#dfe3e8", "#dfe3e8", "#dfe3e8"}},
};

/* A frame's kind: a Python function (it has a file), a frame without a module or in a pseudo
 * module ("[vdso]", "[anon]"), else the program's or a library's by cpu_frame_is_library. */
static enum flame_kind frame_kind(const struct cpu_profile *p, int64_t frame)
{
    if (frame && p->file[frame])
        return KIND_PYTHON;
    if (!frame || !p->module[frame] || p->module[frame][0] == '[')
        return KIND_UNKNOWN;
    return p->library[frame] ? KIND_LIBRARY : KIND_NATIVE;
}

/* One frame: a g.fr carrying its first sample (data-s, counted from the graph's left), its
 * samples (data-n), its kind (data-k) and, where the label is cut, its name whole (data-name),
 * which the zoom script (html_flame_script.c) reads. */
static void frame_rect(struct html_page *page, struct flame *f, const char *name,
                       const char *module, enum flame_kind kind, int64_t first, int64_t samples,
                       int row)
{
    FILE *out = page->out;
    double scale = (double)FLAME_WIDTH / (double)f->samples, x = (double)first * scale,
           w = (double)samples * scale;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    int chars = (int)((w - 4) / 6.5); /* names cut to fit; the tooltip has them whole */
    /* cut by code points, as the script cuts (by UTF-16 units: the same outside the astral
     * planes); at most FLAME_WIDTH / 6.5 characters of 4 bytes */
    char cut[4 * FLAME_WIDTH / 6 + 8] = "";
    if (chars >= 3) {
        if (utf8_width(name) > (size_t)chars)
            snprintf(cut, sizeof cut, "%.*s..", (int)utf8_prefix(name, (size_t)chars - 2), name);
        else
            snprintf(cut, sizeof cut, "%s", name);
    }
    fprintf(out, "<g class=\"fr\" data-s=\"%lld\" data-n=\"%lld\" data-k=\"%s\"", (long long)first,
            (long long)samples, flame_kinds[kind].key);
    if (strcmp(cut, name)) {
        fputs(" data-name=\"", out);
        html_text(out, name);
        putc('"', out);
    }
    fputs("><title>", out);
    html_text(out, name);
    if (module) {
        fputs(" (", out);
        html_text(out, module);
        putc(')', out);
    }
    fprintf(out,
            ": %lld samples, %.1f %%</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
            "height=\"%d\" fill=\"%s\"/>",
            (long long)samples, 100.0 * (double)samples / (double)f->samples, x, row * FLAME_ROW, w,
            FLAME_ROW - 1, flame_kinds[kind].shade[h % 4]);
    if (cut[0]) {
        fprintf(out, "<text x=\"%.1f\" y=\"%d\">", x + 2, row * FLAME_ROW + 12);
        html_text(out, cut);
        fputs("</text>", out);
    }
    fputs("</g>\n", out);
}

/* Whether a frame of these samples is wide enough to draw. */
static int wide_enough(const struct flame *f, int64_t samples)
{
    return (double)samples >= FLAME_MIN_SHARE * (double)f->samples && samples > f->narrowest;
}

/* Whether callsite k is drawn (not pruned) as a callee in row `row` + 1. */
static int drawn(const struct flame *f, int64_t k, int row)
{
    return wide_enough(f, f->total[k]) && row + 1 < FLAME_MAX_ROWS;
}

/* The widths (samples) of the frames drawn at c's callees, below row `row`, into widths[*n...]
 * (room for the callsites and one more), before any cut (f->narrowest 0). */
static void candidate_widths(const struct flame *f, int64_t c, int row, int64_t *widths,
                             size_t *n)
{
    for (int64_t k = f->first_child[c]; k; k = f->next_sibling[k])
        if (drawn(f, k, row)) {
            widths[(*n)++] = f->total[k];
            candidate_widths(f, k, row + 1, widths, n);
        }
}

static int by_width_down(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* f->narrowest: the width of the widest frame beyond FLAME_MAX_FRAMES (ties left out with it),
 * 0 when there are no more; no_frame is the samples without a frame, drawn as one. */
static int set_narrowest(struct flame *f, int64_t no_frame)
{
    f->narrowest = 0;
    int64_t *widths = malloc((f->p->callsites + 1) * sizeof *widths);
    if (!widths)
        return -ENOMEM;
    size_t n = 0;
    candidate_widths(f, 0, 0, widths, &n);
    if (no_frame && wide_enough(f, no_frame))
        widths[n++] = no_frame;
    if (n > FLAME_MAX_FRAMES) {
        qsort(widths, n, sizeof *widths, by_width_down);
        f->narrowest = widths[FLAME_MAX_FRAMES];
    }
    free(widths);
    return 0;
}

/* The rows the callees of c take below row `row` (the graph's height, before drawing). */
static int rows_below(const struct flame *f, int64_t c, int row)
{
    int rows = row + 1;
    for (int64_t k = f->first_child[c]; k; k = f->next_sibling[k])
        if (drawn(f, k, row)) {
            int r = rows_below(f, k, row + 1);
            if (r > rows)
                rows = r;
        }
    return rows;
}

/* Draws the callees of callsite c (0: the root) from sample `first`, one row below `row`. */
static void draw_children(struct html_page *page, struct flame *f, int64_t c, int64_t first,
                          int row)
{
    for (int64_t k = f->first_child[c]; k; k = f->next_sibling[k]) {
        if (!drawn(f, k, row)) {
            f->pruned += f->total[k];
            continue; /* pruned with its callees (the narrowest come last) */
        }
        int64_t frame = f->p->frame[k];
        frame_rect(page, f, frame ? f->p->name[frame] : "?", frame ? f->p->module[frame] : NULL,
                   frame_kind(f->p, frame), first, f->total[k], row + 1);
        draw_children(page, f, k, first, row + 1);
        first += f->total[k];
    }
}

/* One flame graph of the counts (per leaf callsite; made totals here), titled. */
static int draw(struct html_page *page, struct flame *f, int64_t *counts, const char *title)
{
    FILE *out = page->out;
    const struct cpu_profile *p = f->p;
    f->samples = 0;
    for (size_t c = 0; c < p->callsites; c++)
        f->samples += counts[c];
    if (f->samples == 0)
        return 0;
    int64_t no_frame = counts[0];
    cpu_profile_totals(p, counts);
    f->total = counts;
    f->pruned = 0;
    memset(f->first_child, 0, p->callsites * sizeof *f->first_child);
    memset(f->next_sibling, 0, p->callsites * sizeof *f->next_sibling);
    if (build_tree(f) < 0 || set_narrowest(f, no_frame) < 0)
        return -ENOMEM;
    int rows = rows_below(f, 0, 0);
    if (rows < 2 && no_frame)
        rows = 2;
    fputs("<h4>", out);
    html_text(out, title);
    fprintf(out,
            "</h4>\n<figure><svg class=\"flame\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\" data-samples=\"%lld\">\n",
            FLAME_WIDTH, rows * FLAME_ROW, FLAME_WIDTH, rows * FLAME_ROW, (long long)f->samples);
    frame_rect(page, f, "all", NULL, KIND_ALL, 0, f->samples, 0);
    draw_children(page, f, 0, 0, 0);
    int64_t first = 0;
    for (int64_t k = f->first_child[0]; k; k = f->next_sibling[k])
        if (drawn(f, k, 0))
            first += f->total[k];
    if (no_frame && wide_enough(f, no_frame))
        frame_rect(page, f, "[no user-space frame]", NULL, KIND_UNKNOWN, first, no_frame, 1);
    else
        f->pruned += no_frame;
    fprintf(out, "</svg>\n<figcaption data-pruned=\"%lld\">%lld samples", (long long)f->pruned,
            (long long)f->samples);
    if (f->pruned && f->narrowest)
        fprintf(out,
                "; %lld samples in frames of %lld samples or fewer (the %d widest drawn) or "
                "deeper than %d rows not drawn",
                (long long)f->pruned, (long long)f->narrowest, FLAME_MAX_FRAMES, FLAME_MAX_ROWS);
    else if (f->pruned)
        fprintf(out,
                "; %lld samples in frames under %.2f %% of the width (or deeper than %d "
                "rows) not drawn",
                (long long)f->pruned, 100 * FLAME_MIN_SHARE, FLAME_MAX_ROWS);
    fputs(".</figcaption></figure>\n", out);
    return 0;
}

/* Counts a process's samples (or those inside the ranges named name_id of each thread) into
 * counts; 0, -EIO or -ENOMEM. */
static int count_process(struct html_page *page, const struct cpu_profile *p, int64_t process,
                         int64_t domain_id, int64_t name_id, int64_t *counts)
{
    sqlite3_stmt *threads =
        html_prepare(page, "SELECT id FROM threads WHERE process_id = ? ORDER BY id");
    sqlite3_stmt *ranges = html_prepare(
        page, "SELECT start_ns, end_ns FROM ranges WHERE start_thread_id = ?1 AND domain_id = ?2"
              " AND name_id = ?3 AND end_ns > start_ns ORDER BY start_ns");
    int64_t *start = NULL, *end = NULL;
    size_t cap = 0;
    int rc = threads && ranges ? 0 : -EIO;
    sqlite3_bind_int64(threads, 1, process);
    while (rc == 0 && sqlite3_step(threads) == SQLITE_ROW) {
        int64_t thread = sqlite3_column_int64(threads, 0);
        struct cpu_windows w = {NULL, NULL, 0};
        if (name_id > 0) { /* the thread's instances, merged where nested or overlapping */
            sqlite3_reset(ranges);
            sqlite3_bind_int64(ranges, 1, thread);
            sqlite3_bind_int64(ranges, 2, domain_id);
            sqlite3_bind_int64(ranges, 3, name_id);
            size_t n = 0;
            while (rc == 0 && sqlite3_step(ranges) == SQLITE_ROW) {
                int64_t s = sqlite3_column_int64(ranges, 0), e = sqlite3_column_int64(ranges, 1);
                if (n && s <= end[n - 1]) {
                    if (e > end[n - 1])
                        end[n - 1] = e;
                    continue;
                }
                size_t old = cap;
                if (index_reserve((void **)&start, &cap, n, sizeof *start) < 0) {
                    rc = -ENOMEM;
                    break;
                }
                if (cap != old) {
                    int64_t *grown = realloc(end, cap * sizeof *grown);
                    if (!grown) {
                        rc = -ENOMEM;
                        break;
                    }
                    end = grown;
                }
                start[n] = s;
                end[n++] = e;
            }
            if (n == 0)
                continue;
            w = (struct cpu_windows){start, end, n};
        }
        if (rc == 0 && cpu_profile_count(page->db, p, thread, name_id > 0 ? &w : NULL, counts) < 0)
            rc = -EIO;
    }
    if (rc < 0 && !page->ctx->error[0])
        snprintf(page->ctx->error, sizeof page->ctx->error, "report: %s", sqlite3_errmsg(page->db));
    sqlite3_finalize(threads);
    sqlite3_finalize(ranges);
    free(start);
    free(end);
    return rc;
}

/* A process's graphs: the whole run, then its top range names by time on sampled threads. */
static int process_graphs(struct html_page *page, struct flame *f, int64_t *counts, int64_t process,
                          const char *label)
{
    FILE *out = page->out;
    fputs("<h3>", out);
    html_text(out, label);
    fputs("</h3>\n", out);
    memset(counts, 0, f->p->callsites * sizeof *counts);
    int rc = count_process(page, f->p, process, 0, 0, counts);
    if (rc == 0)
        rc = draw(page, f, counts, "The whole run");
    if (rc < 0)
        return rc;
    sqlite3_stmt *top = html_prepare(
        page, "SELECT r.domain_id, r.name_id, " ANALYZE_RANGE_LABEL ", sum(r.end_ns - r.start_ns)"
              " FROM ranges r LEFT JOIN strings rs ON rs.id = r.name_id"
              " LEFT JOIN domains rd ON rd.id = r.domain_id"
              " LEFT JOIN strings rds ON rds.id = rd.name_id"
              " WHERE r.process_id = ? AND r.end_ns > r.start_ns AND r.name_id IS NOT NULL"
              " GROUP BY r.domain_id, r.name_id ORDER BY 4 DESC, 3 LIMIT " FLAME_RANGES);
    rc = top ? 0 : -EIO;
    sqlite3_bind_int64(top, 1, process);
    while (rc == 0 && sqlite3_step(top) == SQLITE_ROW) {
        char title[512];
        snprintf(title, sizeof title, "NVTX range %s", (const char *)sqlite3_column_text(top, 2));
        memset(counts, 0, f->p->callsites * sizeof *counts);
        rc = count_process(page, f->p, process, sqlite3_column_int64(top, 0),
                           sqlite3_column_int64(top, 1), counts);
        if (rc == 0)
            rc = draw(page, f, counts, title);
    }
    sqlite3_finalize(top);
    return rc;
}

int html_section_cpu(struct html_page *page)
{
    FILE *out = page->out;
    if (!analyze_host_asked(page->ctx))
        return page->ctx->error[0] ? -EIO : 0; /* sampling not asked: no section, as before */
    fputs("<section id=\"cpu\"><h2>Host CPU</h2>\n", out);
    if (!cpu_profile_has_samples(page->db)) {
        sqlite3_stmt *st = html_prepare(
            page, "SELECT p.pid, c.status, c.reason FROM cpu_sampling c JOIN processes p"
                  " ON p.id = c.process_id WHERE c.status != 'on' ORDER BY p.id LIMIT 1");
        if (!st)
            return -EIO;
        fputs("<p class=\"note\">No CPU samples", out);
        if (sqlite3_step(st) == SQLITE_ROW) {
            fprintf(out, ": sampling was off in pid %lld (",
                    (long long)sqlite3_column_int64(st, 0));
            html_text(out, (const char *)sqlite3_column_text(st, 1));
            if (sqlite3_column_text(st, 2)) {
                fputs(": ", out);
                html_text(out, (const char *)sqlite3_column_text(st, 2));
            }
            putc(')', out);
        }
        fputs(".</p>\n</section>\n", out);
        sqlite3_finalize(st);
        return 0;
    }
    struct cpu_profile p;
    int rc = cpu_profile_load(page->db, &p);
    if (rc < 0) {
        snprintf(page->ctx->error, sizeof page->ctx->error, "report: cannot read the CPU samples");
        return rc;
    }
    struct flame f = {.p = &p};
    size_t n = p.callsites ? p.callsites : 1;
    int64_t *counts = calloc(n, sizeof *counts);
    f.first_child = calloc(n, sizeof *f.first_child);
    f.next_sibling = calloc(n, sizeof *f.next_sibling);
    sqlite3_stmt *procs = html_prepare(
        page, "SELECT t.process_id, pl.label || ' (pid ' || p.pid || ')', count(*) FROM"
              " cpu_samples s JOIN threads t ON t.id = s.thread_id JOIN processes p ON"
              " p.id = t.process_id JOIN process_labels pl ON pl.id = p.id"
              " GROUP BY t.process_id ORDER BY 3 DESC, 1 LIMIT " FLAME_PROCESSES);
    rc = !procs ? -EIO : counts && f.first_child && f.next_sibling ? 0 : -ENOMEM;
    if (rc == 0) {
        fputs("<p>Where the profiled threads spent their CPU time (native and Python stacks, -t "
              "cpu): callers above their callees, each frame as wide as its samples; hover a "
              "frame for its full name, samples and share. Click a frame (or Enter on it) to "
              "zoom into it, its callers greyed above it; Reset zoom or Escape goes back; the "
              "search box marks the frames whose name holds its text and says their share of "
              "the samples. Per process, the whole run and its NVTX ranges with the most time "
              "(docs/cpu.md).</p>\n<p class=\"legend\">",
              out);
        for (int k = 0; k < KINDS; k++)
            if (flame_kinds[k].legend)
                fprintf(out, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>",
                        flame_kinds[k].shade[0], flame_kinds[k].legend);
        fputs("<span><i class=\"sw\" style=\"background:#e03ee0\"></i>search match</span>"
              "</p>\n",
              out);
    }
    while (rc == 0 && sqlite3_step(procs) == SQLITE_ROW)
        rc = process_graphs(page, &f, counts, sqlite3_column_int64(procs, 0),
                            (const char *)sqlite3_column_text(procs, 1));
    if (rc == 0)
        fprintf(out, "<script id=\"flame-script\">\n%s</script>\n</section>\n", html_flame_script);
    else if (!page->ctx->error[0])
        snprintf(page->ctx->error, sizeof page->ctx->error, "report: %s", sqlite3_errmsg(page->db));
    sqlite3_finalize(procs);
    free(counts);
    free(f.first_child);
    free(f.next_sibling);
    cpu_profile_release(&p);
    return rc;
}
