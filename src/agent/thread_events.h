/* How a source puts an event in the calling thread's buffer (ring.h), encoded as the thread
 * event stream (trace/events.h): a message becomes a string id through the thread's cache of
 * the strings it has defined in this file, so a repeated name costs a compare, not a copy;
 * a new one is defined by a STRING event just before its first use. Inline: this is the
 * hot path of NVTX and of launch backtraces. */
#ifndef LANTERN_AGENT_THREAD_EVENTS_H
#define LANTERN_AGENT_THREAD_EVENTS_H

#include <stdint.h>
#include <string.h>

#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/events.h"

/* ---- the events' encoders, generated from trace/events.def ----
 * trace_ev_put_<name>(p, (struct trace_ev_<name>){fields...}) writes the event's fields in
 * events.def's order at p and returns their end. An event with ticks has its op, dticks and
 * [u domain] written before (thread_event_begin); one without (STRING, PAYLOAD) writes its op
 * here. NVTX's attributes are trace_ev_put_attributes, after the fields. */

struct trace_ev_bytes {
    const void *bytes;
    size_t len;
};

#define TRACE_EV_CTYPE_u uint64_t
#define TRACE_EV_CTYPE_i int64_t
#define TRACE_EV_CTYPE_d uint64_t
#define TRACE_EV_CTYPE_s struct trace_ev_bytes
#define TRACE_EV_MEMBER_a(field)
#define TRACE_EV_MEMBER_u(field) TRACE_EV_CTYPE_u field;
#define TRACE_EV_MEMBER_i(field) TRACE_EV_CTYPE_i field;
#define TRACE_EV_MEMBER_d(field) TRACE_EV_CTYPE_d field;
#define TRACE_EV_MEMBER_s(field) TRACE_EV_CTYPE_s field;
#define TRACE_EV_PUT_a(field)
#define TRACE_EV_PUT_u(field) p = trace_ev_u(p, e.field);
#define TRACE_EV_PUT_i(field) p = trace_ev_i(p, e.field);
#define TRACE_EV_PUT_d(field) p = trace_ev_u(p, e.field);
#define TRACE_EV_PUT_s(field)                                                                      \
    p = trace_ev_u(p, e.field.len);                                                                \
    if (e.field.len)                                                                               \
        memcpy(p, e.field.bytes, e.field.len);                                                     \
    p += e.field.len;

#define TRACE_EV_ATTRIBUTE_MEMBER(kind, field, doc) TRACE_EV_MEMBER_##kind(field)
#define TRACE_EV_ATTRIBUTE_PUT(kind, field, doc) TRACE_EV_PUT_##kind(field)
struct trace_ev_attributes {
    TRACE_EV_ATTRIBUTE_FIELDS(TRACE_EV_ATTRIBUTE_MEMBER)
};
static inline __attribute__((always_inline)) uint8_t *
trace_ev_put_attributes(uint8_t *p, struct trace_ev_attributes e)
{
    TRACE_EV_ATTRIBUTE_FIELDS(TRACE_EV_ATTRIBUTE_PUT)
    return p;
}

#define C(field, what)
#define E(kind, field, doc) TRACE_EV_MEMBER_##kind(field)
#define EVENT(KIND, name, number, flags, bytes_max, context, fields)                               \
    struct trace_ev_##name {                                                                       \
        fields                                                                                     \
    };
#include "trace/events.def"
#undef EVENT
#undef E

#define E(kind, field, doc) TRACE_EV_PUT_##kind(field)
#define EVENT(KIND, name, number, flags, bytes_max, context, fields)                               \
    static inline __attribute__((always_inline))                                                   \
    uint8_t *trace_ev_put_##name(uint8_t *p, struct trace_ev_##name e)                             \
    {                                                                                              \
        (void)e;                                                                                   \
        if (!((flags)&TRACE_EV_TICKS))                                                             \
            *p++ = TRACE_EV_##KIND;                                                                \
        fields return p;                                                                           \
    }
#include "trace/events.def"
#undef EVENT
#undef E
#undef C

/* An event's message: UTF-8 bytes to resolve, or a string id already known. */
struct thread_message {
    const char *bytes; /* NULL: id (0: no message) */
    size_t len;
    uint64_t id;
    struct ring_string_slot *define; /* set by thread_message_resolve: write STRING first */
};

