/* The u64 -> u64 hash map of u64_map.h (growth, insertion, backward-shift deletion). */
#include "common/u64_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Doubles the table (64 slots at first) and re-homes every entry. */
static int grow(struct u64_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof *keys), *values = calloc(cap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = u64_map_hash(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return 0;
}

int u64_map_put(struct u64_map *m, uint64_t key, uint64_t value)
{
    uint64_t *v = u64_map_find(m, key);
    if (v) {
        *v = value;
        return 0;
    }
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0) /* at most half full */
        return -ENOMEM;
    size_t i = u64_map_hash(key) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return 0;
}

void u64_map_remove(struct u64_map *m, uint64_t key)
{
    uint64_t *v = u64_map_find(m, key);
    if (!v)
        return;
    size_t mask = m->cap - 1, hole = (size_t)(v - m->values);
    for (size_t i = (hole + 1) & mask; m->keys[i]; i = (i + 1) & mask) {
        size_t home = u64_map_hash(m->keys[i]) & mask;
        /* move the entry back into the hole unless its home lies cyclically in (hole, i] */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->keys[hole] = m->keys[i];
            m->values[hole] = m->values[i];
            hole = i;
        }
    }
    m->keys[hole] = 0;
    m->values[hole] = 0;
    m->count--;
}

void u64_map_release(struct u64_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}
