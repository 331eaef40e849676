/* Per-thread single-producer/single-consumer byte rings and the lock-free registry of the
 * threads that own them. The producer (an application thread) reserves and commits records
 * without locks or allocation, and makes a syscall only to wake the writer when its ring
 * passes half full; the writer thread consumes every ring. The ring knows its records' layout,
 * not what they mean: the source that puts a record type in a ring translates it
 * (writer.h, WRITER_RING_TRANSLATOR). */
#ifndef LANTERN_AGENT_RING_H
#define LANTERN_AGENT_RING_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Records in a ring, sized so that a plain push + pop pair fills one 64-byte cache line:
 *   ring_record (24 bytes): every record; POP, END, UNBALANCED_POP, DOMAIN_DESTROY stop here
 *   ring_event (32 bytes): PUSH, START, MARK, THREAD_NAME, NAME_RESOURCE
 *   ring_attributes (16 bytes): only when flags has RING_HAS_ATTRIBUTES (color or payload)
 *   then the message: msg_len bytes padded to 8, or one pointer when msg_kind is
 *   RING_MSG_REGISTERED or has RING_MSG_ON_HEAP.
 * type is the TRACE_* record type; 0 marks padding up to the end of the ring. */
struct ring_record {
    uint8_t type;
    uint8_t msg_kind;     /* RING_MSG_* */
    uint8_t payload_type; /* NVTX_PAYLOAD_TYPE_*, 0: none */
    uint8_t flags;        /* RING_HAS_* */
    uint16_t domain;      /* domain id, or resource kind for TRACE_NAME_RESOURCE */
    uint16_t size;        /* bytes this record takes in the ring, a multiple of 8 */
    uint64_t ticks;
    uint64_t arg; /* depth, range id, os tid or resource handle */
};

struct ring_event {
    struct ring_record head;
    uint32_t msg_len; /* bytes of message, inline or at the pointer */
    uint32_t category;
};

struct ring_attributes {
    uint32_t color; /* ARGB, when RING_HAS_COLOR */
    uint32_t reserved;
    uint64_t payload; /* bits, when payload_type != 0 */
};

#define RING_HAS_ATTRIBUTES 0x1u
#define RING_HAS_COLOR 0x2u
/* Messages longer than this take one heap copy instead of ring space (also capped at 1/8
 * of the ring), so that record sizes fit in 16 bits and a huge name never fills a ring. */
#define RING_INLINE_MESSAGE_MAX 32768u

enum ring_msg_kind {
    RING_MSG_NONE = 0,
    RING_MSG_UTF8 = 1,       /* bytes as given (ASCII API: recorded byte-exact) */
    RING_MSG_WIDE = 2,       /* wchar_t units, converted to UTF-8 by the writer */
    RING_MSG_REGISTERED = 3, /* the pointer is a struct writer_registered_string */
    RING_MSG_ON_HEAP = 0x80, /* flag: the pointer is a malloc'd copy, freed by the consumer */
};

static inline int ring_record_is_event(const struct ring_record *rec)
{
    return rec->size >= sizeof(struct ring_event);
}

static inline const struct ring_attributes *ring_event_attributes(const struct ring_event *ev)
{
    return (ev->head.flags & RING_HAS_ATTRIBUTES) ? (const struct ring_attributes *)(ev + 1) : NULL;
}

/* Where the message (or its pointer) begins. */
static inline const void *ring_event_message(const struct ring_event *ev)
{
    return (const char *)(ev + 1) +
           ((ev->head.flags & RING_HAS_ATTRIBUTES) ? sizeof(struct ring_attributes) : 0);
}

static inline int ring_message_is_pointer(uint8_t msg_kind)
{
    return (msg_kind & RING_MSG_ON_HEAP) || msg_kind == RING_MSG_REGISTERED;
}

struct ring {
    /* producer side */
    uint64_t head_private; /* next write position, published into head on commit */
    uint64_t tail_seen;    /* the consumer's tail as last read: avoids a shared load */
    uint8_t *data;
    uint64_t size;       /* a power of two; 0 for a thread without a ring */
    uint32_t inline_max; /* longest message copied inline */
    uint64_t pending;    /* position of the reserved record */
    _Alignas(64) _Atomic uint64_t head;
    _Alignas(64) _Atomic uint64_t tail;
};

/* Maximum NVTX domains with their own per-thread stack (id 0 is the default domain). */
#define AGENT_MAX_DOMAINS 1024u
/* Rings in the registry: caps memory at AGENT_MAX_RINGS x LANTERN_BUFFER_KB. */
#define AGENT_MAX_RINGS 256u

