/* cpu_sample_sum: the hot functions of each sampled thread (-t cpu), by self samples (the
 * function was the leaf: it was running) and total samples (it was on the stack: it or its
 * callees were running; a recursive function counts once per sample), each with its share of
 * the thread's samples. Threads come in order of their samples, busiest first; within a
 * thread, functions by self then total. With --filter-nvtx RANGE only the samples a thread
 * took while inside a range of that name (started on that thread) count. docs/cpu.md. */
#include "common/u64_map.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CPU_MAX_DEPTH 256 /* callsites deeper than this are damage: the walk stops */

struct cpu_row {
    int64_t thread_id, frame_id; /* frame 0: a sample with no user-space frame */
    int64_t self, total;
};

struct cpu_threads {
    int64_t *ids, *samples;
    size_t n, cap;
};

struct cpu_sum {
    int64_t *parent, *frame; /* by callsite id */
    size_t callsites;
    struct u64_map rows_by_key; /* thread << 32 | frame + 1 -> row index + 1 */
    struct cpu_row *rows;
    size_t nrows, cap;
    struct cpu_threads threads;
    /* --filter-nvtx: the ranges of one thread, merged, sorted */
    int64_t filter_thread;
    int64_t *from, *until;
    size_t nranges, ranges_cap;
};