/* A string's first and last 8 bytes (for shorter ones, all its bytes): up to 16 bytes, they
 * are the whole string, so such a string is compared by these two words alone. */
struct thread_string_words {
    uint64_t a, b;
};

static inline struct thread_string_words thread_string_words(const char *s, size_t len)
{
    struct thread_string_words w = {0, 0};
    if (len >= 8) {
        memcpy(&w.a, s, 8);
        memcpy(&w.b, s + len - 8, 8);
    } else if (len >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + len - 4, 4);
        w.a = (uint64_t)x << 32 | y;
    } else {
        for (size_t i = 0; i < len; i++)
            w.a = w.a << 8 | (uint8_t)s[i];
    }
    return w;
}

/* The cache key: the words and the length, mixed (never 0). */
static inline uint64_t thread_string_key(struct thread_string_words w, size_t len)
{
    uint64_t h = (w.a ^ (w.b >> 7) ^ (uint64_t)len << 56) * 0x9E3779B97F4A7C15u;
    h ^= (w.b * 0xC2B2AE3D27D4EB4Fu) ^ (h >> 31);
    return h | 1;
}

/* A miss: the string gets a new id and the slot remembers it (out of line). */
struct ring_string_slot *thread_string_define(struct ring_string_slot *slot, uint64_t key,
                                              struct thread_string_words w, const char *s,
                                              size_t len);
/* A text known by a 64-bit hash of its bytes (a backtrace, osrt.c): its id from the thread's
 * cache, matched by hash and length alone and never copied, so nothing is allocated (it may run
 * in a signal handler). Its keys are even, thread_string_key's odd: no name ever matches one.
 * m->define is set when the text is new: thread_event_begin* writes its STRING. */
void thread_message_resolve_hashed(struct agent_thread *t, struct thread_message *m,
                                   uint64_t hash);
/* A message too long for a STRING event: interned by the writer, under its lock. */
uint64_t thread_string_long(const char *s, size_t len);

static inline __attribute__((always_inline)) void thread_message_resolve(struct agent_thread *t,
                                                                         struct thread_message *m)
{
    m->define = NULL;
    if (!m->bytes)
        return;
    if (__builtin_expect(m->len > TRACE_EV_STRING_MAX, 0)) {
        m->id = thread_string_long(m->bytes, m->len);
        return;
    }
    struct thread_string_words w = thread_string_words(m->bytes, m->len);
    uint64_t key = thread_string_key(w, m->len);
    struct ring_string_slot *slot = &t->strings[(key * 0xD6E8FEB86659FD93u) >> 58];
    if (__builtin_expect(slot->key == key && slot->len == m->len, 1) &&
        (m->len <= 16 ? slot->a == w.a && slot->b == w.b
                      : memcmp(m->len <= RING_STRING_INLINE ? slot->bytes : slot->heap, m->bytes,
                               m->len) == 0)) {
        m->id = slot->id;
        return;
    }
    m->define = thread_string_define(slot, key, w, m->bytes, m->len);
    m->id = m->define->id;
}

/* Reserves room for the event, its message's STRING and `extra` bytes the caller writes after
 * the event's fields (its PAYLOAD events), writes the STRING, the op and the tick delta;
 * returns where the event's fields go, or NULL when it was dropped (counted). */
static inline __attribute__((always_inline)) uint8_t *
thread_event_begin_extra(struct agent_thread *t, unsigned op, uint64_t ticks,
                         struct thread_message *m, uint32_t extra)
{
    uint32_t string_bytes = m->define ? (uint32_t)m->len + 24 : 0;
    uint8_t *p = ring_reserve(t, TRACE_EV_MAX_FIXED + string_bytes + extra);
    if (__builtin_expect(!p, 0)) {
        if (m->define) /* its STRING is not written: forget it */
            m->define->key = 0;
        ring_count_drop(t);
        return NULL;
    }
    if (m->define)
        p = trace_ev_put_string(p, (struct trace_ev_string){m->id, {m->bytes, m->len}});
    *p++ = (uint8_t)op;
    return trace_ev_i(p, (int64_t)(ticks - t->last_ticks));
}

static inline __attribute__((always_inline)) uint8_t *
thread_event_begin(struct agent_thread *t, unsigned op, uint64_t ticks, struct thread_message *m)
{
    return thread_event_begin_extra(t, op, ticks, m, 0);
}

#endif
