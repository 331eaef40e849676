/* The slow steps of thread_events.h: defining a string the thread has not used in this file
 * (a new id, remembered in the thread's cache; a hashed text by its hash) and interning one too
 * long for the stream. */
#include "agent/thread_events.h"

#include <stdlib.h>

struct ring_string_slot *thread_string_define(struct ring_string_slot *slot, uint64_t key,
                                              struct thread_string_words w, const char *s,
                                              size_t len)
{
    slot->key = 0;
    slot->id = writer_new_string_id();
    slot->len = (uint32_t)len;
    slot->a = w.a;
    slot->b = w.b;
    if (len <= RING_STRING_INLINE) {
        memcpy(slot->bytes, s, len);
        slot->key = key;
        return slot;
    }
    if (slot->heap_cap < len) { /* grows to the longest string the slot held: no churn */
        char *heap = realloc(slot->heap, len);
        if (!heap)
            return slot; /* defined, not remembered */
        slot->heap = heap;
        slot->heap_cap = (uint32_t)len;
    }
    memcpy(slot->heap, s, len);
    slot->key = key;
    return slot;
}

uint64_t thread_string_long(const char *s, size_t len)
{
    uint64_t id = 0;
    if (writer_lock()) {
        id = writer_intern(s, len);
        writer_unlock_durable();
    }
    return id;
}

void thread_message_resolve_hashed(struct agent_thread *t, struct thread_message *m,
                                   uint64_t hash)
{
    uint64_t key = (hash & ~(uint64_t)1) ? hash & ~(uint64_t)1 : 2;
    struct ring_string_slot *slot = &t->strings[(key * 0xD6E8FEB86659FD93u) >> 58];
    m->define = NULL;
    if (slot->key == key && slot->len == m->len) {
        m->id = slot->id;
        return;
    }
    slot->key = key;
    slot->id = writer_new_string_id();
    slot->len = (uint32_t)m->len;
    slot->a = slot->b = 0;
    m->id = slot->id;
    m->define = slot;
}
