/* Unit tests of the agent's per-thread buffers (src/agent/ring.[ch]) on their own, over a
 * pool of RING_TEST_BLOCKS blocks: events come back in order and intact across many blocks
 * at every size, an empty pool refuses events until the consumer gives blocks back, the
 * consumer is woken once per RING_WAKE_BLOCKS block switches, a producer and a consumer
 * thread lose nothing, and 1024 threads that come and go (far more than the pool has
 * blocks at once) lose nothing and leave the pool whole. */
#include "agent/ring.h"
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RING_TEST_BLOCKS 8u

/* An event of `bytes` (>= 10): its sequence number, its size, then bytes derived from both. */
static int put(struct agent_thread *t, uint64_t seq, uint32_t bytes)
{
    uint8_t *p = ring_reserve(t, bytes);
    if (!p)
        return 0;
    memcpy(p, &seq, 8);
    p[8] = (uint8_t)bytes;
    p[9] = (uint8_t)(bytes >> 8);
    for (uint32_t i = 10; i < bytes; i++)
        p[i] = (uint8_t)(seq * 31 + i);
    ring_commit(t, p + bytes, seq);
    return 1;
}

static uint32_t size_of(uint64_t seq)
{
    return 10 + (uint32_t)(seq * 7919 % 600); /* 10 .. 609 bytes: block ends land everywhere */
}

struct expect {
    struct agent_thread *thread; /* NULL: any thread (then next_seq is per span) */
    uint64_t next_seq;
    uint64_t events, bad;
};

/* A span holds whole events: walk them. */
static void check(struct agent_thread *t, const uint8_t *p, size_t len, void *ctx)
{
    struct expect *e = ctx;
    const uint8_t *end = p + len;
    while (p < end) {
        uint64_t seq;
        memcpy(&seq, p, 8);
        uint32_t bytes = p[8] | (uint32_t)p[9] << 8;
        if (bytes < 10 || bytes > (size_t)(end - p)) {
            e->bad++;
            return;
        }
        if (t == e->thread && seq != e->next_seq)
            e->bad++;
        if (bytes != size_of(seq))
            e->bad++;
        for (uint32_t i = 10; i < bytes; i++)
            if (p[i] != (uint8_t)(seq * 31 + i))
                e->bad++;
        if (t == e->thread)
            e->next_seq = seq + 1;
        e->events++;
        p += bytes;
    }
}

/* The consumer's side as the writer does it: the spans, then (the trace file holding them)
 * the blocks go back. */
static void consume_self(struct expect *e)
{
    ring_consume(e->thread, check, e);
    ring_durable();
}

static struct agent_thread *self(void)
{
    return ring_self(0);
}

static void test_events_come_back_in_order_across_many_blocks(void)
{
    struct expect e = {self(), 0, 0, 0};
    uint64_t seq = 0;
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 300; i++, seq++)
            ASSERT(put(e.thread, seq, size_of(seq)));
        consume_self(&e);
    }
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, seq);
    ASSERT_EQ(e.events, seq);
    /* every block but the one being written is back */
    ASSERT_EQ(ring_pool_free_blocks(), RING_TEST_BLOCKS - 1);
}

static void test_empty_pool_refuses_until_consumed(void)
{
    struct expect e = {self(), 0, 0, 0};
    consume_self(&e);
    e.next_seq = 1u << 30;
    uint64_t seq = e.next_seq, bytes = 0;
    while (put(e.thread, seq, size_of(seq)))
        bytes += size_of(seq++);
    /* the whole pool (less what each block's end could not fit) holds events */
    ASSERT(bytes > (RING_TEST_BLOCKS - 1) * (uint64_t)(RING_BLOCK_BYTES - 610));
    ASSERT(bytes <= RING_TEST_BLOCKS * (uint64_t)RING_BLOCK_BYTES);
    ASSERT_EQ(ring_pool_free_blocks(), 0);
    ASSERT(!put(e.thread, seq, size_of(seq)));
    consume_self(&e);
    ASSERT(put(e.thread, seq, size_of(seq)));
    seq++;
    consume_self(&e);
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, seq);
}

static void test_consumer_woken_once_per_wake_blocks_switches(void)
{
    struct expect e = {self(), 0, 0, 0};
    consume_self(&e);
    e.next_seq = 1u << 31;
    uint64_t seq = e.next_seq;
    uint32_t switches = e.thread->switches, before = ring_wake_count();
    while (e.thread->switches - switches < 3 * RING_WAKE_BLOCKS) {
        ASSERT(put(e.thread, seq, size_of(seq)));
        seq++;
        consume_self(&e);
    }
    /* switches started anywhere within a period of RING_WAKE_BLOCKS: 3 wakes, give or take
     * the period boundary */
    uint32_t wakes = ring_wake_count() - before;
    ASSERT(wakes == 3);
    ASSERT_EQ(e.bad, 0);
}

#define SPSC_EVENTS 2000000u

