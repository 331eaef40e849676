/* The test-side raw trace decoder (trace_log.h): field layouts per record type come from
 * src/trace/records.def (its description table); unknown types are kept with no fields. */
#include "trace_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/events.h"
#include "trace/format.h"
#include "trace/records.h"
#include "trace_reencode.h"

/* The record's description in records.def (src/trace/records.h); NULL for an unknown type. */
static const struct trace_record_spec *trace_log_spec(unsigned type)
{
    for (size_t i = 0; i < trace_record_spec_count; i++)
        if (trace_record_specs[i].type == type)
            return &trace_record_specs[i];
    return NULL;
}

static void trace_log_keep_string(struct trace_log *log, uint64_t id, const uint8_t *s, size_t len)
{
    if (id >= log->strings_cap) {
        size_t cap = log->strings_cap ? log->strings_cap : 64;
        while (cap <= id)
            cap *= 2;
        log->strings = realloc(log->strings, cap * sizeof(*log->strings));
        log->string_lens = realloc(log->string_lens, cap * sizeof(*log->string_lens));
        memset(log->strings + log->strings_cap, 0,
               (cap - log->strings_cap) * sizeof(*log->strings));
        log->strings_cap = cap;
    }
    log->strings[id] = s;
    log->string_lens[id] = len;
}

/* Bytes that live only in the stream decoder's scratch: copied, freed with the log. */
static const uint8_t *trace_log_own(struct trace_log *log, const uint8_t *s, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, s, len);
    log->owned = realloc(log->owned, (log->owned_count + 1) * sizeof(*log->owned));
    log->owned[log->owned_count++] = copy;
    return copy;
}

/* One record, with its fields decoded by its description; owned: copy its strings. */
static void trace_log_add(struct trace_log *log, unsigned type, struct trace_fields f,
                          const char *path, struct trace_chunk_builder *scratch, int owned)
{
    if (log->count == log->cap) {
        log->cap = log->cap ? log->cap * 2 : 1024;
        log->records = realloc(log->records, log->cap * sizeof(*log->records));
    }
    struct trace_log_record *r = &log->records[log->count++];
    memset(r, 0, sizeof(*r));
    r->type = type;
    /* every record the agent wrote is exactly what its generated encoder writes */
    if (trace_reencode_same(type, f, scratch) == 0) {
        fprintf(stderr, "%s: record %zu (type %u) differs from its encoding\n", path,
                log->count - 1, type);
        exit(1);
    }
    const struct trace_record_spec *spec = trace_log_spec(type);
    size_t fields = spec ? spec->field_count : 0;
    for (size_t i = 0; i < fields && i < TRACE_LOG_MAX_FIELDS; i++) {
        const char *kind = spec->fields[i].kind;
        if (!strcmp(kind, "ts"))
            r->u[i] = trace_get_ts(&f);
        else if (!strcmp(kind, "i"))
            r->u[i] = (uint64_t)trace_get_i(&f);
        else if (!strcmp(kind, "s") || !strcmp(kind, "os")) {
            r->s_len[i] = trace_get_s(&f, &r->s[i]);
            if (owned)
                r->s[i] = trace_log_own(log, r->s[i], r->s_len[i]);
        } else /* u, ou, f (its bits), ul (its count: the values are not kept) */
            r->u[i] = trace_get_u(&f);
        if (!strcmp(kind, "ul"))
            break;
    }
    if (type == TRACE_STRING)
        trace_log_keep_string(log, r->u[0], r->s[1], r->s_len[1]);
}

/* A thread's stream: each event is listed as the record it stands for (trace/events.h),
 * after the TRACE_THREAD_EVENTS record itself; ticks per thread, by the latest TRACE_CLOCK. */
static void trace_log_expand(struct trace_log *log, const struct trace_log_record *holder,
                             const char *path, struct trace_chunk_builder *scratch)
{
    uint64_t thread_idx = holder->u[0];
    if (thread_idx >= log->ticks_cap) {
        size_t cap = log->ticks_cap ? log->ticks_cap : 64;
        while (cap <= thread_idx)
            cap *= 2;
        log->ticks = realloc(log->ticks, cap * sizeof(*log->ticks));
        memset(log->ticks + log->ticks_cap, 0, (cap - log->ticks_cap) * sizeof(*log->ticks));
        log->ticks_cap = cap;
    }
    static struct trace_events_reader reader;
    static uint8_t record[TRACE_CHUNK_HEADER_SIZE + TRACE_EV_STRING_MAX + 256];
    struct trace_chunk_builder as_bytes = {.buf = record, .cap = sizeof record};
    uint64_t zero;
    trace_events_begin(&reader, holder->s[1], holder->s_len[1], thread_idx, &log->ticks[thread_idx],
                       &log->clock);
    unsigned type;
    struct trace_fields f;
    int rc;
    while ((rc = trace_events_next(&reader, &type, &f)) == 1) {
        log->events++;
        trace_log_add(log, type, trace_reencode_record(type, f, &as_bytes, &zero), path, scratch,
                      1);
    }
    if (rc < 0)
        log->damaged = 1;
}

int trace_log_load(struct trace_log *log, const char *path)
{
    memset(log, 0, sizeof(*log));
    if (trace_reader_open(&log->reader, path) < 0)
        return -1;
    size_t scratch_cap = 4u << 20; /* the agent's largest record: a 1 MiB string */
    struct trace_chunk_builder scratch = {.buf = malloc(scratch_cap), .cap = scratch_cap};
    if (!scratch.buf)
        abort();
    unsigned type;
    struct trace_fields f;
    int rc;
    while ((rc = trace_reader_next(&log->reader, &type, &f)) == 1) {
        trace_log_add(log, type, f, path, &scratch, 0);
        const struct trace_log_record *r = &log->records[log->count - 1];
        if (type == TRACE_CLOCK && r->u[2]) {
            log->clock = (struct trace_clock_line){.tsc = r->u[0], .ns = r->u[1], .set = 1};
            memcpy(&log->clock.ns_per_tick, &r->u[2], sizeof(double));
        }
        if (type == TRACE_THREAD_EVENTS) {
            struct trace_log_record holder = *r;
            trace_log_expand(log, &holder, path, &scratch);
        }
    }
    free(scratch.buf);
    log->damaged |= rc < 0;
    return 0;
}

void trace_log_free(struct trace_log *log)
{
    free(log->records);
    free(log->strings);
    free(log->string_lens);
    for (size_t i = 0; i < log->owned_count; i++)
        free(log->owned[i]);
    free(log->owned);
    free(log->ticks);
    trace_reader_close(&log->reader);
    memset(log, 0, sizeof(*log));
}

char *trace_log_string(const struct trace_log *log, uint64_t id, size_t *len)
{
    if (id == 0 || id >= log->strings_cap || !log->strings[id])
        return NULL;
    size_t n = log->string_lens[id];
    char *copy = malloc(n + 1);
    memcpy(copy, log->strings[id], n);
    copy[n] = '\0';
    if (len)
        *len = n;
    return copy;
}

size_t trace_log_count(const struct trace_log *log, unsigned type)
{
    size_t n = 0;
    for (size_t i = 0; i < log->count; i++)
        n += log->records[i].type == type;
    return n;
}

const struct trace_log_record *trace_log_nth(const struct trace_log *log, unsigned type, size_t n)
{
    for (size_t i = 0; i < log->count; i++)
        if (log->records[i].type == type && n-- == 0)
            return &log->records[i];
    return NULL;
}
