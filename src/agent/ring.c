/* Per-thread event buffers (ring.h): the block pool, thread creation on a first event, the
 * lock-free thread list the writer walks, reclamation when threads exit (a pthread key
 * destructor), and the consumer side. */
#include "agent/ring.h"

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

struct ring_pool ring_pool;
static pthread_once_t ring_pool_once = PTHREAD_ONCE_INIT;
static int ring_pool_failed;
static void (*ring_helper)(void);

void ring_set_helper(void (*help)(void))
{
    ring_helper = help;
}

static struct agent_thread *_Atomic ring_threads; /* newest first */
static _Atomic uint64_t ring_next_thread_idx = 1;
static _Atomic int ring_disabled;
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

uint32_t ring_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

void ring_disable(void)
{
    __atomic_store_n(&ring_disabled, 1, __ATOMIC_RELEASE);
}

/* ---- the pool: a stack of free blocks, its head tagged against ABA ---- */

static void ring_pool_push(uint32_t block) /* block + 1 */
{
    uint64_t old = __atomic_load_n(&ring_pool.free_head, __ATOMIC_RELAXED), new;
    do {
        __atomic_store_n(&ring_pool.meta[block - 1].free_next, (uint32_t)old, __ATOMIC_RELAXED);
        new = ((old >> 32) + 1) << 32 | block;
    } while (!__atomic_compare_exchange_n(&ring_pool.free_head, &old, new, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

static uint32_t ring_pool_pop(void) /* block + 1, 0 when empty */
{
    uint64_t old = __atomic_load_n(&ring_pool.free_head, __ATOMIC_ACQUIRE), new;
    do {
        uint32_t block = (uint32_t)old;
        if (!block)
            return 0;
        uint32_t next = __atomic_load_n(&ring_pool.meta[block - 1].free_next, __ATOMIC_RELAXED);
        new = ((old >> 32) + 1) << 32 | next;
    } while (!__atomic_compare_exchange_n(&ring_pool.free_head, &old, new, 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return (uint32_t)old;
}

/* Every block free again, the lowest first (fork child, start). */
static void ring_pool_fill(void)
{
    __atomic_store_n(&ring_pool.free_head, 0, __ATOMIC_RELAXED);
    for (uint32_t b = ring_pool.blocks; b >= 1; b--) {
        __atomic_store_n(&ring_pool.meta[b - 1].next, 0, __ATOMIC_RELAXED);
        ring_pool_push(b);
    }
}

int ring_pool_has_free_block(void)
{
    return (uint32_t)__atomic_load_n(&ring_pool.free_head, __ATOMIC_ACQUIRE) != 0;
}

uint32_t ring_pool_free_blocks(void)
{
    uint32_t n = 0;
    for (uint32_t b = (uint32_t)__atomic_load_n(&ring_pool.free_head, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&ring_pool.meta[b - 1].free_next, __ATOMIC_RELAXED))
        n++;
    return n;
}

/* LANTERN_BUFFER_KB: the pool's size in KiB, default RING_DEFAULT_BUDGET_KB, at least two
 * blocks. The memory is reserved, not committed: a block costs memory once it is written. */
static void ring_pool_create(void)
{
    uint64_t kb = RING_DEFAULT_BUDGET_KB;
    const char *env = getenv("LANTERN_BUFFER_KB");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v > 0)
            kb = v;
    }
    uint64_t blocks = kb * 1024 / RING_BLOCK_BYTES;
    if (blocks < 2)
        blocks = 2;
    if (blocks > (1u << 20)) /* 32 GiB */
        blocks = 1u << 20;
    void *base = mmap(NULL, blocks * RING_BLOCK_BYTES, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct ring_block_meta *meta = calloc(blocks, sizeof(*meta));
    if (base == MAP_FAILED || !meta) {
        if (base != MAP_FAILED)
            munmap(base, blocks * RING_BLOCK_BYTES);
        free(meta);
        ring_pool_failed = 1;
        return;
    }
    ring_pool.base = base;
    ring_pool.meta = meta;
    ring_pool.blocks = (uint32_t)blocks;
    ring_pool_fill();
}

int ring_pool_init(void)
{
    pthread_once(&ring_pool_once, ring_pool_create);
    return ring_pool_failed ? -1 : 0;
}

uint8_t *ring_next_block(struct agent_thread *t)
{
    if (t->inert)
        return NULL;
    uint32_t block = ring_pool_pop();
    if (!block && ring_helper) {
        ring_helper();
        block = ring_pool_pop();
    }
    if (!block)
        return NULL; /* the current block stays: a smaller event may still fit */
    if (t->block) {
        struct ring_block_meta *old = &ring_pool.meta[t->block - 1];
        old->end = t->pos;
        __atomic_store_n(&old->next, block, __ATOMIC_RELEASE);
    } else {
        t->first_block = block;
    }
    t->block = block;
    t->data = ring_pool.base + (uint64_t)(block - 1) * RING_BLOCK_BYTES;
    t->pos = 0;
    __atomic_store_n(&t->head, (uint64_t)block << 32, __ATOMIC_RELEASE);
    if (++t->switches % RING_WAKE_BLOCKS == 0)
        ring_wake_consumer();
    return t->data;
}

/* ---- threads ---- */

static void ring_thread_exit(void *arg)
{
    struct agent_thread *t = arg;
    ring_self_tls = NULL;
    /* the name at the end: a thread often names itself after its first event */
    prctl(PR_GET_NAME, t->exit_name, 0, 0, 0);
    if (t->inert) {
        free(t);
        return;
    }
    /* The writer drains what is left, then frees the thread (ring_for_each_thread). */
    __atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
}

static void ring_key_create(void)
{
    if (pthread_key_create(&ring_exit_key, ring_thread_exit) != 0)
        ring_exit_key = (pthread_key_t)-1;
}

static void ring_free_thread(struct agent_thread *t)
{
    for (unsigned i = 0; i < RING_STRING_SLOTS; i++)
        free(t->strings[i].heap);
    free(t);
}

struct agent_thread *ring_thread_attach(uint64_t now_ticks)
{
    pthread_once(&ring_key_once, ring_key_create);
    size_t bytes = (sizeof(struct agent_thread) + 63) & ~(size_t)63;
    struct agent_thread *t = aligned_alloc(_Alignof(struct agent_thread), bytes);
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    t->pos = RING_BLOCK_BYTES; /* no block: the first event takes one */
    t->os_tid = ring_gettid();
    t->first_ticks = now_ticks;
    prctl(PR_GET_NAME, t->first_name, 0, 0, 0);
    t->inert = __atomic_load_n(&ring_disabled, __ATOMIC_ACQUIRE) || ring_pool_init() < 0;
    if (!t->inert) {
        t->thread_idx = __atomic_fetch_add(&ring_next_thread_idx, 1, __ATOMIC_RELAXED);
        struct agent_thread *head = __atomic_load_n(&ring_threads, __ATOMIC_RELAXED);
        do
            t->next = head;
        while (!__atomic_compare_exchange_n(&ring_threads, &head, t, 1, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED));
    }
    if (ring_exit_key != (pthread_key_t)-1)
        pthread_setspecific(ring_exit_key, t);
    ring_self_tls = t;
    return t;
}

/* ---- consumer ---- */

uint32_t ring_consume(struct agent_thread *t,
                      void (*fn)(struct agent_thread *, const uint8_t *, size_t, void *),
                      void *ctx)
{
    uint64_t head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
    uint32_t head_block = (uint32_t)(head >> 32), head_pos = (uint32_t)head, freed = 0;
    if (!head_block)
        return 0;
    if (!t->read_block) {
        t->read_block = t->first_block;
        t->read_pos = 0;
    }
    while (t->read_block != head_block) { /* the producer has left it: it is whole */
        struct ring_block_meta *m = &ring_pool.meta[t->read_block - 1];
        uint32_t next = __atomic_load_n(&m->next, __ATOMIC_ACQUIRE);
        const uint8_t *data = ring_pool.base + (uint64_t)(t->read_block - 1) * RING_BLOCK_BYTES;
        if (m->end > t->read_pos)
            fn(t, data + t->read_pos, m->end - t->read_pos, ctx);
        __atomic_store_n(&m->next, 0, __ATOMIC_RELAXED);
        ring_pool_push(t->read_block);
        freed++;
        t->read_block = next;
        t->read_pos = 0;
    }
    const uint8_t *data = ring_pool.base + (uint64_t)(head_block - 1) * RING_BLOCK_BYTES;
    if (head_pos > t->read_pos)
        fn(t, data + t->read_pos, head_pos - t->read_pos, ctx);
    t->read_pos = head_pos;
    return freed;
}

/* An exited thread's last block goes back once it is drained. */
static void ring_release_blocks(struct agent_thread *t)
{
    if (t->read_block) {
        __atomic_store_n(&ring_pool.meta[t->read_block - 1].next, 0, __ATOMIC_RELAXED);
        ring_pool_push(t->read_block);
    }
    t->read_block = 0;
}

static void ring_unlink(struct agent_thread *prev, struct agent_thread *t)
{
    if (!prev) {
        struct agent_thread *expected = t;
        if (__atomic_compare_exchange_n(&ring_threads, &expected, t->next, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return;
        /* threads were added in front of it: find the one before it */
        for (prev = expected; prev->next != t; prev = prev->next)
            ;
    }
    prev->next = t->next;
}

void ring_for_each_thread(void (*fn)(struct agent_thread *, int exited, void *), void *ctx)
{
    struct agent_thread *prev = NULL;
    for (struct agent_thread *t = __atomic_load_n(&ring_threads, __ATOMIC_ACQUIRE), *next; t;
         t = next) {
        next = t->next;
        int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
        fn(t, exited, ctx);
        if (!exited) {
            prev = t;
            continue;
        }
        ring_unlink(prev, t);
        ring_release_blocks(t);
        ring_free_thread(t);
    }
}

/* Only the forking thread exists in the child: it starts over with no block under its new
 * tid; the other threads' events are the parent's to write, and their owners are gone. */
void ring_fork_child(void)
{
    struct agent_thread *self = ring_self_tls;
    for (struct agent_thread *t = __atomic_load_n(&ring_threads, __ATOMIC_ACQUIRE), *next; t;
         t = next) {
        next = t->next;
        if (t != self)
            ring_free_thread(t);
    }
    __atomic_store_n(&ring_threads, NULL, __ATOMIC_RELAXED);
    if (ring_pool.meta)
        ring_pool_fill();
    if (!self)
        return;
    if (!self->inert) {
        self->next = NULL;
        __atomic_store_n(&ring_threads, self, __ATOMIC_RELEASE);
    }
    self->os_tid = ring_gettid();
    self->data = NULL;
    self->pos = RING_BLOCK_BYTES;
    self->block = self->first_block = self->read_block = self->read_pos = 0;
    self->head = 0;
    self->last_ticks = 0;
    self->announced = 0;
    self->name_written[0] = '\0';
    self->dropped = 0;
    self->dropped_reported = 0;
    for (unsigned i = 0; i < RING_STRING_SLOTS; i++)
        self->strings[i].key = 0;
}
