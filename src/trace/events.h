/* The per-thread event stream: what the agent's application threads encode straight into
 * their buffers (src/agent/ring.h), what the writer copies byte for byte into
 * TRACE_THREAD_EVENTS records, and what the importer reads back, event by event, as the trace
 * record of the same meaning (records.def). Encoding at the source keeps the writer a byte
 * mover: it never decodes, hashes or re-encodes an event (docs/trace-format.md, "Thread event
 * stream"). Every event is one row of events.def; the decoder (events.c) and the agent's
 * encoders (src/agent/thread_events.h) are generated from it.
 *
 * An event: one op byte, then varints (the codec's u and zigzag i):
 *   op & TRACE_EV_KIND_MASK   the kind (events.def)
 *   op & TRACE_EV_DOMAIN      a u domain follows the tick delta (absent: domain 0)
 *   op & TRACE_EV_ATTRIBUTES  u category, u color + 1, u payload_type, u payload end the event
 * Every kind with ticks starts with i dticks: the TSC (or ns) delta from the thread's previous
 * event in this file, the first from 0. Names are string ids: 0 none, else defined before
 * their first use by a STRING event of the same stream or a TRACE_STRING record. PAYLOAD
 * events follow the PUSH, POP, START, END or MARK whose extended payloads they carry, written
 * with it (one reservation, one commit): nothing comes between them. */
#ifndef LANTERN_TRACE_EVENTS_H
#define LANTERN_TRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

/* events.def's flags */
#define TRACE_EV_TICKS 1u
#define TRACE_EV_HAS_DOMAIN 2u

enum trace_event_kind {
#define EVENT(KIND, name, number, ...) TRACE_EV_##KIND = number,
#define RESTART(KIND, number, doc) TRACE_EV_##KIND = number,
#include "trace/events.def"
#undef EVENT
};

#define TRACE_EV_KIND_MASK 0x1Fu
#define TRACE_EV_DOMAIN 0x20u
#define TRACE_EV_ATTRIBUTES 0x40u
/* The most bytes an event takes besides a STRING's bytes: op + 9 varints of 10 bytes. */
#define TRACE_EV_MAX_FIXED 96u
/* The longest string a STRING event carries; longer ones are TRACE_STRING records. */
#define TRACE_EV_STRING_MAX 8192u
/* Extended payloads: the bytes copied for one event's payloads together, and how many of its
 * payloads are recorded (NCCL gives one of 8 to 32 bytes). A cut is visible: a PAYLOAD's
 * length below its size, its count above the PAYLOAD events that follow. */
#define TRACE_EV_PAYLOAD_BYTES 256u
#define TRACE_EV_PAYLOADS_MAX 8u
/* The most bytes an event's PAYLOAD events take: op + 5 varints each, and the bytes. */
#define TRACE_EV_PAYLOADS_RESERVE (TRACE_EV_PAYLOADS_MAX * 51u + TRACE_EV_PAYLOAD_BYTES)

/* ---- encoding (inline: the agent's hot path) ---- */

static inline uint8_t *trace_ev_u(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *trace_ev_i(uint8_t *p, int64_t v)
{
    return trace_ev_u(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* ---- decoding ---- */

/* Ticks -> CLOCK_MONOTONIC ns, from the file's latest TRACE_CLOCK record (the agent's own
 * conversion, src/agent/clock.h); set = 0: the ticks are ns already. */
struct trace_clock_line {
    uint64_t tsc, ns;
    double ns_per_tick;
    int set;
};

static inline uint64_t trace_clock_line_ns(const struct trace_clock_line *c, uint64_t ticks)
{
    if (!c || !c->set)
        return ticks;
    double delta = (double)(int64_t)(ticks - c->tsc) * c->ns_per_tick;
    if (!(delta > -9.2e18 && delta < 9.2e18)) /* a damaged file: no undefined conversion */
        delta = 0;
    return c->ns + (uint64_t)(int64_t)delta;
}

/* The record an event stands for, decoded into its records.h struct. */
union trace_event_record {
#define EVENT(KIND, name, ...) struct trace_##name name;
#include "trace/events.def"
#undef EVENT
};

/* Reads one TRACE_THREAD_EVENTS body's events back as the trace records they stand for. */
struct trace_events_reader {
    struct trace_fields in;
    uint64_t thread_idx;
    uint64_t *ticks; /* the thread's running ticks, kept by the caller across records */
    const struct trace_clock_line *clock;
    int restarted; /* a RESTART event was read (trace_events_next reads the event after it) */
    union trace_event_record record;
};

void trace_events_begin(struct trace_events_reader *r, const uint8_t *events, size_t len,
                        uint64_t thread_idx, uint64_t *ticks, const struct trace_clock_line *clock);
/* 1: the next event is the record *type, already decoded: *fields hold no bytes, only the
 * record (trace_fields.decoded), which that record's trace_get_<name> copies out (its ts
 * absolute); 0: the end; -EBADMSG: a malformed event (the rest is skipped). */
int trace_events_next(struct trace_events_reader *r, unsigned *type, struct trace_fields *fields);

/* ---- the events described, for the docs check ---- */

struct trace_event_spec {
    unsigned kind;
    const char *name;   /* "PUSH" */
    const char *record; /* "TRACE_PUSH"; NULL: none (RESTART) */
    unsigned type;      /* TRACE_PUSH */
    unsigned flags;
    const char *doc; /* an event that is no record: what it does */
    const struct trace_field_spec *fields;
    size_t field_count;
};

extern const struct trace_event_spec trace_event_specs[];
extern const size_t trace_event_spec_count;

#endif
