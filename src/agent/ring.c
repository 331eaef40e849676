/* Per-thread rings: creation on a thread's first event, the lock-free registry the writer
 * walks, reclamation when threads exit (pthread key destructor), and the consumer side. */
#include "agent/ring.h"
#include "agent/clock.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct agent_thread *ring_self_tls __attribute__((tls_model("initial-exec")));

enum ring_slot_state { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_ACTIVE, SLOT_EXITED };

static struct {
    struct agent_thread *_Atomic thread[AGENT_MAX_RINGS];
    _Atomic int state[AGENT_MAX_RINGS];
} ring_registry;

static _Atomic uint64_t ring_next_thread_idx = 1;
static _Atomic uint64_t ring_size_bytes;
static _Atomic int ring_disabled;
static _Atomic uint64_t ring_drops_without_ring;
static pthread_key_t ring_exit_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;

/* ---- waking the consumer ---- */

static _Atomic uint32_t ring_wake_word;

void ring_wake_consumer(void)
{
    __atomic_fetch_add(&ring_wake_word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &ring_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

uint32_t ring_wake_count(void)
{
    return __atomic_load_n(&ring_wake_word, __ATOMIC_ACQUIRE);
}

void ring_consumer_wait(uint32_t seen, uint64_t timeout_ns)
{
    struct timespec period = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    syscall(SYS_futex, &ring_wake_word, FUTEX_WAIT_PRIVATE, seen, &period, NULL, 0);
}

void *ring_heap_copy(const void *bytes, size_t len)
{
    void *copy = malloc(len ? len : 1);
    if (copy)
        memcpy(copy, bytes, len);
    return copy;
}

uint32_t ring_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

void ring_disable(void)
{
    __atomic_store_n(&ring_disabled, 1, __ATOMIC_RELEASE);
}

uint64_t ring_unregistered_drops(void)
{
    return __atomic_load_n(&ring_drops_without_ring, __ATOMIC_RELAXED);
}

/* LANTERN_BUFFER_KB, rounded down to a power of two, 64 KiB .. 1 GiB (default 1 MiB).
 * A pure function of the environment, so racing threads store the same value. */
uint64_t ring_configured_size(void)
{
    uint64_t size = __atomic_load_n(&ring_size_bytes, __ATOMIC_RELAXED);
    if (size)
        return size;
    uint64_t kb = 1024;
    const char *env = getenv("LANTERN_BUFFER_KB");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v > 0)
            kb = v;
    }
    if (kb < 64)
        kb = 64;
    if (kb > (1u << 20))
        kb = 1u << 20;
    size = 1;
    while (size * 2 <= kb * 1024)
        size *= 2;
    __atomic_store_n(&ring_size_bytes, size, __ATOMIC_RELAXED);
    return size;
}

static void ring_thread_exit(void *arg)
{
    struct agent_thread *t = arg;
    ring_self_tls = NULL;
    /* the name at the end: a thread often names itself after its first event */
    prctl(PR_GET_NAME, t->exit_name, 0, 0, 0);
    if (t->slot < 0) {
        free(t);
        return;
    }
    /* The writer drains what is left, then frees the thread (ring_for_each_thread). */
    __atomic_store_n(&ring_registry.state[t->slot], SLOT_EXITED, __ATOMIC_RELEASE);
}

static void ring_key_create(void)
{
    if (pthread_key_create(&ring_exit_key, ring_thread_exit) != 0)
        ring_exit_key = (pthread_key_t)-1;
}

