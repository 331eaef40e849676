/* A hash map from a non-zero uint64_t key to a uint64_t value: open addressing, linear probing,
 * backward-shift deletion (no tombstones, so lookups stay short after many removals). Used by
 * the importer (strings, threads, NVTX ranges); meant for any stage that maps ids to ids.
 *
 *   struct u64_map m = {0};              zero-initialised is an empty map
 *   u64_map_put(&m, key, value);         0, or -ENOMEM (the map is unchanged then)
 *   uint64_t *v = u64_map_find(&m, key); the value's slot, NULL if absent
 *   u64_map_remove(&m, key);
 *   u64_map_release(&m);                 frees the arrays; the map is empty again
 *
 * Key 0 marks an empty slot: callers with keys that may be 0 store key + 1. A pointer from
 * u64_map_find stays valid until the next put or remove. To walk every entry, read keys[i] and
 * values[i] for i < cap where keys[i] != 0 (in no particular order). */
#ifndef LANTERN_COMMON_U64_MAP_H
#define LANTERN_COMMON_U64_MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64_map {
    uint64_t *keys, *values;
    size_t cap, count; /* cap: 0 or a power of two; count: entries held */
};

/* The slot of a key's home: a 64-bit mix (murmur3's finaliser, first half). */
static inline uint64_t u64_map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* Inline: the importer looks up on every NVTX start/end and thread change. */
static inline uint64_t *u64_map_find(const struct u64_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = u64_map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return &m->values[i];
        if (!m->keys[i])
            return NULL;
    }
}

/* Sets key (non-zero) to value, adding it if absent. Returns 0 or -ENOMEM. */
int u64_map_put(struct u64_map *m, uint64_t key, uint64_t value);
/* Removes key if present. */
void u64_map_remove(struct u64_map *m, uint64_t key);
/* Frees the map's memory and leaves it empty (reusable). */
void u64_map_release(struct u64_map *m);

#endif