/* An OS thread name: TASK_COMM_LEN, 15 bytes and a NUL (prctl PR_GET_NAME). */
#define RING_THREAD_NAME_BYTES 16

/* What the agent keeps per application thread. Fields above `depth` are written by the
 * owning thread; `dropped` is read by the writer; the writer's own fields follow. */
struct agent_thread {
    struct ring ring;
    uint64_t thread_idx; /* per process, 1.., never reused */
    uint32_t os_tid;
    int slot; /* registry slot, -1 when the thread has no ring */
    uint64_t first_ticks;
    uint64_t next_range;      /* per-thread range id counter */
    _Atomic uint64_t dropped; /* records dropped because the ring was full */
    /* the OS thread name (comm, 15 bytes + NUL), read by the thread itself on its first
     * event and as it exits (never on the hot path); the writer reads them */
    char first_name[RING_THREAD_NAME_BYTES];
    char exit_name[RING_THREAD_NAME_BYTES];
    /* writer-owned */
    uint64_t dropped_reported;
    int announced;                             /* TRACE_THREAD written to the current file */
    char name_written[RING_THREAD_NAME_BYTES]; /* last TRACE_THREAD_OS_NAME of this thread */
    int32_t depth[AGENT_MAX_DOMAINS];
};

/* ---- producer (the owning thread) ---- */

/* Reserves `bytes` (a multiple of 8, at most size/2) and returns where to write them, or
 * NULL when the ring is full: the caller drops the record and calls ring_count_drop(). */
static inline void *ring_reserve(struct ring *r, uint32_t bytes)
{
    uint64_t pos = r->head_private;
    uint64_t index = pos & (r->size - 1);
    uint64_t contiguous = r->size - index;
    uint64_t need = bytes <= contiguous ? bytes : contiguous + bytes;
    if (__builtin_expect(pos + need - r->tail_seen > r->size, 0)) {
        r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        if (pos + need - r->tail_seen > r->size || r->size == 0)
            return NULL;
    }
    if (bytes > contiguous) { /* pad to the end so records never wrap */
        struct ring_record *pad = (struct ring_record *)(r->data + index);
        pad->type = 0;
        pad->size = (uint16_t)contiguous; /* < bytes, so it fits */
        pos += contiguous;
        index = 0;
    }
    r->pending = pos;
    /* the writer thread read these lines last: ask for them ahead so the stores of the
     * next records do not wait for the other core (measured: bench_nvtx) */
    __builtin_prefetch(r->data + ((index + 512) & (r->size - 1)), 1, 3);
    return r->data + index;
}

/* Wakes the consumer (ring_consumer_wait); async-signal-safe (an atomic and a futex). */
void ring_wake_consumer(void);

/* Publishes the reserved record; wakes the consumer once when the ring passes half full. */
static inline void ring_commit(struct ring *r, uint32_t bytes)
{
    uint64_t old_used = r->head_private - r->tail_seen;
    uint64_t new_head = r->pending + bytes;
    r->head_private = new_head;
    __atomic_store_n(&r->head, new_head, __ATOMIC_RELEASE);
    uint64_t half = r->size / 2;
    if (__builtin_expect(old_used < half && new_head - r->tail_seen >= half, 0))
        ring_wake_consumer();
}

void ring_count_unregistered_drop(void);

