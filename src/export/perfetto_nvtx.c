/* The NVTX part of the Perfetto export: push/pop ranges as nested slices on their thread's
 * track (other domains on a child track each), start/end ranges on lanes, child tracks of
 * their process per domain, and marks as instants on their thread's track; the domain is the
 * category, payload and category name are arguments. */
#include "export/perfetto_writer.h"

#include <errno.h>
#include <stdlib.h>

/* The NVTX category of a domain: its name, "nvtx" for the default domain. */
static void perfetto_domain_category(struct perfetto_writer *w, int64_t domain, const char *name)
{
    perfetto_event_category(w, PERFETTO_CATEGORY_DOMAIN + (uint64_t)domain,
                            name && *name ? name : "nvtx");
}

/* Payload and category name as debug annotations; "unended" for a range cut at the end. */
static void perfetto_nvtx_args(struct perfetto_writer *w, sqlite3_stmt *st, int col, int unended)
{
    int payload = sqlite3_column_type(st, col);
    if (payload == SQLITE_INTEGER)
        perfetto_annotation_int(w, PF_ARG_PAYLOAD, sqlite3_column_int64(st, col));
    else if (payload == SQLITE_FLOAT)
        perfetto_annotation_double(w, PF_ARG_PAYLOAD, sqlite3_column_double(st, col));
    if (sqlite3_column_type(st, col + 1) != SQLITE_NULL)
        perfetto_annotation_string(w, PF_ARG_CATEGORY,
                                   (const char *)sqlite3_column_text(st, col + 1),
                                   (size_t)sqlite3_column_bytes(st, col + 1));
    if (unended)
        perfetto_annotation_int(w, PF_ARG_UNENDED, 1);
}

#define NVTX_DOMAIN_NAME                                                                           \
    "(SELECT value FROM strings WHERE id = (SELECT name_id FROM domains WHERE id = r.domain_id))"
#define NVTX_CATEGORY_NAME                                                                         \
    "(SELECT s.value FROM categories c JOIN strings s ON s.id = c.name_id"                         \
    " WHERE c.domain_id = r.domain_id AND c.category = r.category)"
/* Ranges of one style, grouped by `key` (then domain) and sorted by `order`: key, start, end
 * (the process's, else the session's (?1), for a range never ended), domain, unended, name id,
 * domain name, payload, category. */
#define NVTX_RANGES_SQL(key, style, order)                                                         \
    "SELECT " key ", r.start_ns, coalesce(r.end_ns, p.end_ns, ?), r.domain_id,"                    \
    " r.end_ns IS NULL, r.name_id, " NVTX_DOMAIN_NAME ", r.payload,"                               \
    " CASE WHEN r.category THEN coalesce(" NVTX_CATEGORY_NAME ", r.category) END"                  \
    " FROM ranges r JOIN processes p ON p.id = r.process_id WHERE r.style = " style                \
    " ORDER BY " key ", r.domain_id, r.start_ns, " order

/* Push/pop ranges: nested slices on their thread's track (other domains on a child track
 * each, since ranges of two domains need not nest). */
static int perfetto_push_pop(struct perfetto_writer *w, long long session_end)
{
    sqlite3_stmt *st;
    const char *sql = NVTX_RANGES_SQL("r.start_thread_id", "0", "r.depth");
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, session_end);
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t thread = sqlite3_column_int64(st, 0), domain = sqlite3_column_int64(st, 3);
        const char *domain_name = (const char *)sqlite3_column_text(st, 6);
        uint64_t track =
            domain ? PERFETTO_DOMAIN_TRACK(thread, domain) : PERFETTO_THREAD_TRACK(thread);
        uint64_t start =
            perfetto_thread_slice(w, &nest, st, track, domain_name ? domain_name : "nvtx");
        perfetto_event_name_id(w, sqlite3_column_int64(st, 5));
        perfetto_domain_category(w, domain, domain_name);
        perfetto_nvtx_args(w, st, 7, sqlite3_column_int(st, 4));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* Start/end ranges may overlap and end on another thread: each (process, domain) gets lanes,
 * child tracks of the process, and a range goes on the first lane free at its start. One
 * run per (process, domain), in time order: an open lane's end is written before the first
 * begin after it. */
