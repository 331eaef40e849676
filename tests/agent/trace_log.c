/* The test-side raw trace decoder (trace_log.h): field layouts per record type come from
 * src/trace/records.def (its description table); unknown types are kept with no fields. */
#include "trace_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int trace_log_load(struct trace_log *log, const char *path)
{
    memset(log, 0, sizeof(*log));
    if (trace_reader_open(&log->reader, path) < 0)
        return -1;
    size_t cap = 0, scratch_cap = 4u << 20; /* the agent's largest record: a 1 MiB string */
    struct trace_chunk_builder scratch = {.buf = malloc(scratch_cap), .cap = scratch_cap};
    if (!scratch.buf)
        abort();
    unsigned type;
    struct trace_fields f;
    int rc;
    while ((rc = trace_reader_next(&log->reader, &type, &f)) == 1) {
        if (log->count == cap) {
            cap = cap ? cap * 2 : 1024;
            log->records = realloc(log->records, cap * sizeof(*log->records));
        }
        struct trace_log_record *r = &log->records[log->count++];
        memset(r, 0, sizeof(*r));
        r->type = type;
        /* every record the agent wrote is exactly what its generated encoder writes */
        if (trace_reencode_same(type, f, &scratch) == 0) {
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
            else if (!strcmp(kind, "s") || !strcmp(kind, "os"))
                r->s_len[i] = trace_get_s(&f, &r->s[i]);
            else /* u, ou, f (its bits), ul (its count: the values are not kept) */
                r->u[i] = trace_get_u(&f);
            if (!strcmp(kind, "ul"))
                break;
        }
        if (type == TRACE_STRING)
            trace_log_keep_string(log, r->u[0], r->s[1], r->s_len[1]);
    }
    free(scratch.buf);
    log->damaged = rc < 0;
    return 0;
}

void trace_log_free(struct trace_log *log)
{
    free(log->records);
    free(log->strings);
    free(log->string_lens);
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
