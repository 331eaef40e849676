/* The record loop: reads one raw file of the session and hands each record to the source whose
 * type range holds it (the table in import_sources.c), or to the core's own records
 * (import_processes.c); then ends the file: each source's file_close, the process row. */
#include "db/import_core.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Progress is reported every this many records (about a tenth of a second of work). */
#define PROGRESS_EVERY (1u << 18)

static void import_record(struct import_file *f, unsigned type, struct trace_fields *fl);

/* TRACE_CLOCK: the ticks of the thread event streams after it become ns through it. */
static void import_clock(struct import_file *f, struct trace_fields *fl)
{
    struct trace_clock c;
    trace_get_clock(fl, &c);
    if (!c.ns_per_tick) /* before format version 3: informational */
        return;
    double ns_per_tick;
    memcpy(&ns_per_tick, &c.ns_per_tick, sizeof ns_per_tick);
    if (!(ns_per_tick > 0 && ns_per_tick < 1e6)) { /* damaged: keep the previous line */
        fl->bad = 1;
        return;
    }
    f->clock.ns_per_tick = ns_per_tick;
    f->clock.tsc = c.tsc;
    f->clock.ns = c.ts;
    f->clock.set = 1;
}

/* TRACE_THREAD_EVENTS: each event is imported as the record it stands for (trace/events.h). */
static void import_thread_events(struct import_file *f, struct trace_fields *fl)
{
    struct trace_thread_events r;
    if (trace_get_thread_events(fl, &r) < 0)
        return;
    uint64_t *ticks = u64_map_find(&f->stream_ticks, r.thread_idx + 1);
    if (!ticks) {
        if (u64_map_put(&f->stream_ticks, r.thread_idx + 1, 0) < 0) {
            fl->bad = 1;
            return;
        }
        ticks = u64_map_find(&f->stream_ticks, r.thread_idx + 1);
    }
    static struct trace_events_reader reader; /* the import is one thread */
    trace_events_begin(&reader, r.events.bytes, r.events.len, r.thread_idx, ticks, &f->clock);
    unsigned type;
    struct trace_fields event;
    int rc, cut = u64_map_find(&f->stream_cut, r.thread_idx + 1) != NULL;
    while ((rc = trace_events_next(&reader, &type, &event)) == 1) {
        if (cut && !reader.restarted)
            continue; /* the rest of a stream whose start the ring dropped */
        if (cut) {
            cut = 0;
            u64_map_remove(&f->stream_cut, r.thread_idx + 1);
        }
        import_record(f, type, &event);
        if (event.bad)
            import_malformed(f);
    }
    uint64_t last = trace_clock_line_ns(&f->clock, *ticks);
    if (!cut && last > f->last_event_ns)
        f->last_event_ns = last;
    if (rc < 0)
        fl->bad = 1;
}

/* TRACE_SEGMENT (--ring): a segment that does not follow the one read before (the first of a
 * dump, or one deleted while a dump was joined) cuts the streams of the threads known so far:
 * what they wrote before their RESTART in it continues a segment that is not here. */
static void import_segment(struct import_file *f, struct trace_fields *fl)
{
    struct trace_segment r;
    if (trace_get_segment(fl, &r) < 0)
        return;
    for (size_t i = 0; r.number != f->segment + 1 && i < f->threads.cap; i++)
        if (f->threads.v[i] && u64_map_put(&f->stream_cut, i + 1, 1) < 0)
            fl->bad = 1;
    f->segment = r.number;
}

/* Each source's records go to its importer, by type range (src/trace/sources.def). */
static void import_record(struct import_file *f, unsigned type, struct trace_fields *fl)
{
    if (type == TRACE_THREAD_EVENTS) {
        import_thread_events(f, fl);
        return;
    }
    if (type == TRACE_SEGMENT) {
        import_segment(f, fl);
        return;
    }
    if (type == TRACE_CLOCK) {
        import_clock(f, fl);
        return;
    }
    int i = import_source_of(type);
    if (i < 0) {
        import_core_record(f, type, fl);
        return;
    }
    const struct import_source *src = import_sources[i].source;
    f->s->source_records[i]++;
    f->bank = i + 1;
    void *ctx = f->source_ctx[i];
    if (!ctx) {
        ctx = src->file_open ? src->file_open(f, f->s->source_state[i]) : f;
        f->source_ctx[i] = ctx;
    }
    int rc = ctx ? src->record(ctx, type, fl) : 0; /* !ctx: out of memory */
    if (rc == IMPORT_RECORD_UNKNOWN)
        f->s->summary.skipped++;
    else if (rc < 0)
        import_lost(f, rc == -ENOMEM ? IMPORT_LOST_MEMORY : IMPORT_LOST_FAILED, 1);
    f->bank = 0;
}

