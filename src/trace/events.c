/* The thread event stream's decoder and descriptions, generated from events.def (see
 * events.h): each event is decoded straight into the struct of the record it stands for, which
 * the record's own trace_get_<name> hands to its reader (trace_fields.decoded). */
#include "trace/events.h"

#include <errno.h>
#include <string.h>

void trace_events_begin(struct trace_events_reader *r, const uint8_t *events, size_t len,
                        uint64_t thread_idx, uint64_t *ticks, const struct trace_clock_line *clock)
{
    r->in = (struct trace_fields){.p = events, .end = events + len};
    r->thread_idx = thread_idx;
    r->ticks = ticks;
    r->clock = clock;
    r->restarted = 0;
}

/* What an event's header gave: its time, its domain and the stream's thread. */
struct event_context {
    uint64_t thread, ts, domain;
};

/* ---- one decoder per event: its fields into its record's struct; the record type, or
 * -EBADMSG ---- */

#define CONTEXT(field, what) e->field = c->what;
#define GET_u(field) e->field = trace_get_u(in);
#define GET_i(field) e->field = trace_get_i(in);
#define GET_s(field)                                                                               \
    e->field.len = trace_get_s(in, &e->field.bytes);                                               \
    too_long |= e->field.len > bytes_max;
#define GET_d(field)                                                                               \
    *r->ticks += trace_get_u(in);                                                                  \
    e->field = trace_clock_line_ns(r->clock, *r->ticks);
#define GET_ATTRIBUTE(kind, field, doc) GET_##kind(field)
#define GET_a(field)                                                                               \
    if (op & TRACE_EV_ATTRIBUTES) {                                                                \
        TRACE_EV_ATTRIBUTE_FIELDS(GET_ATTRIBUTE)                                                   \
    }

#define C(field, what) CONTEXT(field, what)
#define E(kind, field, doc) GET_##kind(field)
#define EVENT(KIND, name, number, flags, bytes_max_, context, fields)                              \
    static int decode_##name(struct trace_events_reader *r, unsigned op,                           \
                             const struct event_context *c)                                        \
    {                                                                                              \
        struct trace_fields *in = &r->in;                                                          \
        struct trace_##name *e = &r->record.name;                                                  \
        int too_long = 0;                                                                          \
        const size_t bytes_max = (bytes_max_);                                                     \
        (void)bytes_max, (void)op, (void)c, (void)in, (void)too_long;                              \
        *e = (struct trace_##name){0};                                                             \
        context fields return too_long ? -EBADMSG : TRACE_##KIND;                                  \
    }
#include "trace/events.def"
#undef EVENT
#undef E
#undef C

typedef int (*event_decoder)(struct trace_events_reader *r, unsigned op,
                             const struct event_context *c);

/* By kind: its decoder and flags; no decoder: not an event with a record. */
static const struct {
    event_decoder decode;
    unsigned flags;
} kinds[TRACE_EV_KIND_MASK + 1] = {
#define EVENT(KIND, name, number, flags, ...) [number] = {decode_##name, flags},
#include "trace/events.def"
#undef EVENT
};

int trace_events_next(struct trace_events_reader *r, unsigned *type, struct trace_fields *fields)
{
    struct trace_fields *in = &r->in;
    if (in->p >= in->end || in->bad)
        return 0;
    unsigned op = *in->p++;
    while ((op & TRACE_EV_KIND_MASK) == TRACE_EV_RESTART) { /* --ring: a new segment's stream */
        *r->ticks = 0;
        r->restarted = 1;
        if (in->p >= in->end)
            return 0;
        op = *in->p++;
    }
    unsigned kind = op & TRACE_EV_KIND_MASK;
    struct event_context c = {.thread = r->thread_idx};
    /* an unknown kind is read as far as its dticks (they still move the thread's ticks) */
    if (kinds[kind].flags & TRACE_EV_TICKS || !kinds[kind].decode) {
        *r->ticks += (uint64_t)trace_get_i(in);
        c.ts = trace_clock_line_ns(r->clock, *r->ticks);
        if (op & TRACE_EV_DOMAIN)
            c.domain = trace_get_u(in);
    }
    int record = kinds[kind].decode ? kinds[kind].decode(r, op, &c) : -EBADMSG;
    if (record < 0 || in->bad || in->p > in->end) {
        in->bad = 1;
        return -EBADMSG;
    }
    *type = (unsigned)record;
    *fields = (struct trace_fields){.decoded = &r->record, .decoded_type = *type};
    return 1;
}

/* ---- the descriptions ---- */

#define C(field, what)
#define E(kind, field, doc) {#kind, #field, doc},
#define EVENT(KIND, name, number, flags, bytes_max, context, fields)                               \
    static const struct trace_field_spec event_fields_##name[] = {fields};
#include "trace/events.def"
#undef EVENT

/* kind, name, record, type, flags, doc, fields, field_count */
#define EVENT(KIND, name, number, flags, bytes_max, context, fields)                               \
    {TRACE_EV_##KIND,                                                                              \
     #KIND,                                                                                        \
     "TRACE_" #KIND,                                                                               \
     TRACE_##KIND,                                                                                 \
     flags,                                                                                        \
     "",                                                                                           \
     event_fields_##name,                                                                          \
     sizeof event_fields_##name / sizeof event_fields_##name[0]},
#define RESTART(KIND, number, doc) {TRACE_EV_##KIND, #KIND, NULL, 0, 0, doc, NULL, 0},
const struct trace_event_spec trace_event_specs[] = {
#include "trace/events.def"
};
#undef EVENT
#undef E
#undef C

const size_t trace_event_spec_count = sizeof trace_event_specs / sizeof trace_event_specs[0];
