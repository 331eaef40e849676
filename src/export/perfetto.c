/* The Perfetto export: Perfetto's own protobuf trace (a Trace of TracePackets holding
 * TrackDescriptors and TrackEvents), which ui.perfetto.dev and trace_processor read
 * natively. Track descriptors go on sequence 1; events go out in runs, one packet sequence
 * each (perfetto_internal.h): the run's first packet clears the sequence's incremental state
 * and sets its defaults (a delta-encoded clock, the run's track), and names, categories and
 * argument names are interned per sequence (each text written once, in the first packet that
 * uses it), as Perfetto's own SDK writes traces. Tracks: a process track per process, a thread
 * track per thread (push/pop ranges of NVTX's default domain, marks), child tracks for other
 * domains' push/pop ranges and for CUDA API calls, lanes of start/end ranges per process and
 * domain. GPU tracks and counters: perfetto_gpu.c. Field numbers: perfetto_internal.h;
 * docs/export.md. */
#include "export/export.h"
#include "export/perfetto_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- packets ----------------------------------------------------------------------------- */

#define PERFETTO_DESCRIPTOR_SEQUENCE 1u
#define PERFETTO_FLUSH_BYTES (1u << 20)

static int perfetto_flush(struct perfetto_writer *w)
{
    if (w->file.len && fwrite(w->file.data, 1, w->file.len, w->out) != w->file.len)
        w->write_failed = 1;
    w->file.len = 0;
    return w->write_failed ? -1 : 0;
}

/* Appends the packet built in w->packet to the file as Trace.packet. */
static void perfetto_put_packet(struct perfetto_writer *w)
{
    pb_bytes(&w->file, PF_TRACE_PACKET, w->packet.data, w->packet.len);
    w->packet.len = 0;
    if (w->file.len >= PERFETTO_FLUSH_BYTES)
        perfetto_flush(w);
}

void perfetto_track(struct perfetto_writer *w, uint64_t uuid, uint64_t parent, const char *name,
                    const struct perfetto_thread_info *thread,
                    const struct perfetto_process_info *process, int counter)
{
    struct pb_buf *b = &w->packet;
    pb_uint(b, PF_PACKET_SEQUENCE_ID, PERFETTO_DESCRIPTOR_SEQUENCE);
    size_t td = pb_begin(b, PF_PACKET_TRACK_DESCRIPTOR);
    pb_uint(b, PF_TRACK_UUID, uuid);
    if (parent)
        pb_uint(b, PF_TRACK_PARENT_UUID, parent);
    if (name && !thread && !process)
        pb_string(b, PF_TRACK_NAME, name);
    if (process) {
        size_t pd = pb_begin(b, PF_TRACK_PROCESS);
        pb_int(b, PF_PROCESS_PID, process->pid);
        pb_string(b, PF_PROCESS_NAME, name);
        pb_int(b, PF_PROCESS_SORT_INDEX, process->sort_index);
        pb_end(b, pd);
    }
    if (thread) {
        size_t tdesc = pb_begin(b, PF_TRACK_THREAD);
        pb_int(b, PF_THREAD_PID, thread->pid);
        pb_int(b, PF_THREAD_TID, thread->tid);
        pb_string(b, PF_THREAD_NAME, name);
        pb_int(b, PF_THREAD_SORT_INDEX, thread->sort_index);
        pb_end(b, tdesc);
    }
    if (counter) {
        size_t cd = pb_begin(b, PF_TRACK_COUNTER);
        pb_end(b, cd);
    }
    pb_end(b, td);
    perfetto_put_packet(w);
}

/* ---- interning ---------------------------------------------------------------------------- */

/* Has the current sequence interned iid? Marks it so. */
static int perfetto_seen(struct perfetto_writer *w, uint32_t **set, size_t *cap, uint64_t iid)
{
    if (iid >= *cap) {
        size_t n = *cap ? *cap : 1024;
        while (n <= iid)
            n *= 2;
        uint32_t *grown = realloc(*set, n * sizeof *grown);
        if (!grown) {
            w->write_failed = 1;
            return 1;
        }
        memset(grown + *cap, 0, (n - *cap) * sizeof *grown);
        *set = grown;
        *cap = n;
    }
    if ((*set)[iid] == w->sequence)
        return 1;
    (*set)[iid] = w->sequence;
    return 0;
}

