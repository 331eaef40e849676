/* Unit tests of the agent's per-thread ring (src/agent/ring.[ch]) on its own: records come
 * back in order and intact across many laps of the ring at every alignment, a full ring
 * refuses records until the consumer frees room, the consumer is woken exactly once per
 * crossing of half full, and a producer and a consumer thread lose nothing. */
#include "agent/ring.h"
#include "harness.h"

#include <pthread.h>
#include <sched.h>

/* Wake-ups of the consumer since the test began: ring.c counts every one (the futex word). */
static uint32_t wakes_before;
static uint32_t wakes(void)
{
    return ring_wake_count() - wakes_before;
}

static struct ring make_ring(uint64_t size)
{
    struct ring r;
    memset(&r, 0, sizeof(r));
    r.size = size;
    r.data = calloc(1, size);
    r.inline_max = (uint32_t)(size / 8);
    return r;
}

/* A record of `bytes` (multiple of 8, >= 24) numbered `seq`, its tail filled from seq. */
static int put(struct ring *r, uint64_t seq, uint32_t bytes)
{
    struct ring_record *rec = ring_reserve(r, bytes);
    if (!rec)
        return 0;
    *rec = (struct ring_record){.type = 22, .size = (uint16_t)bytes, .arg = seq};
    for (uint32_t i = sizeof(*rec); i < bytes; i++)
        ((uint8_t *)rec)[i] = (uint8_t)(seq + i);
    ring_commit(r, bytes);
    return 1;
}

struct expect {
    uint64_t next_seq;
    uint64_t bad;
};

static void check(struct agent_thread *t, const struct ring_record *rec, void *ctx)
{
    (void)t;
    struct expect *e = ctx;
    if (rec->type != 22 || rec->arg != e->next_seq)
        e->bad++;
    for (uint32_t i = sizeof(*rec); i < rec->size; i++)
        if (((const uint8_t *)rec)[i] != (uint8_t)(rec->arg + i))
            e->bad++;
    e->next_seq++;
}

static uint32_t size_of(uint64_t seq)
{
    return 24 + 8 * (uint32_t)(seq % 7); /* 24 .. 72 bytes: ends land everywhere */
}

static void test_records_come_back_in_order_across_many_laps(void)
{
    struct ring r = make_ring(1024);
    struct expect e = {0, 0};
    uint64_t seq = 0;
    for (int lap = 0; lap < 2000; lap++) {
        int batch = 1 + lap % 9;
        for (int i = 0; i < batch; i++, seq++)
            ASSERT(put(&r, seq, size_of(seq)));
        ring_consume(&r, check, NULL, &e);
    }
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, seq);
    ASSERT(r.head / r.size > 50); /* many laps */
    free(r.data);
}

static void test_full_ring_refuses_until_consumed(void)
{
    struct ring r = make_ring(1024);
    struct expect e = {0, 0};
    uint64_t seq = 0;
    while (put(&r, seq, 64))
        seq++;
    ASSERT_EQ(seq, 1024 / 64);
    ASSERT(!put(&r, seq, 24)); /* still full */
    ring_consume(&r, check, NULL, &e);
    ASSERT_EQ(e.next_seq, seq);
    ASSERT(put(&r, seq, 64));
    ring_consume(&r, check, NULL, &e);
    ASSERT_EQ(e.bad, 0);
    free(r.data);
}

static void test_writer_woken_once_per_half_full_crossing(void)
{
    struct ring r = make_ring(4096);
    struct expect e = {0, 0};
    wakes_before = ring_wake_count();
    uint64_t seq = 0;
    for (; seq < 2048 / 64 - 1; seq++) /* just under half */
        ASSERT(put(&r, seq, 64));
    ASSERT_EQ(wakes(), 0);
    ASSERT(put(&r, seq++, 64)); /* reaches half */
    ASSERT_EQ(wakes(), 1);
    while (put(&r, seq, 64)) /* up to full: no more wakes */
        seq++;
    ASSERT_EQ(wakes(), 1);
    ring_consume(&r, check, NULL, &e);
    for (int i = 0; i < 4096 / 64; i++, seq++) /* a whole ring more: one new crossing */
        ASSERT(put(&r, seq, 64));
    ASSERT_EQ(wakes(), 2);
    ring_consume(&r, check, NULL, &e);
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, seq);
    free(r.data);
}

#define SPSC_RECORDS 2000000u

static struct ring spsc_ring;
static _Atomic int spsc_done;

static void *spsc_producer(void *arg)
{
    (void)arg;
    for (uint64_t seq = 0; seq < SPSC_RECORDS; seq++)
        while (!put(&spsc_ring, seq, size_of(seq)))
            sched_yield(); /* full: the agent would drop; the test waits to check ordering */
    __atomic_store_n(&spsc_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_producer_and_consumer_threads_lose_nothing(void)
{
    spsc_ring = make_ring(8192);
    struct expect e = {0, 0};
    pthread_t producer;
    ASSERT(pthread_create(&producer, NULL, spsc_producer, NULL) == 0);
    while (!__atomic_load_n(&spsc_done, __ATOMIC_ACQUIRE))
        ring_consume(&spsc_ring, check, NULL, &e);
    pthread_join(producer, NULL);
    ring_consume(&spsc_ring, check, NULL, &e);
    ASSERT_EQ(e.bad, 0);
    ASSERT_EQ(e.next_seq, SPSC_RECORDS);
    free(spsc_ring.data);
}

static const struct test_case tests[] = {
    {"records_come_back_in_order_across_many_laps",
     test_records_come_back_in_order_across_many_laps},
    {"full_ring_refuses_until_consumed", test_full_ring_refuses_until_consumed},
    {"writer_woken_once_per_half_full_crossing", test_writer_woken_once_per_half_full_crossing},
    {"producer_and_consumer_threads_lose_nothing", test_producer_and_consumer_threads_lose_nothing},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
