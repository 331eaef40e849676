/* Per-thread event buffers (ring.h): the block pool in the buffer file's shared mapping
 * (trace/pool_file.h), thread creation on a first event with its slot there, the lock-free
 * thread list the writer walks, reclamation when threads exit (a pthread key destructor, then
 * ring_durable once the trace file holds their last events), and the consumer side. */
#include "agent/ring.h"
#include "agent/clock.h"
#include "trace/environment.h"
#include "trace/events.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct agent_thread *ring_self_tls __attribute__((tls_model("initial-exec")));

struct ring_pool ring_pool;
static int (*ring_helper)(void);
static void (*ring_block_hook)(void);
static _Atomic int ring_hook_soon;

void ring_hook_at_next_block(void)
{
    __atomic_store_n(&ring_hook_soon, 1, __ATOMIC_RELEASE);
}

void ring_set_helper(int (*help)(void))
{
    ring_helper = help;
}

void ring_set_block_hook(void (*hook)(void))
{
    ring_block_hook = hook;
}

static struct agent_thread *_Atomic ring_threads; /* newest first */
static _Atomic uint64_t ring_next_thread_idx = 1;
static _Atomic int ring_disabled;
static pthread_key_t ring_exit_key;
__thread unsigned agent_busy __attribute__((tls_model("initial-exec")));
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
    if (ring_pool.path[0]) /* made by a thread's first event: nobody will write its trace */
        unlink(ring_pool.path);
    ring_pool.path[0] = '\0';
}

/* ---- tagged stacks (free blocks, free slots): the head is tag << 32 | (index + 1) ---- */