static void perfetto_put_interned(struct perfetto_writer *w, unsigned field, uint64_t iid,
                                  const char *text, size_t len)
{
    if (!w->interned_mark)
        w->interned_mark = pb_begin(&w->interned, PF_PACKET_INTERNED_DATA);
    size_t m = pb_begin(&w->interned, field);
    pb_uint(&w->interned, PF_INTERNED_IID, iid);
    pb_bytes(&w->interned, PF_INTERNED_NAME, text, len);
    pb_end(&w->interned, m);
}

/* The text of strings.id, read once per name. */
static void perfetto_string_text(struct perfetto_writer *w, int64_t id, const char **text,
                                 size_t *len)
{
    sqlite3_reset(w->string_query);
    sqlite3_bind_int64(w->string_query, 1, id);
    *text = "";
    *len = 0;
    if (sqlite3_step(w->string_query) == SQLITE_ROW) {
        *text = (const char *)sqlite3_column_text(w->string_query, 0);
        *len = (size_t)sqlite3_column_bytes(w->string_query, 0);
    }
}

void perfetto_event_name_id(struct perfetto_writer *w, int64_t string_id)
{
    if (string_id <= 0)
        string_id = w->unnamed_iid;
    if (!perfetto_seen(w, &w->names_seen, &w->names_cap, (uint64_t)string_id)) {
        const char *text = "(unnamed)";
        size_t len = strlen(text);
        if (string_id != (int64_t)w->unnamed_iid)
            perfetto_string_text(w, string_id, &text, &len);
        perfetto_put_interned(w, PF_INTERNED_EVENT_NAMES, (uint64_t)string_id, text, len);
    }
    pb_uint(&w->event, PF_EVENT_NAME_IID, (uint64_t)string_id);
}

void perfetto_event_name_text(struct perfetto_writer *w, unsigned synthetic, const char *text)
{
    uint64_t iid = w->unnamed_iid + 1 + synthetic;
    if (!perfetto_seen(w, &w->names_seen, &w->names_cap, iid))
        perfetto_put_interned(w, PF_INTERNED_EVENT_NAMES, iid, text, strlen(text));
    pb_uint(&w->event, PF_EVENT_NAME_IID, iid);
}

void perfetto_event_category(struct perfetto_writer *w, uint64_t iid, const char *text)
{
    if (!perfetto_seen(w, &w->categories_seen, &w->categories_cap, iid))
        perfetto_put_interned(w, PF_INTERNED_EVENT_CATEGORIES, iid, text, strlen(text));
    pb_uint(&w->event, PF_EVENT_CATEGORY_IIDS, iid);
}

/* ---- events ------------------------------------------------------------------------------- */

void perfetto_run_begin(struct perfetto_writer *w, uint64_t track)
{
    w->sequence++;
    w->sequence_started = 0;
    w->default_track = track;
}

/* The run's first packet, written with its first event (whose time is the clock's base):
 * clears the sequence's state, defines its incremental clock against CLOCK_MONOTONIC, and
 * makes the delta clock and the run's track the defaults of its packets. */
