/* The test-side raw trace decoder (trace_log.h): field layouts per record type follow
 * src/trace/format.h; unknown types are kept with no fields. */
#include "trace_log.h"

#include <stdlib.h>
#include <string.h>

#include "trace/format.h"

/* u: unsigned, i: signed, t: timestamp, s: string. */
static const char *trace_log_layout(unsigned type)
{
    switch (type) {
    case TRACE_PROCESS:
        return "uutusssus";
    case TRACE_PROCESS_END:
        return "tuu";
    case TRACE_THREAD:
        return "uut";
    case TRACE_THREAD_NAME:
        return "uu";
    case TRACE_STRING:
        return "us";
    case TRACE_DROPPED:
        return "uu";
    case TRACE_DOMAIN:
        return "uu";
    case TRACE_CATEGORY:
        return "uuu";
    case TRACE_PUSH:
        return "utuuuuuuu";
    case TRACE_POP:
        return "utuu";
    case TRACE_START:
        return "utuuuuuuu";
    case TRACE_END:
        return "utu";
    case TRACE_MARK:
        return "utuuuuuu";
    case TRACE_UNBALANCED_POP:
        return "utu";
    case TRACE_DOMAIN_DESTROY:
        return "ut";
    case TRACE_NAME_RESOURCE:
        return "uuu";
    default:
        return "";
    }
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
    size_t cap = 0;
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
        const char *layout = trace_log_layout(type);
        for (size_t i = 0; layout[i] && i < TRACE_LOG_MAX_FIELDS; i++) {
            switch (layout[i]) {
            case 'u':
                r->u[i] = trace_get_u(&f);
                break;
            case 'i':
                r->u[i] = (uint64_t)trace_get_i(&f);
                break;
            case 't':
                r->u[i] = trace_get_ts(&f);
                break;
            case 's':
                r->s_len[i] = trace_get_s(&f, &r->s[i]);
                break;
            }
        }
        if (type == TRACE_STRING)
            trace_log_keep_string(log, r->u[0], r->s[1], r->s_len[1]);
    }
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
