/* The GIL waits' model (gil_waits.h): a thread's cpu_gil_waits rows clipped to time windows
 * and summed, with the time per Python function it waited in; and the windows of a thread's
 * NVTX ranges of one name, which python_gil_sum's --filter-nvtx restricts to. */
#include "model/gil_waits.h"

#include <errno.h>
#include <stdlib.h>

int gil_waits_present(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM cpu_gil_waits LIMIT 1", -1, &st, NULL) == SQLITE_OK)
        has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

int64_t gil_overlap(const struct cpu_windows *w, int64_t start, int64_t end)
{
    if (!w)
        return end > start ? end - start : 0;
    size_t lo = 0, hi = w->count; /* the first window ending after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->end[mid] <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t ns = 0;
    for (size_t i = lo; i < w->count && w->start[i] < end; i++) {
        int64_t s = start > w->start[i] ? start : w->start[i];
        int64_t e = end < w->end[i] ? end : w->end[i];
        if (e > s)
            ns += e - s;
    }
    return ns;
}

static int add_function(struct gil_wait_sum *s, int64_t frame, int64_t ns)
{
    for (size_t i = 0; i < s->nfunctions; i++)
        if (s->functions[i].frame_id == frame) {
            s->functions[i].ns += ns;
            s->functions[i].waits++;
            return 0;
        }
    if (s->nfunctions == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct gil_function *grown = realloc(s->functions, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        s->functions = grown;
        s->cap = cap;
    }
    s->functions[s->nfunctions++] = (struct gil_function){frame, ns, 1};
    return 0;
}

int gil_waits_add(sqlite3 *db, int64_t thread, const struct cpu_windows *w, struct gil_wait_sum *s)
{
    static const char sql[] =
        "SELECT g.ts_ns - g.duration_ns, g.ts_ns, ifnull(c.frame_id, 0) FROM cpu_gil_waits g"
        " LEFT JOIN cpu_stacks k ON k.id = g.stack_id"
        " LEFT JOIN cpu_callsites c ON c.id = k.callsite_id"
        " WHERE g.thread_id = ?1 AND g.ts_ns > ?2 AND g.ts_ns - g.duration_ns < ?3";
    sqlite3_stmt *st = NULL;
    if (w && !w->count)
        return 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, thread);
    sqlite3_bind_int64(st, 2, w ? w->start[0] : INT64_MIN);
    sqlite3_bind_int64(st, 3, w ? w->end[w->count - 1] : INT64_MAX);
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ns = gil_overlap(w, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
        if (ns <= 0)
            continue;
        s->ns += ns;
        s->waits++;
        rc = add_function(s, sqlite3_column_int64(st, 2), ns);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int by_time(const void *a, const void *b)
{
    const struct gil_function *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns > y->ns ? -1 : 1;
    return (x->frame_id > y->frame_id) - (x->frame_id < y->frame_id);
}

void gil_wait_sum_sort(struct gil_wait_sum *s)
{
    if (s->nfunctions)
        qsort(s->functions, s->nfunctions, sizeof *s->functions, by_time);
}

void gil_wait_sum_release(struct gil_wait_sum *s)
{
    free(s->functions);
    *s = (struct gil_wait_sum){0};
}

int64_t gil_range_windows(sqlite3 *db, const char *name, int64_t thread, int64_t **start,
                          int64_t **end)
{
    static const char sql[] =
        "SELECT r.start_ns, coalesce(r.end_ns, (SELECT value FROM meta WHERE key = 'end_ns'),"
        " 9223372036854775807) FROM ranges r"
        " JOIN strings n ON n.id = r.name_id WHERE n.value = ? AND r.start_thread_id = ?"
        " ORDER BY 1";
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    size_t cap = 0;
    *start = *end = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, thread);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t from = sqlite3_column_int64(st, 0), until = sqlite3_column_int64(st, 1);
        if (n && from <= (*end)[n - 1]) { /* nested or overlapping */
            if (until > (*end)[n - 1])
                (*end)[n - 1] = until;
            continue;
        }
        if ((size_t)n == cap) {
            cap = cap ? cap * 2 : 64;
            int64_t *s = realloc(*start, cap * sizeof *s);
            if (s)
                *start = s;
            int64_t *e = realloc(*end, cap * sizeof *e);
            if (e)
                *end = e;
            if (!s || !e) {
                n = -ENOMEM;
                break;
            }
        }
        (*start)[n] = from;
        (*end)[n++] = until;
    }
    sqlite3_finalize(st);
    return n;
}