static void perfetto_start_sequence(struct perfetto_writer *w, uint64_t base)
{
    struct pb_buf *b = &w->packet;
    pb_uint(b, PF_PACKET_SEQUENCE_ID, w->sequence);
    pb_uint(b, PF_PACKET_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    pb_uint(b, PF_PACKET_FIRST_ON_SEQUENCE, 1);
    size_t snapshot = pb_begin(b, PF_PACKET_CLOCK_SNAPSHOT);
    size_t clock = pb_begin(b, PF_SNAPSHOT_CLOCKS);
    pb_uint(b, PF_CLOCK_ID, PF_CLOCK_MONOTONIC);
    pb_uint(b, PF_CLOCK_TIMESTAMP, base);
    pb_end(b, clock);
    clock = pb_begin(b, PF_SNAPSHOT_CLOCKS);
    pb_uint(b, PF_CLOCK_ID, PF_CLOCK_INCREMENTAL);
    pb_uint(b, PF_CLOCK_TIMESTAMP, base);
    pb_uint(b, PF_CLOCK_IS_INCREMENTAL, 1);
    pb_end(b, clock);
    if (!w->primary_clock_set) /* once, before any time is converted: a reader refuses changes */
        pb_uint(b, PF_SNAPSHOT_PRIMARY_TRACE_CLOCK, PF_CLOCK_MONOTONIC);
    w->primary_clock_set = 1;
    pb_end(b, snapshot);
    size_t defaults = pb_begin(b, PF_PACKET_DEFAULTS);
    pb_uint(b, PF_DEFAULTS_TIMESTAMP_CLOCK_ID, PF_CLOCK_INCREMENTAL);
    size_t track_defaults = pb_begin(b, PF_DEFAULTS_TRACK_EVENT);
    pb_uint(b, PF_TRACK_EVENT_DEFAULTS_TRACK_UUID, w->default_track);
    pb_end(b, track_defaults);
    pb_end(b, defaults);
    perfetto_put_packet(w);
    w->last_ts = base;
    w->sequence_started = 1;
}

void perfetto_event_begin(struct perfetto_writer *w, unsigned type, uint64_t track)
{
    w->event.len = 0;
    w->interned.len = 0;
    w->interned_mark = 0;
    pb_uint(&w->event, PF_EVENT_TYPE, type);
    if (track != w->default_track)
        pb_uint(&w->event, PF_EVENT_TRACK_UUID, track);
}

void perfetto_event_end(struct perfetto_writer *w, uint64_t ts)
{
    if (!w->sequence_started)
        perfetto_start_sequence(w, ts);
    struct pb_buf *b = &w->packet;
    if (ts >= w->last_ts) {
        pb_uint(b, PF_PACKET_TIMESTAMP, ts - w->last_ts);
        w->last_ts = ts;
    } else { /* out of order (not written so): an absolute time, the run's clock untouched */
        pb_uint(b, PF_PACKET_TIMESTAMP, ts);
        pb_uint(b, PF_PACKET_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
    }
    pb_uint(b, PF_PACKET_SEQUENCE_ID, w->sequence);
    pb_uint(b, PF_PACKET_SEQUENCE_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
    if (w->interned_mark) {
        pb_end(&w->interned, w->interned_mark);
        if (pb_room(b, w->interned.len) == 0) {
            memcpy(b->data + b->len, w->interned.data, w->interned.len);
            b->len += w->interned.len;
        }
    }
    pb_bytes(b, PF_PACKET_TRACK_EVENT, w->event.data, w->event.len);
    perfetto_put_packet(w);
    w->events++;
}

/* A debug annotation's name, interned in the current sequence on first use. */
static void perfetto_annotation_name(struct perfetto_writer *w, unsigned name_iid)
{
    static const char *const names[] = {[PF_ARG_PAYLOAD] = "payload",
                                        [PF_ARG_CATEGORY] = "category",
                                        [PF_ARG_UNENDED] = "unended",
                                        [PF_ARG_GRID] = "grid",
                                        [PF_ARG_BLOCK] = "block",
                                        [PF_ARG_BYTES] = "bytes",
                                        [PF_ARG_CORRELATION] = "correlation",
                                        [PF_ARG_REGISTERS] = "registers per thread",
                                        [PF_ARG_SHARED_MEMORY] = "shared memory bytes",
                                        [PF_ARG_SRC_KIND] = "source memory",
                                        [PF_ARG_DST_KIND] = "destination memory"};
    if (w->arg_seen[name_iid] != w->sequence) {
        w->arg_seen[name_iid] = w->sequence;
        perfetto_put_interned(w, PF_INTERNED_DEBUG_ANNOTATION_NAMES, name_iid, names[name_iid],
                              strlen(names[name_iid]));
    }
    pb_uint(&w->event, PF_ANNOTATION_NAME_IID, name_iid);
}

void perfetto_annotation_int(struct perfetto_writer *w, unsigned name_iid, int64_t v)
{
    size_t m = pb_begin(&w->event, PF_EVENT_DEBUG_ANNOTATIONS);
    perfetto_annotation_name(w, name_iid);
    pb_int(&w->event, PF_ANNOTATION_INT, v);
    pb_end(&w->event, m);
}

void perfetto_annotation_double(struct perfetto_writer *w, unsigned name_iid, double v)
{
    size_t m = pb_begin(&w->event, PF_EVENT_DEBUG_ANNOTATIONS);
    perfetto_annotation_name(w, name_iid);
    pb_double(&w->event, PF_ANNOTATION_DOUBLE, v);
    pb_end(&w->event, m);
}

void perfetto_annotation_string(struct perfetto_writer *w, unsigned name_iid, const char *s,
                                size_t len)
{
    size_t m = pb_begin(&w->event, PF_EVENT_DEBUG_ANNOTATIONS);
    perfetto_annotation_name(w, name_iid);
    pb_bytes(&w->event, PF_ANNOTATION_STRING, s, len);
    pb_end(&w->event, m);
}

/* ---- nested slices ------------------------------------------------------------------------ */

/* Slices of one track arrive sorted by start (outer first on ties); the ends still open are
 * on a stack, and each is written before the first begin at or after it, so every track's
 * events are in order and nested. A slice that would overlap its parent's end is cut there. */
void perfetto_nest_begin(struct perfetto_writer *w, struct perfetto_nest *n, uint64_t track,
                         uint64_t start, uint64_t *end)
{
    if (track != n->track || !n->started) {
        perfetto_nest_close(w, n);
        perfetto_run_begin(w, track);
        n->started = 1;
    }
    n->track = track;
    while (n->depth && n->ends[n->depth - 1] <= start) {
        perfetto_event_begin(w, PF_TYPE_SLICE_END, track);
        perfetto_event_end(w, n->ends[--n->depth]);
    }
    if (n->depth && *end > n->ends[n->depth - 1])
        *end = n->ends[n->depth - 1];
    if (*end < start)
        *end = start;
    if (n->depth == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 64;
        uint64_t *ends = realloc(n->ends, cap * sizeof *ends);
        if (!ends) {
            w->write_failed = 1;
            return;
        }
        n->ends = ends;
        n->cap = cap;
    }
    n->ends[n->depth++] = *end;
}

void perfetto_nest_close(struct perfetto_writer *w, struct perfetto_nest *n)
{
    while (n->depth) {
        perfetto_event_begin(w, PF_TYPE_SLICE_END, n->track);
        perfetto_event_end(w, n->ends[--n->depth]);
    }
}

/* ---- processes and threads ------------------------------------------------------------------ */

static int perfetto_processes(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT p.id, p.pid, " EXPORT_PROCESS_LABEL_SQL(
        "p") ","
             " ROW_NUMBER() OVER (ORDER BY p.rank IS NOT NULL, p.rank, p.start_ns, p.id) FROM "
             "processes p"
             " ORDER BY p.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct perfetto_process_info info = {sqlite3_column_int64(st, 1),
                                             sqlite3_column_int64(st, 3)};
        perfetto_track(w, PERFETTO_PROCESS_TRACK(sqlite3_column_int64(st, 0)), 0,
                       (const char *)sqlite3_column_text(st, 2), NULL, &info, 0);
    }
    if (sqlite3_finalize(st) != SQLITE_OK)
        return -1;
    sql = "SELECT t.id, p.pid, t.tid, " EXPORT_THREAD_LABEL_SQL(
        "t") ","
             " ROW_NUMBER() OVER (PARTITION BY t.process_id ORDER BY t.tid != p.pid, t.start_ns, "
             "t.id)"
             " FROM threads t JOIN processes p ON p.id = t.process_id ORDER BY t.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct perfetto_thread_info info = {
            sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 4)};
        perfetto_track(w, PERFETTO_THREAD_TRACK(sqlite3_column_int64(st, 0)), 0,
                       (const char *)sqlite3_column_text(st, 3), &info, NULL, 0);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* ---- NVTX ------------------------------------------------------------------------------------ */

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