struct async_lanes {
    uint64_t end[PERFETTO_MAX_LANES];
    uint8_t open[PERFETTO_MAX_LANES];
    unsigned count;
    int64_t process, domain;
};

/* Writes the ends of open lanes up to `until`, earliest first. */
static void async_close_until(struct perfetto_writer *w, struct async_lanes *l, uint64_t until)
{
    for (;;) {
        unsigned first = PERFETTO_MAX_LANES;
        for (unsigned i = 0; i < l->count; i++)
            if (l->open[i] && l->end[i] <= until &&
                (first == PERFETTO_MAX_LANES || l->end[i] < l->end[first]))
                first = i;
        if (first == PERFETTO_MAX_LANES)
            return;
        l->open[first] = 0;
        perfetto_event_begin(w, PF_TYPE_SLICE_END,
                             PERFETTO_LANE_TRACK(l->process, l->domain, first));
        perfetto_event_end(w, l->end[first]);
    }
}

static int perfetto_start_end(struct perfetto_writer *w, long long session_end)
{
    sqlite3_stmt *st;
    const char *sql = NVTX_RANGES_SQL("r.process_id", "1", "r.id");
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, session_end);
    struct async_lanes *l = calloc(1, sizeof *l);
    if (!l) {
        sqlite3_finalize(st);
        return -ENOMEM;
    }
    l->process = l->domain = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t process = sqlite3_column_int64(st, 0), domain = sqlite3_column_int64(st, 3);
        const char *domain_name = (const char *)sqlite3_column_text(st, 6);
        if (process != l->process || domain != l->domain) {
            async_close_until(w, l, UINT64_MAX);
            l->count = 0;
            l->process = process;
            l->domain = domain;
            perfetto_run_begin(w, PERFETTO_LANE_TRACK(process, domain, 0));
        }
        uint64_t start = (uint64_t)sqlite3_column_int64(st, 1);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, 2);
        if (end < start)
            end = start;
        async_close_until(w, l, start);
        unsigned lane = 0;
        while (lane < l->count && l->open[lane])
            lane++;
        if (lane == PERFETTO_MAX_LANES) { /* all busy: left out, and counted */
            w->left_out++;
            continue;
        }
        uint64_t track = PERFETTO_LANE_TRACK(process, domain, lane);
        if (lane == l->count) {
            char name[160];
            snprintf(name, sizeof name, "%s (start/end)", domain_name ? domain_name : "nvtx");
            perfetto_track(w, track, PERFETTO_PROCESS_TRACK(process), name, NULL, NULL, 0);
            l->count++;
        }
        l->open[lane] = 1;
        l->end[lane] = end;
        perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
        perfetto_event_name_id(w, sqlite3_column_int64(st, 5));
        perfetto_domain_category(w, domain, domain_name);
        perfetto_nvtx_args(w, st, 7, sqlite3_column_int(st, 4));
        perfetto_event_end(w, start);
    }
    async_close_until(w, l, UINT64_MAX);
    free(l);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* Marks: instants on their thread's track, whatever their domain (instants need no nesting). */
static int perfetto_marks(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.thread_id, r.domain_id, r.ts_ns, r.name_id, " NVTX_DOMAIN_NAME ", r.payload,"
        " CASE WHEN r.category THEN coalesce(" NVTX_CATEGORY_NAME ", r.category) END"
        " FROM marks r ORDER BY r.thread_id, r.ts_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int64_t last_thread = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t thread = sqlite3_column_int64(st, 0), domain = sqlite3_column_int64(st, 1);
        const char *domain_name = (const char *)sqlite3_column_text(st, 4);
        uint64_t track = PERFETTO_THREAD_TRACK(thread);
        if (thread != last_thread)
            perfetto_run_begin(w, track);
        last_thread = thread;
        perfetto_event_begin(w, PF_TYPE_INSTANT, track);
        perfetto_event_name_id(w, sqlite3_column_int64(st, 3));
        perfetto_domain_category(w, domain, domain_name);
        perfetto_nvtx_args(w, st, 5, 0);
        perfetto_event_end(w, (uint64_t)sqlite3_column_int64(st, 2));
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

int perfetto_nvtx_events(struct perfetto_writer *w)
{
    if (perfetto_push_pop(w, w->session_end) < 0 || perfetto_start_end(w, w->session_end) < 0 ||
        perfetto_marks(w) < 0)
        return -EIO;
    return 0;
}
