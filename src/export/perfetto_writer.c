/* The Perfetto export's writer (perfetto_writer.h): packets, track descriptors, per-sequence
 * interning of names, categories and argument names, events with delta-encoded timestamps,
 * nested slices, and the GPU and counter tracks that several sources share. Track descriptors
 * go on sequence 1; events go out in runs, one packet sequence each: the run's first packet
 * clears the sequence's incremental state and sets its defaults (a delta-encoded clock, the
 * run's track), and names, categories and argument names are interned per sequence (each text
 * written once, in the first packet that uses it), as Perfetto's own SDK writes traces. Used
 * by the core (perfetto.c) and by each source's file (perfetto_<source>.c). */
#include "export/perfetto_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- packets ----------------------------------------------------------------------------- */

#define PERFETTO_FLUSH_BYTES (1u << 20)

int perfetto_flush(struct perfetto_writer *w)
{
    if (w->file.len && fwrite(w->file.data, 1, w->file.len, w->out) != w->file.len)
        w->write_failed = 1;
    w->file.len = 0;
    return w->write_failed ? -EIO : 0;
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
    const char *losses = process ? process->losses : thread ? thread->losses : NULL;
    if (losses)
        pb_string(b, PF_TRACK_DESCRIPTION, losses);
    if (process) {
        size_t pd = pb_begin(b, PF_TRACK_PROCESS);
        pb_int(b, PF_PROCESS_PID, process->pid);
        pb_string(b, PF_PROCESS_NAME, name);
        pb_int(b, PF_PROCESS_SORT_INDEX, process->sort_index);
        if (losses)
            pb_string(b, PF_PROCESS_LABELS, losses);
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

static void perfetto_put_interned(struct perfetto_writer *w, unsigned field, uint64_t iid,
                                  const char *text, size_t len);

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

size_t perfetto_interned_begin(struct perfetto_writer *w, unsigned field)
{
    if (!w->interned_mark)
        w->interned_mark = pb_begin(&w->interned, PF_PACKET_INTERNED_DATA);
    return pb_begin(&w->interned, field);
}

int perfetto_interned_seen(struct perfetto_writer *w, uint32_t **set, size_t *cap, uint64_t iid)
{
    return perfetto_seen(w, set, cap, iid);
}

void perfetto_interned_string(struct perfetto_writer *w, unsigned field, uint64_t iid,
                              const char *text, size_t len)
{
    perfetto_put_interned(w, field, iid, text, len);
}

static void perfetto_put_interned(struct perfetto_writer *w, unsigned field, uint64_t iid,
                                  const char *text, size_t len)
{
    size_t m = perfetto_interned_begin(w, field);
    pb_uint(&w->interned, PF_INTERNED_IID, iid);
    pb_text(&w->interned, PF_INTERNED_NAME, text, len);
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
    perfetto_payload_begin(w);
    pb_uint(&w->event, PF_EVENT_TYPE, type);
    if (track != w->default_track)
        pb_uint(&w->event, PF_EVENT_TRACK_UUID, track);
}

void perfetto_event_end(struct perfetto_writer *w, uint64_t ts)
{
    perfetto_payload_end(w, ts, PF_PACKET_TRACK_EVENT);
}

void perfetto_payload_begin(struct perfetto_writer *w)
{
    w->event.len = 0;
    w->interned.len = 0;
    w->interned_mark = 0;
}

void perfetto_payload_end(struct perfetto_writer *w, uint64_t ts, unsigned payload)
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
    pb_bytes(b, payload, w->event.data, w->event.len);
    perfetto_put_packet(w);
    w->events++;
}

/* A debug annotation's name, interned in the current sequence on first use. */
static void perfetto_annotation_name(struct perfetto_writer *w, unsigned name_iid)
{
    static const char *const names[] = {
#define PERFETTO_ARG_NAME(id, text) [PF_ARG_##id] = text,
        PERFETTO_ARGS(PERFETTO_ARG_NAME)
#undef PERFETTO_ARG_NAME
    };
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
    pb_text(&w->event, PF_ANNOTATION_STRING, s, len);
    pb_end(&w->event, m);
}

/* ---- nested slices ------------------------------------------------------------------------ */

/* The ends still open on the current track, innermost first. */
static void perfetto_nest_close(struct perfetto_writer *w, struct perfetto_nest *n)
{
    while (n->depth) {
        perfetto_event_begin(w, PF_TYPE_SLICE_END, n->track);
        perfetto_event_end(w, n->ends[--n->depth]);
    }
}

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

void perfetto_nest_release(struct perfetto_writer *w, struct perfetto_nest *n)
{
    perfetto_nest_close(w, n);
    free(n->ends);
    *n = (struct perfetto_nest){0};
}

uint64_t perfetto_thread_slice(struct perfetto_writer *w, struct perfetto_nest *n, sqlite3_stmt *st,
                               uint64_t track, const char *name)
{
    int64_t thread = sqlite3_column_int64(st, 0);
    uint64_t start = (uint64_t)sqlite3_column_int64(st, 1);
    uint64_t end = (uint64_t)sqlite3_column_int64(st, 2);
    if (track != PERFETTO_THREAD_TRACK(thread) && (track != n->track || !n->started))
        perfetto_track(w, track, PERFETTO_THREAD_TRACK(thread), name, NULL, NULL, 0);
    perfetto_nest_begin(w, n, track, start, &end);
    perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
    return start;
}

/* ---- tracks several sources share ---------------------------------------------------------- */

void perfetto_gpu_track(struct perfetto_writer *w, int64_t gpu)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT 'GPU ' || coalesce(g.nvml_index, (SELECT min(device) FROM process_gpus"
        " WHERE gpu_id = g.id), '?') || ': ' || coalesce(g.name, 'unknown GPU')"
        " FROM (SELECT ? AS id) u LEFT JOIN gpus g ON g.id = u.id";
    for (size_t i = 0; i < w->gpus_described; i++)
        if (w->gpu_described[i] == gpu)
            return;
    if (w->gpus_described < sizeof w->gpu_described / sizeof w->gpu_described[0])
        w->gpu_described[w->gpus_described++] = gpu;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, gpu);
    if (sqlite3_step(st) == SQLITE_ROW)
        perfetto_track(w, PERFETTO_GPU_TRACK(gpu), 0, (const char *)sqlite3_column_text(st, 0),
                       NULL, NULL, 0);
    sqlite3_finalize(st);
}

unsigned perfetto_gpu_counter_metric(struct perfetto_writer *w)
{
    return w->counters++;
}

void perfetto_gpu_counter_track(struct perfetto_writer *w, int64_t gpu, unsigned metric,
                                const char *name)
{
    uint64_t track = PERFETTO_COUNTER_TRACK(gpu, metric);
    perfetto_gpu_track(w, gpu);
    perfetto_track(w, track, PERFETTO_GPU_TRACK(gpu), name, NULL, NULL, 1);
    perfetto_run_begin(w, track);
}

void perfetto_gpu_counter_value(struct perfetto_writer *w, int64_t gpu, unsigned metric,
                                uint64_t ts, double value)
{
    perfetto_event_begin(w, PF_TYPE_COUNTER, PERFETTO_COUNTER_TRACK(gpu, metric));
    pb_double(&w->event, PF_EVENT_DOUBLE_COUNTER_VALUE, value);
    perfetto_event_end(w, ts);
}

int perfetto_gpu_counter(struct perfetto_writer *w, const char *name, const char *sql)
{
    unsigned metric = perfetto_gpu_counter_metric(w);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int64_t last_gpu = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t gpu = sqlite3_column_int64(st, 0);
        if (gpu != last_gpu)
            perfetto_gpu_counter_track(w, gpu, metric, name);
        last_gpu = gpu;
        perfetto_gpu_counter_value(w, gpu, metric, (uint64_t)sqlite3_column_int64(st, 1),
                                   sqlite3_column_double(st, 2));
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* ---- the writer's start and end ------------------------------------------------------------ */

/* The first packet: sequence 1, which carries the track descriptors, starts clean. */
void perfetto_first_packet(struct perfetto_writer *w)
{
    struct pb_buf *b = &w->packet;
    pb_uint(b, PF_PACKET_SEQUENCE_ID, PERFETTO_DESCRIPTOR_SEQUENCE);
    pb_uint(b, PF_PACKET_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    pb_uint(b, PF_PACKET_FIRST_ON_SEQUENCE, 1);
    perfetto_put_packet(w);
}

void perfetto_writer_release(struct perfetto_writer *w)
{
    sqlite3_finalize(w->string_query);
    free(w->packet.data);
    free(w->file.data);
    free(w->event.data);
    free(w->interned.data);
    free(w->names_seen);
    free(w->categories_seen);
}