/* Push/pop ranges: nested slices on their thread's track (other domains on a child track
 * each, since ranges of two domains need not nest). */
static int perfetto_push_pop(struct perfetto_writer *w, long long session_end)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT r.start_thread_id, r.domain_id, r.start_ns, coalesce(r.end_ns, p.end_ns, ?),"
        " r.end_ns IS NULL, r.name_id, " NVTX_DOMAIN_NAME ", r.payload,"
        " CASE WHEN r.category THEN coalesce(" NVTX_CATEGORY_NAME ", r.category) END"
        " FROM ranges r JOIN processes p ON p.id = r.process_id WHERE r.style = 0"
        " ORDER BY r.start_thread_id, r.domain_id, r.start_ns, r.depth";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_end);
    struct perfetto_nest nest = {0};
    int64_t last_thread = -1, last_domain = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t thread = sqlite3_column_int64(st, 0), domain = sqlite3_column_int64(st, 1);
        const char *domain_name = (const char *)sqlite3_column_text(st, 6);
        uint64_t track =
            domain ? PERFETTO_DOMAIN_TRACK(thread, domain) : PERFETTO_THREAD_TRACK(thread);
        if (domain && (thread != last_thread || domain != last_domain))
            perfetto_track(w, track, PERFETTO_THREAD_TRACK(thread),
                           domain_name ? domain_name : "nvtx", NULL, NULL, 0);
        last_thread = thread;
        last_domain = domain;
        uint64_t start = (uint64_t)sqlite3_column_int64(st, 2);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, 3);
        perfetto_nest_begin(w, &nest, track, start, &end);
        perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
        perfetto_event_name_id(w, sqlite3_column_int64(st, 5));
        perfetto_domain_category(w, domain, domain_name);
        perfetto_nvtx_args(w, st, 7, sqlite3_column_int(st, 4));
        perfetto_event_end(w, start);
    }
    perfetto_nest_close(w, &nest);
    free(nest.ends);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
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
    const char *sql =
        "SELECT r.process_id, r.domain_id, r.start_ns, coalesce(r.end_ns, p.end_ns, ?),"
        " r.end_ns IS NULL, r.name_id, " NVTX_DOMAIN_NAME ", r.payload,"
        " CASE WHEN r.category THEN coalesce(" NVTX_CATEGORY_NAME ", r.category) END"
        " FROM ranges r JOIN processes p ON p.id = r.process_id WHERE r.style = 1"
        " ORDER BY r.process_id, r.domain_id, r.start_ns, r.id";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_end);
    struct async_lanes *l = calloc(1, sizeof *l);
    if (!l) {
        sqlite3_finalize(st);
        return -1;
    }
    l->process = l->domain = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t process = sqlite3_column_int64(st, 0), domain = sqlite3_column_int64(st, 1);
        const char *domain_name = (const char *)sqlite3_column_text(st, 6);
        if (process != l->process || domain != l->domain) {
            async_close_until(w, l, UINT64_MAX);
            l->count = 0;
            l->process = process;
            l->domain = domain;
            perfetto_run_begin(w, PERFETTO_LANE_TRACK(process, domain, 0));
        }
        uint64_t start = (uint64_t)sqlite3_column_int64(st, 2);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, 3);
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
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
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
        return -1;
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
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* ---- the export --------------------------------------------------------------------------------
 */