/* End of the file: each source writes what it still holds, in the table's order. */
static void close_sources(struct import_file *f)
{
    for (int i = 0; i < IMPORT_SOURCES; i++) {
        const struct import_source *src = import_sources[i].source;
        f->bank = i + 1;
        if (f->source_ctx[i] && src->file_close)
            src->file_close(f->source_ctx[i]);
        f->source_ctx[i] = NULL;
        f->bank = 0;
    }
}

static void file_release(struct import_file *f)
{
    for (int bank = 0; bank <= IMPORT_SOURCES; bank++)
        for (int i = 0; i < IMPORT_SLOTS; i++)
            sqlite3_finalize(f->stmts[bank][i]);
    free(f->strings.v);
    free(f->threads.v);
    u64_map_release(&f->thread_by_tid);
    u64_map_release(&f->stream_ticks);
    u64_map_release(&f->stream_cut);
    free(f->warning);
}

static void report_progress(struct import_run *s, const struct trace_reader *r, uint64_t base)
{
    if (s->opt && s->opt->progress)
        s->opt->progress(s->opt->ctx, base + r->pos, s->bytes_total);
}

int import_cancelled(void *ctx)
{
    struct import_run *s = ctx;
    if (!s->cancelled && s->opt && s->opt->cancel && s->opt->cancel(s->opt->ctx))
        s->cancelled = 1;
    return s->cancelled;
}

void import_file(struct import_run *s, const char *path, const char *name)
{
    struct import_file f = {.s = s, .name = name};
    f.is_launcher = strcmp(name, "launcher.lrt") == 0;
    struct trace_reader r;
    if (trace_reader_open(&r, path) < 0) {
        if (r.not_a_trace) { /* not a file an agent wrote: said, but not a process */
            s->summary.warnings++;
            if (s->opt && s->opt->warn) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s: %s; skipped", name, r.damage);
                s->opt->warn(s->opt->ctx, msg);
            }
            s->bytes_done += r.size;
            trace_reader_close(&r);
            file_release(&f);
            return;
        }
        import_process(&f);
        import_warn(&f, "%s: %s; %zu bytes lost", name, r.damage, r.bytes_lost);
        goto done;
    }
    s->lantern_files++;
    unsigned type;
    struct trace_fields fl;
    int rc = 0;
    uint64_t base = s->bytes_done;
    while (!s->cancelled && (rc = trace_reader_next(&r, &type, &fl)) == 1) {
        import_record(&f, type, &fl);
        if (fl.bad)
            import_malformed(&f);
        if (r.prev_ts > f.last_ts)
            f.last_ts = r.prev_ts;
        if (++s->summary.records % PROGRESS_EVERY == 0) {
            report_progress(s, &r, base);
            if (import_cancelled(s))
                break;
        }
    }
    import_lost(&f, IMPORT_LOST_DUPLICATE_CHUNKS, r.duplicate_chunks);
    /* the launcher's file is written by several threads (the launcher's, each sampler's), which
     * may write their chunks in another order than they numbered them: put right silently */
    if (!f.is_launcher)
        import_lost(&f, IMPORT_LOST_MISORDERED_CHUNKS, r.misordered_chunks);
    if (rc < 0) {
        import_process(&f);
        import_warn(&f, "%s: %s; %zu bytes lost", name, r.damage, r.bytes_lost);
    }
    if (f.cut_strings) {
        s->truncated_strings += f.cut_strings;
        import_warn(&f, "%s: %llu names longer than %u bytes were cut (they end with \"%s\")", name,
                    (unsigned long long)f.cut_strings, TRACE_STRING_MAX, TRACE_STRING_CUT_MARK);
    }
done:
    trace_reader_close(&r);
    close_sources(&f);
    import_losses_finish(&f);
    import_process_finish(&f);
    s->summary.files++;
    s->bytes_done += r.size;
    file_release(&f);
}
