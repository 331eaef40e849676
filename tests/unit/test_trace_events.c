/* Unit tests of the thread event stream (src/trace/events.def): the agent's generated encoders
 * (src/agent/thread_events.h) write every kind of event as the bytes pinned here, written out
 * by hand from docs/trace-format.md ("Thread event stream"), and the generated decoder reads
 * them back as the records they stand for, field by field; a malformed event stops the
 * stream. */
#include "agent/thread_events.h"
#include "harness.h"
#include "trace/events.h"

#include <errno.h>

/* One of each kind, in kind order, with a RESTART and an event after it. */
static size_t encode_every_kind(uint8_t *buf)
{
    uint8_t *p = buf;
    p = trace_ev_put_string(p, (struct trace_ev_string){1, {"ab", 2}});
    *p++ = TRACE_EV_PUSH | TRACE_EV_DOMAIN | TRACE_EV_ATTRIBUTES;
    p = trace_ev_i(p, 5);
    p = trace_ev_u(p, 3);
    p = trace_ev_put_push(p, (struct trace_ev_push){0, 1});
    p = trace_ev_put_attributes(p, (struct trace_ev_attributes){2, 0x100, 1, 300});
    p = trace_ev_put_payload(p, (struct trace_ev_payload){0, 1, 7, 2, {"xy", 2}});
    *p++ = TRACE_EV_POP | TRACE_EV_DOMAIN;
    p = trace_ev_i(p, 3);
    p = trace_ev_u(p, 3);
    p = trace_ev_put_pop(p, (struct trace_ev_pop){0});
    *p++ = TRACE_EV_START;
    p = trace_ev_i(p, 1);
    p = trace_ev_put_start(p, (struct trace_ev_start){300, 1});
    *p++ = TRACE_EV_END;
    p = trace_ev_i(p, -1);
    p = trace_ev_put_end(p, (struct trace_ev_end){300});
    *p++ = TRACE_EV_MARK;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_mark(p, (struct trace_ev_mark){1});
    *p++ = TRACE_EV_UNBALANCED_POP;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_unbalanced_pop(p, (struct trace_ev_unbalanced_pop){});
    *p++ = TRACE_EV_DOMAIN_DESTROY;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_domain_destroy(p, (struct trace_ev_domain_destroy){3});
    *p++ = TRACE_EV_THREAD_NAME;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_thread_name(p, (struct trace_ev_thread_name){1234, 1});
    *p++ = TRACE_EV_NAME_RESOURCE;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_name_resource(p, (struct trace_ev_name_resource){2, 0xABC, 1});
    *p++ = TRACE_EV_CUDA_BACKTRACE;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_cuda_backtrace(p, (struct trace_ev_cuda_backtrace){9, 1});
    *p++ = TRACE_EV_OSRT_CALL;
    p = trace_ev_i(p, 0);
    p = trace_ev_put_osrt_call(p, (struct trace_ev_osrt_call){100, 4, -1, 2});
    p = trace_ev_put_osrt_backtrace(p, (struct trace_ev_osrt_backtrace){1});
    *p++ = TRACE_EV_RESTART;
    *p++ = TRACE_EV_MARK;
    p = trace_ev_i(p, 7);
    p = trace_ev_put_mark(p, (struct trace_ev_mark){0});
    return (size_t)(p - buf);
}

static const uint8_t pinned[] = {
    0x0B, 0x01, 0x02, 'a',  'b',                                      /* STRING 1 "ab" */
    0x61, 0x0A, 0x03, 0x00, 0x01, 0x02, 0x80, 0x02, 0x01, 0xAC, 0x02, /* PUSH +5 d3 0 1 attrs */
    0x0C, 0x00, 0x01, 0x07, 0x02, 0x02, 'x',  'y',                    /* PAYLOAD 0 1 7 2 "xy" */
    0x22, 0x06, 0x03, 0x00,                                           /* POP +3 d3 0 */
    0x03, 0x02, 0xAC, 0x02, 0x01,                                     /* START +1 300 1 */
    0x04, 0x01, 0xAC, 0x02,                                           /* END -1 300 */
    0x05, 0x00, 0x01,                                                 /* MARK +0 1 */
    0x06, 0x00,                                                       /* UNBALANCED_POP +0 */
    0x07, 0x00, 0x03,                                                 /* DOMAIN_DESTROY +0 3 */
    0x08, 0x00, 0xD2, 0x09, 0x01,                                     /* THREAD_NAME +0 1234 1 */
    0x09, 0x00, 0x02, 0xBC, 0x15, 0x01, /* NAME_RESOURCE +0 2 0xABC 1 */
    0x0A, 0x00, 0x09, 0x01,             /* CUDA_BACKTRACE +0 9 1 */
    0x0D, 0x00, 0x64, 0x04, 0x01, 0x02, /* OSRT_CALL +0 100 4 -1 2 */
    0x0F, 0x01,                         /* OSRT_BACKTRACE 1 */
    0x0E,                               /* RESTART */
    0x05, 0x0E, 0x00,                   /* MARK +7 0 */
};