static long long perfetto_meta_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The first packet: sequence 1, which carries the track descriptors, starts clean. */
static void perfetto_first_packet(struct perfetto_writer *w)
{
    struct pb_buf *b = &w->packet;
    pb_uint(b, PF_PACKET_SEQUENCE_ID, PERFETTO_DESCRIPTOR_SEQUENCE);
    pb_uint(b, PF_PACKET_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    pb_uint(b, PF_PACKET_FIRST_ON_SEQUENCE, 1);
    perfetto_put_packet(w);
}

int export_perfetto(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                    size_t error_size)
{
    struct perfetto_writer w = {.db = db, .out = out, .sequence = PERFETTO_DESCRIPTOR_SEQUENCE};
    /* synthetic names ("Memcpy HtoD", "(unnamed)") take iids above every string id */
    w.unnamed_iid = (uint64_t)perfetto_meta_int(db, "SELECT coalesce(max(id), 0) FROM strings") + 1;
    long long session_end = perfetto_meta_int(db, "SELECT value FROM meta WHERE key = 'end_ns'");
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &w.string_query,
                           NULL) != SQLITE_OK)
        goto out;
    perfetto_first_packet(&w);
    if (perfetto_processes(&w) < 0 || perfetto_push_pop(&w, session_end) < 0 ||
        perfetto_start_end(&w, session_end) < 0 || perfetto_marks(&w) < 0 ||
        perfetto_gpu_events(&w) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        snprintf(error, error_size, "%s", sqlite3_errmsg(db));
    if (rc == 0 && (perfetto_flush(&w) < 0 || fflush(out) != 0 || ferror(out) || w.packet.failed ||
                    w.file.failed || w.event.failed || w.interned.failed)) {
        snprintf(error, error_size,
                 w.write_failed || ferror(out) ? "write failed" : "out of memory");
        rc = -1;
    }
    if (stats) {
        stats->events = w.events;
        stats->left_out = w.left_out;
    }
    sqlite3_finalize(w.string_query);
    free(w.packet.data);
    free(w.file.data);
    free(w.event.data);
    free(w.interned.data);
    free(w.names_seen);
    free(w.categories_seen);
    return rc;
}
