/* An open-addressing index from a hash to a position in the caller's array (index_map.h). */
#include "common/index_map.h"

#include <errno.h>
#include <stdlib.h>

uint64_t index_mix(uint64_t h, int64_t v)
{
    h ^= (uint64_t)v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Position of key in array, or -1 (none) with *slot_out the empty slot where it goes. */
static long index_find(const struct index_map *m, uint64_t hash, const void *array, index_eq eq,
                       const void *key, size_t *slot_out)
{
    if (!m->cap)
        return -1;
    for (size_t i = hash & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i]) {
            *slot_out = i;
            return -1;
        }
        if (m->hashes[i] == hash && eq(array, m->slots[i] - 1, key))
            return (long)(m->slots[i] - 1);
    }
}

static int index_grow(struct index_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    uint64_t *hashes = calloc(cap, sizeof *hashes);
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i])
            continue;
        size_t k = m->hashes[i] & (cap - 1);
        while (slots[k])
            k = (k + 1) & (cap - 1);
        slots[k] = m->slots[i];
        hashes[k] = m->hashes[i];
    }
    free(m->slots);
    free(m->hashes);
    m->slots = slots;
    m->hashes = hashes;
    m->cap = cap;
    return 0;
}

long index_get(struct index_map *m, uint64_t hash, const void *array, index_eq eq, const void *key,
               size_t next, int *added)
{
    size_t slot = 0;
    *added = 0;
    if ((m->count + 1) * 2 > m->cap && index_grow(m) < 0)
        return -ENOMEM;
    long pos = index_find(m, hash, array, eq, key, &slot);
    if (pos >= 0)
        return pos;
    m->slots[slot] = (uint32_t)(next + 1);
    m->hashes[slot] = hash;
    m->count++;
    *added = 1;
    return (long)next;
}

void index_release(struct index_map *m)
{
    free(m->slots);
    free(m->hashes);
}

int index_reserve(void **array, size_t *cap, size_t count, size_t elem)
{
    if (count < *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*array, n * elem);
    if (!p)
        return -ENOMEM;
    *array = p;
    *cap = n;
    return 0;
}