static void every_kind_is_written_as_pinned(void)
{
    uint8_t buf[256];
    size_t len = encode_every_kind(buf);
    for (size_t i = 0; i < len && i < sizeof pinned; i++)
        if (buf[i] != pinned[i]) {
            fprintf(stderr, "byte %zu: 0x%02X, pinned 0x%02X\n", i, buf[i], pinned[i]);
            ASSERT(0);
        }
    ASSERT_EQ(len, sizeof pinned);
}

/* The next event: its record type, decoded into fields. */
static unsigned next(struct trace_events_reader *r, struct trace_fields *f)
{
    unsigned type = 0;
    ASSERT_EQ(trace_events_next(r, &type, f), 1);
    return type;
}

static void the_nvtx_events_read_back_as_their_records(struct trace_events_reader *r)
{
    struct trace_fields f;
    struct trace_push push;
    ASSERT_EQ(next(r, &f), TRACE_PUSH);
    ASSERT_EQ(trace_get_push(&f, &push), 0);
    ASSERT(push.thread_idx == 4 && push.ts == 1005 && push.domain == 3 && push.depth == 0);
    ASSERT(push.name == 1 && push.category == 2 && push.color == 0x100);
    ASSERT(push.payload_type == 1 && push.payload == 300);
    struct trace_payload payload;
    ASSERT_EQ(next(r, &f), TRACE_PAYLOAD);
    ASSERT_EQ(trace_get_payload(&f, &payload), 0);
    ASSERT(payload.thread_idx == 4 && payload.index == 0 && payload.count == 1);
    ASSERT(payload.schema_id == 7 && payload.size == 2 && payload.bytes.len == 2);
    ASSERT(!memcmp(payload.bytes.bytes, "xy", 2));
    struct trace_pop pop;
    ASSERT_EQ(next(r, &f), TRACE_POP);
    ASSERT_EQ(trace_get_pop(&f, &pop), 0);
    ASSERT(pop.thread_idx == 4 && pop.ts == 1008 && pop.domain == 3 && pop.depth == 0);
    struct trace_start start;
    ASSERT_EQ(next(r, &f), TRACE_START);
    ASSERT_EQ(trace_get_start(&f, &start), 0);
    ASSERT(start.ts == 1009 && start.domain == 0 && start.range_id == 300 && start.name == 1);
    ASSERT(start.category == 0 && start.color == 0);
    struct trace_end end;
    ASSERT_EQ(next(r, &f), TRACE_END);
    ASSERT_EQ(trace_get_end(&f, &end), 0);
    ASSERT(end.thread_idx == 4 && end.ts == 1008 && end.range_id == 300);
    struct trace_mark mark;
    ASSERT_EQ(next(r, &f), TRACE_MARK);
    ASSERT_EQ(trace_get_mark(&f, &mark), 0);
    ASSERT(mark.ts == 1008 && mark.name == 1);
    struct trace_unbalanced_pop unbalanced;
    ASSERT_EQ(next(r, &f), TRACE_UNBALANCED_POP);
    ASSERT_EQ(trace_get_unbalanced_pop(&f, &unbalanced), 0);
    ASSERT(unbalanced.thread_idx == 4 && unbalanced.ts == 1008);
    struct trace_domain_destroy destroy;
    ASSERT_EQ(next(r, &f), TRACE_DOMAIN_DESTROY);
    ASSERT_EQ(trace_get_domain_destroy(&f, &destroy), 0);
    ASSERT(destroy.ts == 1008 && destroy.domain == 3);
}