static int load_callsites(struct stats_ctx *ctx, struct cpu_sum *s)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(ctx->db, "SELECT max(id) FROM cpu_callsites", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto out;
    s->callsites = (size_t)sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);
    st = NULL;
    s->parent = calloc(s->callsites, sizeof *s->parent);
    s->frame = calloc(s->callsites, sizeof *s->frame);
    if (!s->parent || !s->frame) {
        rc = -ENOMEM;
        goto out;
    }
    if (sqlite3_prepare_v2(ctx->db, "SELECT id, ifnull(parent_id, 0), frame_id FROM cpu_callsites",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id <= 0 || (size_t)id >= s->callsites)
            continue;
        s->parent[id] = sqlite3_column_int64(st, 1);
        s->frame[id] = sqlite3_column_int64(st, 2);
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

static struct cpu_row *row_of(struct cpu_sum *s, int64_t thread, int64_t frame)
{
    uint64_t key = (uint64_t)thread << 32 | (uint64_t)(frame + 1);
    uint64_t *known = u64_map_find(&s->rows_by_key, key);
    if (known)
        return &s->rows[*known - 1];
    if (s->nrows == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct cpu_row *grown = realloc(s->rows, cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->rows = grown;
        s->cap = cap;
    }
    if (u64_map_put(&s->rows_by_key, key, s->nrows + 1) < 0)
        return NULL;
    s->rows[s->nrows] = (struct cpu_row){thread, frame, 0, 0};
    return &s->rows[s->nrows++];
}

static int thread_count(struct cpu_sum *s, int64_t thread)
{
    if (s->threads.n && s->threads.ids[s->threads.n - 1] == thread) {
        s->threads.samples[s->threads.n - 1]++;
        return 0;
    }
    if (s->threads.n == s->threads.cap) {
        size_t cap = s->threads.cap ? s->threads.cap * 2 : 64;
        int64_t *ids = realloc(s->threads.ids, cap * sizeof *ids);
        if (ids)
            s->threads.ids = ids;
        int64_t *samples = realloc(s->threads.samples, cap * sizeof *samples);
        if (samples)
            s->threads.samples = samples;
        if (!ids || !samples)
            return -ENOMEM;
        s->threads.cap = cap;
    }
    s->threads.ids[s->threads.n] = thread;
    s->threads.samples[s->threads.n++] = 1;
    return 0;
}

/* One sample: self for its leaf, total once for each distinct function on its stack. */
static int add_sample(struct cpu_sum *s, int64_t thread, int64_t callsite)
{
    int64_t seen[CPU_MAX_DEPTH];
    size_t nseen = 0;
    if (thread_count(s, thread) < 0)
        return -ENOMEM;
    if (callsite <= 0 || (size_t)callsite >= s->callsites) {
        struct cpu_row *r = row_of(s, thread, 0);
        if (!r)
            return -ENOMEM;
        r->self++;
        r->total++;
        return 0;
    }
    for (int64_t c = callsite; c > 0 && (size_t)c < s->callsites && nseen < CPU_MAX_DEPTH;
         c = s->parent[c]) {
        int64_t frame = s->frame[c];
        size_t k = 0;
        while (k < nseen && seen[k] != frame)
            k++;
        if (k < nseen)
            continue; /* recursion: once per sample */
        seen[nseen++] = frame;
        struct cpu_row *r = row_of(s, thread, frame);
        if (!r)
            return -ENOMEM;
        r->total++;
        if (c == callsite)
            r->self++;
    }
    return 0;
}

/* Loads the merged ranges named ctx->filter_nvtx that thread started. */
static int load_ranges(struct stats_ctx *ctx, struct cpu_sum *s, int64_t thread)
{
    static const char sql[] =
        "SELECT r.start_ns, ifnull(r.end_ns, 9223372036854775807) FROM ranges r"
        " JOIN strings n ON n.id = r.name_id WHERE n.value = ? AND r.start_thread_id = ?"
        " ORDER BY 1";
    sqlite3_stmt *st = NULL;
    s->filter_thread = thread;
    s->nranges = 0;
    if (sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, ctx->filter_nvtx, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, thread);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t from = sqlite3_column_int64(st, 0), until = sqlite3_column_int64(st, 1);
        if (s->nranges && from <= s->until[s->nranges - 1]) { /* nested or overlapping */
            if (until > s->until[s->nranges - 1])
                s->until[s->nranges - 1] = until;
            continue;
        }
        if (s->nranges == s->ranges_cap) {
            size_t cap = s->ranges_cap ? s->ranges_cap * 2 : 64;
            int64_t *f = realloc(s->from, cap * sizeof *f);
            if (f)
                s->from = f;
            int64_t *u = realloc(s->until, cap * sizeof *u);
            if (u)
                s->until = u;
            if (!f || !u) {
                sqlite3_finalize(st);
                return -ENOMEM;
            }
            s->ranges_cap = cap;
        }
        s->from[s->nranges] = from;
        s->until[s->nranges++] = until;
    }
    sqlite3_finalize(st);
    return 0;
}

static int in_ranges(const struct cpu_sum *s, int64_t ts)
{
    size_t lo = 0, hi = s->nranges; /* the last range starting at or before ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->from[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && ts < s->until[lo - 1];
}

static int collect(struct stats_ctx *ctx, struct cpu_sum *s)
{
    sqlite3_stmt *st = NULL;
    int rc = load_callsites(ctx, s);
    if (rc < 0)
        return rc;
    rc = -EIO;
    if (sqlite3_prepare_v2(ctx->db,
                           "SELECT s.thread_id, s.ts_ns, ifnull(k.callsite_id, 0) FROM cpu_samples s"
                           " LEFT JOIN cpu_stacks k ON k.id = s.stack_id ORDER BY 1, 2",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    s->filter_thread = -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t thread = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1);
        if (ctx->filter_nvtx) {
            if (thread != s->filter_thread && (rc = load_ranges(ctx, s, thread)) < 0)
                goto out;
            if (!in_ranges(s, ts))
                continue;
        }
        if ((rc = add_sample(s, thread, sqlite3_column_int64(st, 2))) < 0)
            goto out;
    }
    rc = step == SQLITE_DONE ? 0 : -EIO;
out:
    sqlite3_finalize(st);
    return rc;
}

static struct cpu_sum *sort_sum; /* qsort's context */

static int64_t thread_samples(const struct cpu_sum *s, int64_t thread)
{
    for (size_t i = 0; i < s->threads.n; i++)
        if (s->threads.ids[i] == thread)
            return s->threads.samples[i];
    return 0;
}

static int compare_rows(const void *a, const void *b)
{
    const struct cpu_row *x = a, *y = b;
    if (x->thread_id != y->thread_id) {
        int64_t nx = thread_samples(sort_sum, x->thread_id),
                ny = thread_samples(sort_sum, y->thread_id);
        if (nx != ny)
            return nx > ny ? -1 : 1;
        return x->thread_id < y->thread_id ? -1 : 1;
    }
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return x->frame_id < y->frame_id ? -1 : x->frame_id > y->frame_id;
}

static const struct table_column columns[] = {
    {"Self", "self_percent", TABLE_PERCENT},   {"Self Samples", "self", TABLE_INT},
    {"Total", "total_percent", TABLE_PERCENT}, {"Total Samples", "total", TABLE_INT},
    {"Function", "function", TABLE_TEXT},      {"Module", "module", TABLE_TEXT},
    {"Thread", "thread", TABLE_TEXT},          {"Process", "process", TABLE_TEXT},
};

static int write_rows(struct stats_ctx *ctx, struct cpu_sum *s)
{
    sqlite3_stmt *frame = NULL, *thread = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(ctx->db, "SELECT name, module FROM cpu_frames WHERE id = ?", -1, &frame,
                           NULL) != SQLITE_OK ||
        !(thread = stats_thread_query(ctx->db)))
        goto out;
    struct table *t = stats_new_table(ctx, columns, (int)(sizeof columns / sizeof columns[0]));
    for (size_t i = 0; t && i < s->nrows; i++) {
        const struct cpu_row *r = &s->rows[i];
        double all = (double)thread_samples(s, r->thread_id);
        table_percent(t, all > 0 ? 100.0 * (double)r->self / all : 0);
        table_int(t, r->self);
        table_percent(t, all > 0 ? 100.0 * (double)r->total / all : 0);
        table_int(t, r->total);
        sqlite3_reset(frame);
        sqlite3_bind_int64(frame, 1, r->frame_id);
        int has_frame = sqlite3_step(frame) == SQLITE_ROW;
        table_text(t, has_frame ? (const char *)sqlite3_column_text(frame, 0)
                                : "[no user-space frame]");
        table_text(t, has_frame ? (const char *)sqlite3_column_text(frame, 1) : NULL);
        stats_thread_cells(t, thread, r->thread_id);
    }
    rc = !t ? -ENOMEM : table_finish(t) == 0 ? 0 : -EIO;
out:
    sqlite3_finalize(frame);
    sqlite3_finalize(thread);
    return rc;
}

/* Why there is nothing to show: no process sampled (and why), or nothing in the range. */
static void explain_empty(struct stats_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    const char *why = NULL;
    if (sqlite3_prepare_v2(ctx->db,
                           "SELECT status || ': ' || ifnull(reason, '') FROM cpu_sampling"
                           " WHERE status <> 'on' LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        why = (const char *)sqlite3_column_text(st, 0);
    if (ctx->filter_nvtx)
        snprintf(ctx->note, sizeof ctx->note,
                 "cpu_sample_sum: no CPU sample inside an NVTX range named '%s'", ctx->filter_nvtx);
    else if (why)
        snprintf(ctx->note, sizeof ctx->note, "cpu_sample_sum: no CPU samples (sampling %s)", why);
    else
        snprintf(ctx->note, sizeof ctx->note,
                 "cpu_sample_sum: no CPU samples (sampling was off: -t cpu, --sample=cpu)");
    sqlite3_finalize(st);
}

int stats_cpu_sample_sum(struct stats_ctx *ctx)
{
    struct cpu_sum s = {0};
    int rc = collect(ctx, &s);
    if (rc == 0) {
        sort_sum = &s;
        if (s.nrows)
            qsort(s.rows, s.nrows, sizeof *s.rows, compare_rows);
        rc = write_rows(ctx, &s);
        if (rc == 0 && s.nrows == 0)
            explain_empty(ctx);
    }
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "cpu_sample_sum: %s", sqlite3_errmsg(ctx->db));
    free(s.parent);
    free(s.frame);
    free(s.rows);
    free(s.threads.ids);
    free(s.threads.samples);
    free(s.from);
    free(s.until);
    u64_map_release(&s.rows_by_key);
    return rc;
}
