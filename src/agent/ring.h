/* Per-thread event buffers: chains of fixed-size blocks taken from one per-process pool, and
 * the lock-free list of the threads that own them. An application thread encodes its events
 * (trace/events.h) straight into its current block and publishes how far it wrote with one
 * release store; the writer thread copies what is published into the file and gives drained
 * blocks back to the pool. No lock, allocation or system call on the producer's path: a block
 * switch is one compare-and-swap on the pool; the writer is woken (a futex) every
 * RING_WAKE_BLOCKS block switches of a thread. The pool is the agent's memory budget
 * (LANTERN_BUFFER_KB). When it is empty, the thread helps (ring_set_helper: it does the
 * writer's work if the writer is not at it, or waits a bounded time for blocks to come back),
 * so that a writer starved of CPU by many busy threads does not lose their events; only then
 * is an event dropped and counted. */
#ifndef LANTERN_AGENT_RING_H
#define LANTERN_AGENT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "trace/pool_file.h"

#define RING_BLOCK_BYTES (32u << 10)
/* The writer is woken after this many block switches of one thread (512 KiB of events). */
#define RING_WAKE_BLOCKS 16u
/* The pool: LANTERN_BUFFER_KB (KiB), default 256 MiB, at least 2 blocks. */
#define RING_DEFAULT_BUDGET_KB (256u << 10)

/* Maximum NVTX domains with their own per-thread stack (id 0 is the default domain). */
#define AGENT_MAX_DOMAINS 1024u

/* An OS thread name: TASK_COMM_LEN, 15 bytes and a NUL (prctl PR_GET_NAME). */
#define RING_THREAD_NAME_BYTES 16

/* A thread's cache of the strings it has defined in the current file (agent/strings.h). */
#define RING_STRING_SLOTS 64u
#define RING_STRING_INLINE 40u
struct ring_string_slot {
    uint64_t key;  /* 0: empty */
    uint64_t a, b; /* the first and last 8 bytes (thread_events.h) */
    uint64_t id;
    uint32_t len;
    uint32_t heap_cap; /* bytes at heap (strings longer than RING_STRING_INLINE) */
    char *heap;
    char bytes[RING_STRING_INLINE];
};

/* What the agent keeps per application thread. The producer's fields come first (written
 * only by the owning thread), then the writer's. What must outlive the process (the head of
 * the stream, its drops, how far the trace file holds it) is in the thread's slot of the
 * buffer file (trace/pool_file.h). */
struct agent_thread {
    /* producer */
    uint8_t *data;      /* the current block's bytes; NULL before the first */
    uint32_t pos;       /* bytes written in the current block */
    uint32_t block;     /* the current block + 1; 0: none */
    uint32_t switches;  /* block switches, to wake the writer every RING_WAKE_BLOCKS */
    uint64_t last_ticks; /* the previous event's ticks (events carry deltas) */
    uint64_t next_range; /* per-thread range id counter */
    uint32_t segment;    /* ring_segment when the stream last started over (--ring) */
    int inert;           /* the agent records nothing: events are not even counted */
    struct pool_slot *slot; /* NULL: no slot was free (its events are counted as lost) */
    int32_t depth[AGENT_MAX_DOMAINS];
    struct ring_string_slot strings[RING_STRING_SLOTS];
    /* read by the writer */
    _Alignas(64) _Atomic int exited;
    uint64_t thread_idx; /* per process, 1.., never reused */
    uint32_t os_tid;
    uint64_t first_ticks;
    /* the OS thread name (comm, 15 bytes + NUL), read by the thread itself on its first
     * event and as it exits (never on the hot path); the writer reads them */
    char first_name[RING_THREAD_NAME_BYTES];
    char exit_name[RING_THREAD_NAME_BYTES];
    struct agent_thread *next; /* the thread list; changed only by the writer once published */
    /* writer-owned */
    _Alignas(64) int drained_exited;           /* drained after it exited: nothing more comes */
    char name_written[RING_THREAD_NAME_BYTES]; /* last TRACE_THREAD_OS_NAME of this thread */
};

/* Non-zero while the calling thread runs the agent's own code that may call a function -t osrt
 * wraps (src/agent/osrt.c): the writer thread always, a program thread in the agent's start,
 * exit, fork and signal handlers, a block switch or under the writer lock. Such calls are
 * not the program's: osrt times none of them, and its own recording never nests. */
extern __thread unsigned agent_busy __attribute__((tls_model("initial-exec")));

/* ---- the pool ---- */

struct ring_pool {
    uint8_t *base; /* the blocks, in the buffer file's shared mapping (or anonymous memory) */
    struct pool_header *header;
    struct pool_slot *slots;
    struct pool_block_meta *meta;
    uint32_t blocks;
    void *map;
    size_t map_bytes;
    char path[4096]; /* the buffer file ("": anonymous memory, not durable) */
    uint64_t start_ns; /* CLOCK_MONOTONIC when the pool was made: the files' names */
    _Alignas(64) _Atomic uint64_t free_head; /* tag << 32 | (block + 1) */
    _Atomic uint64_t free_slots;             /* tag << 32 | (slot + 1) */
    _Atomic uint32_t backed;                 /* blocks with disk space (pushed on the free list) */
    _Atomic int growing;
};
extern struct ring_pool ring_pool;

/* ---- producer (the owning thread) ---- */

/* Called by a thread that found the pool empty, before it drops: the writer's drain, again
 * until a block is free or RING_HELP_WAIT_NS passed; it returns 0 when it cannot help. */