static void stack_push(_Atomic uint64_t *head, _Atomic uint32_t *next_of, uint32_t item)
{
    uint64_t old = __atomic_load_n(head, __ATOMIC_RELAXED), new;
    do {
        __atomic_store_n(next_of, (uint32_t)old, __ATOMIC_RELAXED);
        new = ((old >> 32) + 1) << 32 | item;
    } while (!__atomic_compare_exchange_n(head, &old, new, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static uint32_t stack_pop(_Atomic uint64_t *head, _Atomic uint32_t *(*next_of)(uint32_t))
{
    uint64_t old = __atomic_load_n(head, __ATOMIC_ACQUIRE), new;
    do {
        uint32_t item = (uint32_t)old;
        if (!item)
            return 0;
        uint32_t next = __atomic_load_n(next_of(item), __ATOMIC_RELAXED);
        new = ((old >> 32) + 1) << 32 | next;
    } while (!__atomic_compare_exchange_n(head, &old, new, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return (uint32_t)old;
}

static _Atomic uint32_t *block_next_free(uint32_t block)
{
    return &ring_pool.meta[block - 1].free_next;
}

/* A free slot's link: its (unused) first_block field. */
static _Atomic uint32_t *slot_next_free(uint32_t slot)
{
    return &ring_pool.slots[slot - 1].first_block;
}

static void ring_pool_push(uint32_t block) /* block + 1 */
{
    __atomic_store_n(&ring_pool.meta[block - 1].next, 0, __ATOMIC_RELAXED);
    stack_push(&ring_pool.free_head, block_next_free(block), block);
}

static uint32_t ring_pool_pop(void) /* block + 1, 0 when empty */
{
    return stack_pop(&ring_pool.free_head, block_next_free);
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

/* The buffer file's disk space is allocated as the pool grows, RING_GROW_BLOCKS at a time (a
 * write through the mapping into a hole of a full disk would be a SIGBUS in the program);
 * the file is opened anew for it, never through a descriptor the program may have reused. */
#define RING_GROW_BLOCKS 64u
/* Slots for this many threads at once at most (a thread without one counts its events as
 * lost): their 512 KiB are allocated when the file is made. */
#define RING_MAX_SLOTS 4096u

static int ring_pool_back(uint64_t offset, uint64_t bytes)
{
    if (!ring_pool.path[0])
        return 0; /* anonymous memory */
    int fd = open(ring_pool.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = posix_fallocate(fd, (off_t)offset, (off_t)bytes); /* an errno, not errno */
    close(fd);
    return -rc;
}

/* Backs RING_GROW_BLOCKS more blocks and pushes them; 1 if blocks were added or another thread
 * is adding them, 0 when the pool has its full size or the disk refused. */
static int ring_pool_grow(void)
{
    uint32_t backed = __atomic_load_n(&ring_pool.backed, __ATOMIC_ACQUIRE);
    if (backed >= ring_pool.blocks)
        return 0;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&ring_pool.growing, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 1;
    backed = __atomic_load_n(&ring_pool.backed, __ATOMIC_ACQUIRE);
    uint32_t add = ring_pool.blocks - backed < RING_GROW_BLOCKS ? ring_pool.blocks - backed
                                                                 : RING_GROW_BLOCKS;
    int grown = add && ring_pool_back(ring_pool.header->block_offset +
                                          (uint64_t)backed * RING_BLOCK_BYTES,
                                      (uint64_t)add * RING_BLOCK_BYTES) == 0;
    if (grown) {
        for (uint32_t b = backed + add; b > backed; b--)
            ring_pool_push(b);
        __atomic_store_n(&ring_pool.backed, backed + add, __ATOMIC_RELEASE);
        __atomic_store_n(&ring_pool.header->backed, backed + add, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&ring_pool.growing, 0, __ATOMIC_RELEASE);
    return grown;
}

/* LANTERN_BUFFER_KB: the pool's size in KiB, default RING_DEFAULT_BUDGET_KB, at least two
 * blocks. */
static uint32_t ring_pool_blocks(void)
{
    uint64_t kb = RING_DEFAULT_BUDGET_KB;
    const char *env = getenv(trace_env_name(TRACE_ENV_BUFFER_KB));
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
    return (uint32_t)blocks;
}

/* Maps the pool: the file at path (created, O_EXCL) or, without one, anonymous memory; at
 * `at` when given (a fork child replaces its parent's mapping in place). The header, slots,
 * meta and the first blocks get their disk space now. 0, or mmap's -errno. */
static int ring_pool_map(const char *path, void *at)
{
    struct pool_header layout = {0};
    uint32_t blocks = ring_pool.blocks ? ring_pool.blocks : ring_pool_blocks();
    pool_layout(&layout, blocks, blocks < RING_MAX_SLOTS ? blocks : RING_MAX_SLOTS,
                RING_BLOCK_BYTES);
    int fd = -1;
    ring_pool.path[0] = '\0';
    if (path && strlen(path) < sizeof ring_pool.path) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 && ftruncate(fd, (off_t)layout.file_bytes) == 0)
            strcpy(ring_pool.path, path);
        else if (fd >= 0) {
            close(fd);
            unlink(path);
            fd = -1;
        }
    }
    int fixed = at ? MAP_FIXED : 0;
    void *map = fd >= 0 ? mmap(at, layout.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | fixed,
                               fd, 0)
                        : mmap(at, layout.file_bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        int err = errno;
        if (ring_pool.path[0])
            unlink(ring_pool.path);
        ring_pool.path[0] = '\0';
        return -err;
    }
    ring_pool.map = map;
    ring_pool.map_bytes = layout.file_bytes;
    ring_pool.blocks = blocks;
    uint32_t first = blocks < RING_GROW_BLOCKS ? blocks : RING_GROW_BLOCKS;
    if (ring_pool_back(0, layout.block_offset + (uint64_t)first * RING_BLOCK_BYTES) < 0) {
        /* no disk for even the first blocks: not durable, in memory */
        unlink(ring_pool.path);
        ring_pool.path[0] = '\0';
        munmap(map, layout.file_bytes);
        return ring_pool_map(NULL, at);
    }
    struct pool_header *h = map;
    *h = layout;
    memcpy(h->magic, POOL_FILE_MAGIC, sizeof h->magic);
    h->version = POOL_FILE_VERSION;
    h->pid = (uint32_t)getpid();
    h->next_string_id = 1; /* 0 is "no string" */
    ring_pool.header = h;
    ring_pool.slots = (struct pool_slot *)((uint8_t *)map + layout.slot_offset);
    ring_pool.meta = (struct pool_block_meta *)((uint8_t *)map + layout.meta_offset);
    ring_pool.base = (uint8_t *)map + layout.block_offset;
    __atomic_store_n(&ring_pool.free_head, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ring_pool.free_slots, 0, __ATOMIC_RELAXED);
    for (uint32_t s = layout.slots; s >= 1; s--)
        stack_push(&ring_pool.free_slots, slot_next_free(s), s);
    for (uint32_t b = first; b >= 1; b--)
        ring_pool_push(b);
    __atomic_store_n(&ring_pool.backed, first, __ATOMIC_RELAXED);
    h->backed = first;
    return 0;
}

static pthread_once_t ring_pool_once = PTHREAD_ONCE_INIT;
static int ring_pool_failed;

static void ring_pool_create(void)
{
    ring_pool.start_ns = clock_mono_ns();
    const char *dir = getenv(trace_env_name(TRACE_ENV_SESSION_DIR));
    char path[sizeof ring_pool.path];
    int named = dir && *dir &&
                snprintf(path, sizeof path, "%s/%d-%llu.lrb", dir, (int)getpid(),
                         (unsigned long long)ring_pool.start_ns) < (int)sizeof path;
    ring_pool_failed = ring_pool_map(named ? path : NULL, NULL) < 0;
}

int ring_pool_init(void)
{
    pthread_once(&ring_pool_once, ring_pool_create);
    return ring_pool_failed ? -ENOMEM : 0;
}

static uint8_t *ring_take_block(struct agent_thread *t);

/* The block switch may call functions -t osrt wraps (the helper's write, the pool's growth). */
uint8_t *ring_next_block(struct agent_thread *t)
{
    agent_busy++;
    uint8_t *block = ring_take_block(t);
    agent_busy--;
    return block;
}

static uint8_t *ring_take_block(struct agent_thread *t)
{
    if (t->inert)
        return NULL;
    if (!t->slot)
        return NULL; /* counted as lost by the caller */
    uint32_t block;
    uint64_t waiting_since = 0;
    while (!(block = ring_pool_pop())) {
        if (ring_pool_grow())
            continue;
        uint64_t now = clock_mono_ns();
        if (!waiting_since)
            waiting_since = now;
        if (!ring_helper || now - waiting_since >= RING_HELP_WAIT_NS || !ring_helper())
            return NULL; /* the current block stays: a smaller event may still fit */
    }
    if (t->block) {
        struct pool_block_meta *old = &ring_pool.meta[t->block - 1];
        old->end = t->pos;
        __atomic_store_n(&old->next, block, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&t->slot->first_block, block, __ATOMIC_RELEASE);
    }
    t->block = block;
    t->data = ring_pool.base + (uint64_t)(block - 1) * RING_BLOCK_BYTES;
    t->pos = 0;
    __atomic_store_n(&t->slot->head, pool_cursor(block, 0), __ATOMIC_RELEASE);
    int soon = __builtin_expect(__atomic_load_n(&ring_hook_soon, __ATOMIC_RELAXED), 0) &&
               __atomic_exchange_n(&ring_hook_soon, 0, __ATOMIC_ACQ_REL);
    if (++t->switches % RING_WAKE_BLOCKS == 0 || soon) {
        ring_wake_consumer();
        if (ring_block_hook)
            ring_block_hook();
    }
    return t->data;
}

/* ---- threads ---- */

/* A thread's state is mapped, not taken from malloc: a fork child of a multithreaded program
 * may find the allocator's lock held by a thread it does not have (AddressSanitizer's
 * allocator takes no fork precautions), and its first NVTX call must not wait for it. */
static size_t ring_thread_bytes(void)
{
    return (sizeof(struct agent_thread) + 4095) & ~(size_t)4095;
}

static struct agent_thread *ring_thread_map(void)
{
    void *p = mmap(NULL, ring_thread_bytes(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Frees a thread's state; its long strings too unless in a fork child (where free() may
 * wait for the lock of a thread that is not there: they stay, untouched copies). */
static void ring_free_thread(struct agent_thread *t, int strings)
{
    for (unsigned i = 0; strings && i < RING_STRING_SLOTS; i++)
        free(t->strings[i].heap);
    munmap(t, ring_thread_bytes());
}

static void ring_thread_exit(void *arg)
{
    struct agent_thread *t = arg;
    ring_self_tls = NULL;
    /* the name at the end: a thread often names itself after its first event */
    prctl(PR_GET_NAME, t->exit_name, 0, 0, 0);
    if (t->inert) {
        ring_free_thread(t, 1);
        return;
    }
    /* The writer drains what is left, then frees the thread (ring_durable). */
    __atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
}

static void ring_key_create(void)
{
    if (pthread_key_create(&ring_exit_key, ring_thread_exit) != 0)
        ring_exit_key = (pthread_key_t)-1;
}


/* A slot for a new thread, its identity written before it is marked used. */
static struct pool_slot *ring_slot_take(const struct agent_thread *t)
{
    uint32_t i = stack_pop(&ring_pool.free_slots, slot_next_free);
    if (!i)
        return NULL;
    struct pool_slot *s = &ring_pool.slots[i - 1];
    memset(s, 0, sizeof *s);
    s->thread_idx = t->thread_idx;
    s->first_ticks = t->first_ticks;
    s->os_tid = t->os_tid;
    memcpy(s->name, t->first_name, sizeof s->name);
    __atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
    return s;
}

static void ring_slot_give_back(struct pool_slot *s)
{
    __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
    uint32_t i = (uint32_t)(s - ring_pool.slots) + 1;
    stack_push(&ring_pool.free_slots, slot_next_free(i), i);
}

static struct agent_thread *ring_thread_make(uint64_t now_ticks);

/* The thread's state is mapped (and the pool may be made): calls -t osrt must not time. */
struct agent_thread *ring_thread_attach(uint64_t now_ticks)
{
    agent_busy++;
    struct agent_thread *t = ring_thread_make(now_ticks);
    agent_busy--;
    return t;
}

static struct agent_thread *ring_thread_make(uint64_t now_ticks)
{
    pthread_once(&ring_key_once, ring_key_create);
    struct agent_thread *t = ring_thread_map(); /* zeroed */
    if (!t)
        return NULL;
    t->pos = RING_BLOCK_BYTES; /* no block: the first event takes one */
    t->os_tid = ring_gettid();
    t->first_ticks = now_ticks;
    prctl(PR_GET_NAME, t->first_name, 0, 0, 0);
    t->inert = __atomic_load_n(&ring_disabled, __ATOMIC_ACQUIRE) || ring_pool_init() < 0;
    if (!t->inert) {
        t->thread_idx = __atomic_fetch_add(&ring_next_thread_idx, 1, __ATOMIC_RELAXED);
        t->slot = ring_slot_take(t);
        struct agent_thread *head = __atomic_load_n(&ring_threads, __ATOMIC_RELAXED);
        do
            t->next = head;
        while (!__atomic_compare_exchange_n(&ring_threads, &head, t, 1, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED));
    }
    if (ring_exit_key != (pthread_key_t)-1)
        pthread_setspecific(ring_exit_key, t);
    t->segment = __atomic_load_n(&ring_segment, __ATOMIC_RELAXED); /* a new stream */
    ring_self_tls = t;
    return t;
}

_Atomic uint32_t ring_segment;

void ring_thread_restart(struct agent_thread *t)
{
    uint32_t segment = __atomic_load_n(&ring_segment, __ATOMIC_RELAXED);
    if (t->inert || !t->slot) {
        t->segment = segment;
        return;
    }
    uint8_t *p = ring_reserve(t, 1);
    if (!p)
        return;
    *p++ = TRACE_EV_RESTART;
    for (unsigned i = 0; i < RING_STRING_SLOTS; i++)
        t->strings[i].key = 0;
    t->segment = segment;
    ring_commit(t, p, 0); /* the next event's delta counts from 0 */
}

/* ---- consumer ---- */

/* Where a cursor points: (block + 1, pos); cursor 0 is the stream's first byte. */
static void ring_cursor(const struct pool_slot *s, uint64_t cursor, uint32_t *block,
                        uint32_t *pos)
{
    *block = cursor ? (uint32_t)(cursor >> 32)
                    : __atomic_load_n(&s->first_block, __ATOMIC_ACQUIRE);
    *pos = (uint32_t)cursor;
}

uint32_t ring_consume(struct agent_thread *t,
                      void (*fn)(struct agent_thread *, const uint8_t *, size_t, void *),
                      void *ctx)
{
    struct pool_slot *s = t->slot;
    if (!s)
        return 0;
    uint64_t head = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
    uint32_t head_block = (uint32_t)(head >> 32), head_pos = (uint32_t)head, passed = 0;
    if (!head_block)
        return 0;
    uint32_t block, pos;
    ring_cursor(s, s->pending, &block, &pos);
    while (block != head_block) { /* the producer has left it: it is whole */
        struct pool_block_meta *m = &ring_pool.meta[block - 1];
        uint32_t next = __atomic_load_n(&m->next, __ATOMIC_ACQUIRE);
        const uint8_t *data = ring_pool.base + (uint64_t)(block - 1) * RING_BLOCK_BYTES;
        if (m->end > pos)
            fn(t, data + pos, m->end - pos, ctx);
        passed++;
        block = next;
        pos = 0;
        s->pending = pool_cursor(block, 0);
    }
    const uint8_t *data = ring_pool.base + (uint64_t)(head_block - 1) * RING_BLOCK_BYTES;
    if (head_pos > pos)
        fn(t, data + pos, head_pos - pos, ctx);
    s->pending = pool_cursor(head_block, head_pos);
    return passed;
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

/* The slot's durable cursor catches up with its pending one; the blocks it passes go back. */
static void ring_slot_durable(struct pool_slot *s)
{
    uint32_t from, from_pos, to, to_pos;
    ring_cursor(s, s->durable, &from, &from_pos);
    ring_cursor(s, s->pending, &to, &to_pos);
    while (from && from != to) {
        uint32_t next = __atomic_load_n(&ring_pool.meta[from - 1].next, __ATOMIC_ACQUIRE);
        ring_pool_push(from);
        from = next;
    }
    s->durable_dropped = s->pending_dropped;
    s->durable_announced = s->pending_announced;
    s->durable = s->pending;
}

void ring_durable(void)
{
    if (ring_pool.header)
        ring_pool.header->lost_durable = ring_pool.header->lost_pending;
    struct agent_thread *prev = NULL;
    for (struct agent_thread *t = __atomic_load_n(&ring_threads, __ATOMIC_ACQUIRE), *next; t;
         t = next) {
        next = t->next;
        struct pool_slot *s = t->slot;
        if (s)
            ring_slot_durable(s);
        if (!t->drained_exited) {
            prev = t;
            continue;
        }
        /* exited and drained: its last block and its slot go back */
        ring_unlink(prev, t);
        if (s) {
            uint32_t last, pos;
            ring_cursor(s, s->durable, &last, &pos);
            if (last)
                ring_pool_push(last);
            ring_slot_give_back(s);
        }
        ring_free_thread(t, 1);
    }
}

void ring_for_each_thread(void (*fn)(struct agent_thread *, int exited, void *), void *ctx)
{
    for (struct agent_thread *t = __atomic_load_n(&ring_threads, __ATOMIC_ACQUIRE); t;
         t = t->next) {
        if (t->drained_exited)
            continue;
        int exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
        fn(t, exited, ctx);
        t->drained_exited = exited;
    }
}

/* Only the forking thread exists in the child: it starts over with no block under its new
 * tid, in a pool of its own that replaces the parent's shared mapping in place; the other
 * threads' events are the parent's to write, and their owners are gone. */
void ring_fork_child(const char *path)
{
    struct agent_thread *self = ring_self_tls;
    for (struct agent_thread *t = __atomic_load_n(&ring_threads, __ATOMIC_ACQUIRE), *next; t;
         t = next) {
        next = t->next;
        if (t != self)
            ring_free_thread(t, 0);
    }
    __atomic_store_n(&ring_threads, NULL, __ATOMIC_RELAXED);
    if (ring_pool.header && ring_pool_map(path, ring_pool.map) < 0) {
        /* the parent's pool must not be written: record nothing */
        __atomic_store_n(&ring_pool.header, NULL, __ATOMIC_RELEASE);
        ring_disable();
    }
    if (!self)
        return;
    self->os_tid = ring_gettid();
    self->data = NULL;
    self->pos = RING_BLOCK_BYTES;
    self->block = 0;
    self->last_ticks = 0;
    self->name_written[0] = '\0';
    self->slot = NULL;
    for (unsigned i = 0; i < RING_STRING_SLOTS; i++)
        self->strings[i].key = 0;
    if (!self->inert && ring_pool.header) {
        self->slot = ring_slot_take(self);
        self->next = NULL;
        __atomic_store_n(&ring_threads, self, __ATOMIC_RELEASE);
    } else {
        self->inert = 1;
    }
}
