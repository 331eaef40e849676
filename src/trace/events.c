/* The thread event stream's decoder (events.h): each event becomes the record of the same
 * meaning, encoded by that record's generated encoder into a scratch chunk, so that every
 * reader decodes it with the record's own decoder. */
#include "trace/events.h"
#include "trace/records.h"

#include <string.h>

void trace_events_begin(struct trace_events_reader *r, const uint8_t *events, size_t len,
                        uint64_t thread_idx, uint64_t *ticks, const struct trace_clock_line *clock)
{
    r->in = (struct trace_fields){.p = events, .end = events + len, .prev_ts = &r->zero_ts};
    r->thread_idx = thread_idx;
    r->ticks = ticks;
    r->clock = clock;
    r->restarted = 0;
}

/* The event attributes of PUSH, START and MARK. */
#define EVENT_ATTRIBUTES(in, op, rec)                                                              \
    do {                                                                                           \
        if ((op) & TRACE_EV_ATTRIBUTES) {                                                          \
            (rec).category = trace_get_u(in);                                                      \
            (rec).color = trace_get_u(in);                                                         \
            (rec).payload_type = trace_get_u(in);                                                  \
            (rec).payload = trace_get_u(in);                                                       \
        }                                                                                          \
    } while (0)

int trace_events_next(struct trace_events_reader *r, unsigned *type, struct trace_fields *fields)
{
    struct trace_fields *in = &r->in;
    if (in->p >= in->end || in->bad)
        return 0;
    unsigned op = *in->p++;
    unsigned kind = op & TRACE_EV_KIND_MASK;
    while (kind == TRACE_EV_RESTART) { /* --ring: a new segment's stream (docs/trace-format.md) */
        *r->ticks = 0;
        r->restarted = 1;
        if (in->p >= in->end)
            return 0;
        op = *in->p++;
        kind = op & TRACE_EV_KIND_MASK;
    }
    uint64_t ts = 0, domain = 0;
    if (kind != TRACE_EV_STRING && kind != TRACE_EV_PAYLOAD) {
        *r->ticks += (uint64_t)trace_get_i(in);
        ts = trace_clock_line_ns(r->clock, *r->ticks);
        if (op & TRACE_EV_DOMAIN)
            domain = trace_get_u(in);
    }
    struct trace_chunk_builder *b = &r->out;
    trace_chunk_begin(b, r->buf, sizeof r->buf, 0);
    uint64_t thread = r->thread_idx;
    int put = -1;
    switch (kind) {
    case TRACE_EV_PUSH: {
        struct trace_push e = {.thread_idx = thread, .ts = ts, .domain = domain};
        e.depth = trace_get_u(in);
        e.name = trace_get_u(in);
        EVENT_ATTRIBUTES(in, op, e);
        *type = TRACE_PUSH;
        put = trace_put_push(b, &e);
        break;
    }
    case TRACE_EV_POP: {
        struct trace_pop e = {.thread_idx = thread, .ts = ts, .domain = domain};
        e.depth = trace_get_u(in);
        *type = TRACE_POP;
        put = trace_put_pop(b, &e);
        break;
    }
    case TRACE_EV_START: {
        struct trace_start e = {.thread_idx = thread, .ts = ts, .domain = domain};
        e.range_id = trace_get_u(in);
        e.name = trace_get_u(in);
        EVENT_ATTRIBUTES(in, op, e);
        *type = TRACE_START;
        put = trace_put_start(b, &e);
        break;
    }
    case TRACE_EV_END: {
        struct trace_end e = {.thread_idx = thread, .ts = ts};
        e.range_id = trace_get_u(in);
        *type = TRACE_END;
        put = trace_put_end(b, &e);
        break;
    }
    case TRACE_EV_MARK: {
        struct trace_mark e = {.thread_idx = thread, .ts = ts, .domain = domain};
        e.name = trace_get_u(in);
        EVENT_ATTRIBUTES(in, op, e);
        *type = TRACE_MARK;
        put = trace_put_mark(b, &e);
        break;
    }
    case TRACE_EV_UNBALANCED_POP: {
        struct trace_unbalanced_pop e = {.thread_idx = thread, .ts = ts, .domain = domain};
        *type = TRACE_UNBALANCED_POP;
        put = trace_put_unbalanced_pop(b, &e);
        break;
    }
    case TRACE_EV_DOMAIN_DESTROY: {
        struct trace_domain_destroy e = {.ts = ts};
        e.domain = trace_get_u(in);
        *type = TRACE_DOMAIN_DESTROY;
        put = trace_put_domain_destroy(b, &e);
        break;
    }
    case TRACE_EV_THREAD_NAME: {
        struct trace_thread_name e;
        e.os_tid = trace_get_u(in);
        e.name = trace_get_u(in);
        *type = TRACE_THREAD_NAME;
        put = trace_put_thread_name(b, &e);
        break;
    }
    case TRACE_EV_NAME_RESOURCE: {
        struct trace_name_resource e;
        e.kind = trace_get_u(in);
        e.handle = trace_get_u(in);
        e.name = trace_get_u(in);
        *type = TRACE_NAME_RESOURCE;
        put = trace_put_name_resource(b, &e);
        break;
    }
    case TRACE_EV_CUDA_BACKTRACE: {
        struct trace_cuda_backtrace e;
        e.correlation = trace_get_u(in);
        e.stack = trace_get_u(in);
        *type = TRACE_CUDA_BACKTRACE;
        put = trace_put_cuda_backtrace(b, &e);
        break;
    }
    case TRACE_EV_STRING: {
        struct trace_string e = {.id = trace_get_u(in)};
        const uint8_t *bytes;
        size_t len = trace_get_s(in, &bytes);
        e.bytes = trace_bytes(bytes, len);
        *type = TRACE_STRING;
        put = len <= TRACE_EV_STRING_MAX ? trace_put_string(b, &e) : -1;
        break;
    }
    case TRACE_EV_PAYLOAD: {
        struct trace_payload e = {.thread_idx = thread};
        e.index = trace_get_u(in);
        e.count = trace_get_u(in);
        e.schema_id = trace_get_u(in);
        e.size = trace_get_u(in);
        const uint8_t *bytes;
        size_t len = trace_get_s(in, &bytes);
        e.bytes = trace_bytes(bytes, len);
        *type = TRACE_PAYLOAD;
        put = len <= TRACE_EV_PAYLOAD_BYTES ? trace_put_payload(b, &e) : -1;
        break;
    }
    case TRACE_EV_OSRT_CALL: {
        struct trace_osrt_call e = {.thread_idx = thread, .start = ts};
        *r->ticks += trace_get_u(in);
        e.end = trace_clock_line_ns(r->clock, *r->ticks);
        e.function = trace_get_u(in);
        e.ret = trace_get_i(in);
        e.error = trace_get_u(in);
        *type = TRACE_OSRT_CALL;
        put = trace_put_osrt_call(b, &e);
        break;
    }
    default:
        break;
    }
    if (put < 0 || in->bad || in->p > in->end) {
        in->bad = 1;
        return -1;
    }
    /* the encoder wrote the type (one byte below 128, else two) and a 3-byte length before
     * the body */
    r->zero_ts = 0;
    *fields = (struct trace_fields){.p = b->buf + TRACE_CHUNK_HEADER_SIZE + (*type < 128 ? 4 : 5),
                                    .end = b->buf + b->len,
                                    .prev_ts = &r->zero_ts};
    return 1;
}