#define RING_HELP_WAIT_NS 2000000000u /* 2 s */
void ring_set_helper(int (*help)(void));
/* Called by a thread every RING_WAKE_BLOCKS block switches, with the wake (the writer starts
 * a fork child's thread: a short-lived child never makes one; its events are in its buffer
 * file all the same). */
void ring_set_block_hook(void (*hook)(void));
/* The hook runs at the next block switch of any thread too, once (a fork child's first event:
 * CPU sampling needs the child's writer thread to read its rings before they fill). */
void ring_hook_at_next_block(void);

/* Takes the next block (out of line): NULL when the pool is empty even after helping. */
uint8_t *ring_next_block(struct agent_thread *t);
void ring_wake_consumer(void);

/* Room for at most `max` bytes (max <= RING_BLOCK_BYTES) in the thread's current block, or
 * NULL: the caller drops the event and calls ring_count_drop(). */
static inline __attribute__((always_inline)) uint8_t *ring_reserve(struct agent_thread *t,
                                                                   uint32_t max)
{
    if (__builtin_expect(t->pos + max <= RING_BLOCK_BYTES, 1)) {
        /* the writer (and the kernel's copy) read these lines last: ask for them ahead so
         * that the stores of the next events do not wait for the other core */
        __builtin_prefetch(t->data + t->pos + 1024, 1, 3);
        return t->data + t->pos;
    }
    return ring_next_block(t);
}

/* Publishes the bytes written up to `end` (within what ring_reserve returned). */
static inline __attribute__((always_inline)) void ring_commit(struct agent_thread *t,
                                                              const uint8_t *end, uint64_t ticks)
{
    t->pos = (uint32_t)(end - t->data);
    t->last_ticks = ticks;
    __atomic_store_n(&t->slot->head, pool_cursor(t->block, t->pos), __ATOMIC_RELEASE);
}

/* Per-thread drop counter, written only by its thread (no atomic read-modify-write); a
 * thread without a slot counts in the file's header. */
static inline void ring_count_drop(struct agent_thread *t)
{
    if (t->inert)
        return;
    if (t->slot)
        __atomic_store_n(&t->slot->dropped,
                         __atomic_load_n(&t->slot->dropped, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(&ring_pool.header->lost, 1, __ATOMIC_RELAXED);
}

/* The calling thread's state, created on its first event (the only slow step), which
 * happened at now_ticks (the thread's first-seen time). NULL only when out of memory. */
extern __thread struct agent_thread *ring_self_tls __attribute__((tls_model("initial-exec")));
struct agent_thread *ring_thread_attach(uint64_t now_ticks);

/* --ring: the writer began segment file number ring_segment (trace/segments.h). A thread's
 * stream starts over at its first event in each: a RESTART event, then tick deltas from 0 and
 * its strings defined again, so that a segment's events read without the segments before it
 * (docs/trace-format.md). Out of line; a failed reservation tries again at the next event. */
extern _Atomic uint32_t ring_segment;
void ring_thread_restart(struct agent_thread *t);

static inline struct agent_thread *ring_self(uint64_t now_ticks)
{
    struct agent_thread *t = ring_self_tls;
    if (__builtin_expect(t == NULL, 0))
        return ring_thread_attach(now_ticks);
    if (__builtin_expect(t->segment != __atomic_load_n(&ring_segment, __ATOMIC_RELAXED), 0))
        ring_thread_restart(t);
    return t;
}

/* Stops new threads from recording (the agent is inert); the buffer file goes. */
void ring_disable(void);
/* Sets up the pool once per process, from whichever thread comes first (a thread may record
 * before the agent's start has finished): LANTERN_BUFFER_KB of blocks in the buffer file
 * <LANTERN_SESSION_DIR>/<pid>-<start_ns>.lrb (created, O_EXCL; where it cannot be made,
 * anonymous memory, whose events are lost if the process ends without its exit hooks).
 * 0, or -ENOMEM without memory. */
int ring_pool_init(void);

/* ---- consumer (the writer, under the writer lock) ---- */

/* The consumer sleeps until a producer wakes it (ring_wake_consumer) or timeout_ns pass;
 * `seen` is ring_wake_count() as read before it drained, so a wake in between is not missed. */
uint32_t ring_wake_count(void);
void ring_consumer_wait(uint32_t seen, uint64_t timeout_ns);

/* Calls fn for every published span of the thread's events, in order, moving the slot's
 * pending cursor past each span once fn has taken it; returns how many blocks it left
 * behind. The blocks go back to the pool only at ring_durable(). */
uint32_t ring_consume(struct agent_thread *t,
                      void (*fn)(struct agent_thread *, const uint8_t *, size_t, void *),
                      void *ctx);

/* The trace file now holds everything consumed so far (or it is counted as lost): the slots'
 * durable cursors catch up, the blocks behind them go back to the pool, and threads that
 * exited and are wholly drained are freed with their slots. */
void ring_durable(void);

/* Walks every thread that may still have events: exited = 1 for a thread that has exited
 * (fn drains its last events; it is not passed again). */
void ring_for_each_thread(void (*fn)(struct agent_thread *, int exited, void *), void *ctx);

/* Free blocks in the pool (a walk: for tests), and whether there is one (one load). */
uint32_t ring_pool_free_blocks(void);
int ring_pool_has_free_block(void);

/* In a fork child: the calling thread survives (new os tid, no block, fresh string cache)
 * and the pool starts over in a buffer file of its own at `path` (as ring_pool_open); every
 * other thread's state is freed. */
void ring_fork_child(const char *path);

uint32_t ring_gettid(void);

#endif