static void every_kind_reads_back_as_its_record(void)
{
    uint8_t buf[256];
    size_t len = encode_every_kind(buf);
    uint64_t ticks = 1000;
    struct trace_events_reader r;
    trace_events_begin(&r, buf, len, 4, &ticks, NULL);
    struct trace_fields f;
    struct trace_string s;
    ASSERT_EQ(next(&r, &f), TRACE_STRING);
    ASSERT_EQ(trace_get_string(&f, &s), 0);
    ASSERT(s.id == 1 && s.bytes.len == 2 && !memcmp(s.bytes.bytes, "ab", 2));
    the_nvtx_events_read_back_as_their_records(&r);
    struct trace_thread_name tn;
    ASSERT_EQ(next(&r, &f), TRACE_THREAD_NAME);
    ASSERT_EQ(trace_get_thread_name(&f, &tn), 0);
    ASSERT(tn.os_tid == 1234 && tn.name == 1);
    struct trace_name_resource nr;
    ASSERT_EQ(next(&r, &f), TRACE_NAME_RESOURCE);
    ASSERT_EQ(trace_get_name_resource(&f, &nr), 0);
    ASSERT(nr.kind == 2 && nr.handle == 0xABC && nr.name == 1);
    struct trace_cuda_backtrace bt;
    ASSERT_EQ(next(&r, &f), TRACE_CUDA_BACKTRACE);
    ASSERT_EQ(trace_get_cuda_backtrace(&f, &bt), 0);
    ASSERT(bt.correlation == 9 && bt.stack == 1);
    struct trace_osrt_call call;
    ASSERT_EQ(next(&r, &f), TRACE_OSRT_CALL);
    ASSERT_EQ(trace_get_osrt_call(&f, &call), 0);
    ASSERT(call.thread_idx == 4 && call.start == 1008 && call.end == 1108);
    ASSERT(call.function == 4 && call.ret == -1 && call.error == 2);
    struct trace_osrt_backtrace backtrace;
    ASSERT_EQ(next(&r, &f), TRACE_OSRT_BACKTRACE);
    ASSERT_EQ(trace_get_osrt_backtrace(&f, &backtrace), 0);
    ASSERT(backtrace.thread_idx == 4 && backtrace.stack == 1);
    struct trace_mark mark;
    ASSERT_EQ(next(&r, &f), TRACE_MARK);
    ASSERT(r.restarted);
    ASSERT_EQ(trace_get_mark(&f, &mark), 0);
    ASSERT(mark.ts == 7 && mark.name == 0);
    unsigned type;
    ASSERT_EQ(trace_events_next(&r, &type, &f), 0);
}

/* Every kind of events.def is in the pinned stream above (a new kind needs its pin). */
static void every_kind_is_pinned(void)
{
    uint8_t buf[256];
    size_t len = encode_every_kind(buf);
    uint32_t seen = 0;
    uint64_t ticks = 0;
    struct trace_events_reader r;
    trace_events_begin(&r, buf, len, 1, &ticks, NULL);
    unsigned type;
    struct trace_fields f;
    while (trace_events_next(&r, &type, &f) == 1)
        for (size_t i = 0; i < trace_event_spec_count; i++)
            if (trace_event_specs[i].record && type == trace_event_specs[i].type)
                seen |= 1u << i;
    seen |= r.restarted ? 1u << (TRACE_EV_RESTART - 1) : 0;
    ASSERT_EQ(seen, (1u << trace_event_spec_count) - 1);
}

/* A record of the wrong type, a STRING longer than its maximum or an unknown kind: -1, and the
 * stream ends there; an unknown kind's dticks still count. */
static void a_malformed_event_stops_the_stream(void)
{
    uint8_t buf[TRACE_EV_STRING_MAX + 64], *p = buf;
    *p++ = TRACE_EV_MARK;
    p = trace_ev_i(p, 1);
    p = trace_ev_put_mark(p, (struct trace_ev_mark){0});
    uint64_t ticks = 0;
    struct trace_events_reader r;
    trace_events_begin(&r, buf, (size_t)(p - buf), 1, &ticks, NULL);
    struct trace_fields f;
    ASSERT_EQ(next(&r, &f), TRACE_MARK);
    struct trace_push wrong;
    ASSERT_EQ(trace_get_push(&f, &wrong), -EINVAL);
    ASSERT(f.bad);

    static char text[TRACE_EV_STRING_MAX + 1];
    p = trace_ev_put_string(buf, (struct trace_ev_string){1, {text, sizeof text}});
    trace_events_begin(&r, buf, (size_t)(p - buf), 1, &ticks, NULL);
    unsigned type;
    ASSERT_EQ(trace_events_next(&r, &type, &f), -EBADMSG);
    ASSERT_EQ(trace_events_next(&r, &type, &f), 0);

    p = buf;
    *p++ = 31;
    p = trace_ev_i(p, 9);
    *p++ = TRACE_EV_MARK;
    ticks = 0;
    trace_events_begin(&r, buf, (size_t)(p - buf), 1, &ticks, NULL);
    ASSERT_EQ(trace_events_next(&r, &type, &f), -EBADMSG);
    ASSERT_EQ(ticks, 9);
    ASSERT_EQ(trace_events_next(&r, &type, &f), 0);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"every_kind_is_written_as_pinned", every_kind_is_written_as_pinned},
        {"every_kind_reads_back_as_its_record", every_kind_reads_back_as_its_record},
        {"every_kind_is_pinned", every_kind_is_pinned},
        {"a_malformed_event_stops_the_stream", a_malformed_event_stops_the_stream},
        {0, 0},
    };
    return test_main(tests, argc, argv);
}