/* Per-thread drop counter, written only by its thread (no atomic read-modify-write). */
static inline void ring_count_drop(struct agent_thread *t)
{
    if (t->slot < 0) {
        ring_count_unregistered_drop();
        return;
    }
    __atomic_store_n(&t->dropped, __atomic_load_n(&t->dropped, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

/* The calling thread's state, created on its first event (the only slow step), which
 * happened at now_ticks (the thread's first-seen time). NULL only when even a ring-less
 * thread record cannot be allocated. */
extern __thread struct agent_thread *ring_self_tls __attribute__((tls_model("initial-exec")));
struct agent_thread *ring_thread_attach(uint64_t now_ticks);

static inline struct agent_thread *ring_self(uint64_t now_ticks)
{
    struct agent_thread *t = ring_self_tls;
    return __builtin_expect(t != NULL, 1) ? t : ring_thread_attach(now_ticks);
}

/* ---- an event with a message (NVTX push/start/mark/names, launch backtraces) ---- */

/* What an event record carries besides its head: the message, and NVTX's attributes. */
struct ring_event_fields {
    const void *msg; /* bytes, or a registered string handle (RING_MSG_REGISTERED) */
    size_t msg_bytes;
    uint8_t msg_kind; /* RING_MSG_* */
    uint8_t has_color;
    uint8_t payload_type;
    uint32_t category;
    uint32_t color;
    uint64_t payload;
};

/* A malloc'd copy of a message too long for the ring (the consumer frees it); NULL if out of
 * memory. Off the inline path on purpose. */
void *ring_heap_copy(const void *bytes, size_t len);

/* Puts an event record in the calling thread's ring, or counts it dropped. A message over the
 * ring's inline limit takes one heap copy so that a huge name is recorded whole without
 * filling the ring. */
static inline __attribute__((always_inline)) void ring_put_event(struct agent_thread *t,
                                                                 uint8_t type, uint64_t ticks,
                                                                 uint32_t domain, uint64_t arg,
                                                                 const struct ring_event_fields *ev)
{
    struct ring *r = &t->ring;
    uint8_t kind = ev->msg_kind;
    const void *pointer = kind == RING_MSG_REGISTERED ? ev->msg : NULL;
    if (__builtin_expect(ev->msg_bytes > r->inline_max, 0)) {
        if (r->size == 0 || !(pointer = ring_heap_copy(ev->msg, ev->msg_bytes))) {
            ring_count_drop(t);
            return;
        }
        kind |= RING_MSG_ON_HEAP;
    }
    int has_attributes = ev->has_color || ev->payload_type;
    size_t message_bytes =
        ring_message_is_pointer(kind) ? sizeof(void *) : (ev->msg_bytes + 7) & ~(size_t)7;
    uint32_t size =
        (uint32_t)(sizeof(struct ring_event) +
                   (has_attributes ? sizeof(struct ring_attributes) : 0) + message_bytes);
    struct ring_event *rec = ring_reserve(r, size);
    if (__builtin_expect(!rec, 0)) {
        if (kind & RING_MSG_ON_HEAP)
            free((void *)pointer);
        ring_count_drop(t);
        return;
    }
    /* every byte is written: the ring holds stale bytes from its previous lap */
    *rec = (struct ring_event){
        .head = {.type = type,
                 .msg_kind = kind,
                 .payload_type = ev->payload_type,
                 .flags = (uint8_t)((has_attributes ? RING_HAS_ATTRIBUTES : 0) |
                                    (ev->has_color ? RING_HAS_COLOR : 0)),
                 .domain = (uint16_t)domain,
                 .size = (uint16_t)size,
                 .ticks = ticks,
                 .arg = arg},
        .msg_len = (uint32_t)ev->msg_bytes,
        .category = ev->category,
    };
    char *tail = (char *)(rec + 1);
    if (has_attributes) {
        *(struct ring_attributes *)tail =
            (struct ring_attributes){.color = ev->color, .payload = ev->payload};
        tail += sizeof(struct ring_attributes);
    }
    if (ring_message_is_pointer(kind))
        memcpy(tail, &pointer, sizeof(pointer));
    else if (ev->msg_bytes) /* an event without a message has msg NULL: memcpy(NULL) is UB */
        memcpy(tail, ev->msg, ev->msg_bytes);
    ring_commit(r, size);
}

/* Stops new rings from being created (the agent is inert). */
void ring_disable(void);
/* Sets the ring size from LANTERN_BUFFER_KB (idempotent, safe from any thread). */
uint64_t ring_configured_size(void);

/* ---- consumer (the writer, under the writer lock) ---- */

/* The consumer sleeps until a producer's ring passes half full, ring_wake_consumer() is
 * called, or timeout_ns pass; `seen` is ring_wake_count() as read before it drained, so a
 * wake in between is not missed. */
uint32_t ring_wake_count(void);
void ring_consumer_wait(uint32_t seen, uint64_t timeout_ns);

/* Calls fn for every record published so far, then releases them. */
void ring_consume(struct ring *r,
                  void (*fn)(struct agent_thread *, const struct ring_record *, void *),
                  struct agent_thread *t, void *ctx);
/* Frees the heap messages of unconsumed records and empties the ring. */
void ring_discard(struct ring *r);

/* Registry walk: fn sees every registered thread; threads that have exited are passed with
 * exited = 1 and are freed after fn returns (fn drains them). */
void ring_for_each_thread(void (*fn)(struct agent_thread *, int exited, void *), void *ctx);
/* Threads beyond AGENT_MAX_RINGS (no ring) count their drops here. */
uint64_t ring_unregistered_drops(void);

/* In a fork child: the calling thread survives (new os tid, empty ring); all other threads'
 * state is freed. */
void ring_fork_child(void);

uint32_t ring_gettid(void);

#endif