static struct agent_thread *spsc_thread;
static _Atomic int spsc_done;

static void *spsc_producer(void *arg)
{
    (void)arg;
    struct agent_thread *t = ring_self(0);
    __atomic_store_n(&spsc_thread, t, __ATOMIC_RELEASE);
    for (uint64_t seq = 0; seq < SPSC_EVENTS; seq++)
        while (!put(t, seq, size_of(seq)))
            sched_yield(); /* empty pool: the agent would drop; the test waits to check order */
    __atomic_store_n(&spsc_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void drain(struct agent_thread *t, int exited, void *ctx)
{
    (void)exited;
    ring_consume(t, check, ctx);
}

static void drain_all(struct expect *e)
{
    ring_for_each_thread(drain, e);
    ring_durable();
}

static void test_producer_and_consumer_threads_lose_nothing(void)
{
    struct expect e = {0};
    pthread_t producer;
    ASSERT(pthread_create(&producer, NULL, spsc_producer, NULL) == 0);
    while (!(e.thread = __atomic_load_n(&spsc_thread, __ATOMIC_ACQUIRE)))
        sched_yield();
    struct expect mine = {self(), 0, 0, 0};
    consume_self(&mine); /* what earlier tests left */
    while (!__atomic_load_n(&spsc_done, __ATOMIC_ACQUIRE))
        drain_all(&e);
    pthread_join(producer, NULL);
    drain_all(&e); /* the rest; the exited producer is freed */
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, SPSC_EVENTS);
    ASSERT_EQ(e.events, SPSC_EVENTS);
    ASSERT_EQ(ring_pool_free_blocks(), RING_TEST_BLOCKS - 1);
}

#define CHURN_THREADS 1024u
#define CHURN_EVENTS 200u
/* Threads writing at once: fewer than the pool's blocks, since each holds the block it writes
 * in (with more, the ones without a block drop their events: the agent does not wait) */
#define CHURN_AT_ONCE 4u

static _Atomic unsigned churn_done;

static void *churn_thread(void *arg)
{
    uint64_t first = (uint64_t)(uintptr_t)arg * CHURN_EVENTS;
    struct agent_thread *t = ring_self(0);
    for (uint64_t seq = first; seq < first + CHURN_EVENTS; seq++)
        while (!put(t, seq, size_of(seq)))
            sched_yield();
    __atomic_fetch_add(&churn_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void count_threads(struct agent_thread *t, int exited, void *ctx)
{
    (void)t;
    (void)exited;
    (*(unsigned *)ctx)++;
}

static void test_a_thousand_threads_come_and_go(void)
{
    struct expect e = {0};
    self();
    pthread_t threads[CHURN_AT_ONCE];
    for (unsigned started = 0; started < CHURN_THREADS; started += CHURN_AT_ONCE) {
        for (unsigned i = 0; i < CHURN_AT_ONCE; i++)
            ASSERT(pthread_create(&threads[i], NULL, churn_thread,
                                  (void *)(uintptr_t)(started + i)) == 0);
        /* together they want more blocks than the pool has: drain until they are done */
        while (__atomic_load_n(&churn_done, __ATOMIC_ACQUIRE) < started + CHURN_AT_ONCE)
            drain_all(&e);
        for (unsigned i = 0; i < CHURN_AT_ONCE; i++)
            pthread_join(threads[i], NULL);
        drain_all(&e); /* their slots go back before the next ones start */
    }
    drain_all(&e);
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.events, (uint64_t)CHURN_THREADS * CHURN_EVENTS);
    unsigned live = 0;
    ring_for_each_thread(count_threads, &live);
    ASSERT_EQ(live, 1); /* this thread */
    ASSERT_EQ(ring_pool_free_blocks(), RING_TEST_BLOCKS - 1);
}

static const struct test_case tests[] = {
    {"events_come_back_in_order_across_many_blocks",
     test_events_come_back_in_order_across_many_blocks},
    {"empty_pool_refuses_until_consumed", test_empty_pool_refuses_until_consumed},
    {"consumer_woken_once_per_wake_blocks_switches",
     test_consumer_woken_once_per_wake_blocks_switches},
    {"producer_and_consumer_threads_lose_nothing", test_producer_and_consumer_threads_lose_nothing},
    {"a_thousand_threads_come_and_go", test_a_thousand_threads_come_and_go},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    char kb[32];
    snprintf(kb, sizeof kb, "%u", RING_TEST_BLOCKS * RING_BLOCK_BYTES / 1024);
    setenv("LANTERN_BUFFER_KB", kb, 1);
    /* the pool in a buffer file, as in the agent */
    char dir[] = "/tmp/lantern-test-ring-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("LANTERN_SESSION_DIR", dir, 1);
    if (ring_pool_init() < 0 || !ring_pool.path[0])
        return 1;
    int rc = test_main(tests, argc, argv);
    unlink(ring_pool.path);
    rmdir(dir);
    return rc;
}