static int ring_claim_slot(void)
{
    for (unsigned i = 0; i < AGENT_MAX_RINGS; i++) {
        int expected = SLOT_FREE;
        if (__atomic_load_n(&ring_registry.state[i], __ATOMIC_RELAXED) == SLOT_FREE &&
            __atomic_compare_exchange_n(&ring_registry.state[i], &expected, SLOT_CLAIMED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

static void ring_free_thread(struct agent_thread *t)
{
    if (t->ring.data)
        munmap(t->ring.data, t->ring.size);
    free(t);
}

/* Gives the thread a ring if the agent records and the registry has room; otherwise the
 * thread keeps only its depth bookkeeping and drops (and counts) its records. */
static void ring_give_ring(struct agent_thread *t)
{
    t->slot = -1;
    if (__atomic_load_n(&ring_disabled, __ATOMIC_ACQUIRE))
        return;
    int slot = ring_claim_slot();
    if (slot < 0)
        return;
    uint64_t size = ring_configured_size();
    void *data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
        __atomic_store_n(&ring_registry.state[slot], SLOT_FREE, __ATOMIC_RELEASE);
        return;
    }
    t->ring.data = data;
    t->ring.size = size;
    t->ring.inline_max =
        size / 8 < RING_INLINE_MESSAGE_MAX ? (uint32_t)(size / 8) : RING_INLINE_MESSAGE_MAX;
    t->slot = slot;
    __atomic_store_n(&ring_registry.thread[slot], t, __ATOMIC_RELEASE);
    __atomic_store_n(&ring_registry.state[slot], SLOT_ACTIVE, __ATOMIC_RELEASE);
}

struct agent_thread *ring_thread_attach(uint64_t now_ticks)
{
    pthread_once(&ring_key_once, ring_key_create);
    /* the ring's head and tail sit on their own cache lines: the struct needs their alignment */
    size_t bytes = (sizeof(struct agent_thread) + 63) & ~(size_t)63;
    struct agent_thread *t = aligned_alloc(_Alignof(struct agent_thread), bytes);
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    t->thread_idx = __atomic_fetch_add(&ring_next_thread_idx, 1, __ATOMIC_RELAXED);
    t->os_tid = ring_gettid();
    t->first_ticks = now_ticks;
    prctl(PR_GET_NAME, t->first_name, 0, 0, 0);
    ring_give_ring(t);
    if (ring_exit_key != (pthread_key_t)-1)
        pthread_setspecific(ring_exit_key, t);
    ring_self_tls = t;
    return t;
}

/* Threads beyond the ring cap share one counter; an inert agent counts nothing, so that
 * its no-op calls never touch a shared cache line. */
void ring_count_unregistered_drop(void)
{
    if (!__atomic_load_n(&ring_disabled, __ATOMIC_RELAXED))
        __atomic_fetch_add(&ring_drops_without_ring, 1, __ATOMIC_RELAXED);
}

void ring_consume(struct ring *r,
                  void (*fn)(struct agent_thread *, const struct ring_record *, void *),
                  struct agent_thread *t, void *ctx)
{
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    while (tail != head) {
        const struct ring_record *rec = (const void *)(r->data + (tail & (r->size - 1)));
        if (rec->type)
            fn(t, rec, ctx);
        tail += rec->size;
    }
    __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
}

static void ring_free_heap_message(struct agent_thread *t, const struct ring_record *rec, void *ctx)
{
    (void)t;
    (void)ctx;
    if (ring_record_is_event(rec) && (rec->msg_kind & RING_MSG_ON_HEAP)) {
        void *heap;
        memcpy(&heap, ring_event_message((const struct ring_event *)rec), sizeof(heap));
        free(heap);
    }
}

void ring_discard(struct ring *r)
{
    if (r->size)
        ring_consume(r, ring_free_heap_message, NULL, NULL);
}

void ring_for_each_thread(void (*fn)(struct agent_thread *, int exited, void *), void *ctx)
{
    for (unsigned i = 0; i < AGENT_MAX_RINGS; i++) {
        int state = __atomic_load_n(&ring_registry.state[i], __ATOMIC_ACQUIRE);
        if (state != SLOT_ACTIVE && state != SLOT_EXITED)
            continue;
        struct agent_thread *t = __atomic_load_n(&ring_registry.thread[i], __ATOMIC_ACQUIRE);
        fn(t, state == SLOT_EXITED, ctx);
        if (state != SLOT_EXITED)
            continue;
        __atomic_store_n(&ring_registry.thread[i], NULL, __ATOMIC_RELAXED);
        ring_free_thread(t);
        __atomic_store_n(&ring_registry.state[i], SLOT_FREE, __ATOMIC_RELEASE);
    }
}

/* Only the forking thread exists in the child: its ring restarts empty under its new tid;
 * the other threads' rings hold records the parent writes, and their owners are gone. */
void ring_fork_child(void)
{
    struct agent_thread *self = ring_self_tls;
    for (unsigned i = 0; i < AGENT_MAX_RINGS; i++) {
        int state = __atomic_load_n(&ring_registry.state[i], __ATOMIC_ACQUIRE);
        struct agent_thread *t = __atomic_load_n(&ring_registry.thread[i], __ATOMIC_ACQUIRE);
        if ((state != SLOT_ACTIVE && state != SLOT_EXITED) || !t)
            continue;
        ring_discard(&t->ring);
        if (t == self)
            continue;
        __atomic_store_n(&ring_registry.thread[i], NULL, __ATOMIC_RELAXED);
        ring_free_thread(t);
        __atomic_store_n(&ring_registry.state[i], SLOT_FREE, __ATOMIC_RELEASE);
    }
    if (!self)
        return;
    self->os_tid = ring_gettid();
    self->announced = 0;
    self->name_written[0] = '\0';
    self->dropped = 0;
    self->dropped_reported = 0;
    self->ring.tail_seen = self->ring.head_private;
}
