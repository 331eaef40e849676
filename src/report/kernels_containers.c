/* The two containers of the kernels report: an arena that owns every string the report keeps
 * (freed at once at the end), and an open-addressing hash map from int64 ids (ranges, strings,
 * op instances) to pointers. Neither is thread-safe; the report is single-threaded. */
#include "report/kernels_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK_SIZE (1 << 20)

struct kernels_arena_block {
    struct kernels_arena_block *next;
    size_t used, size;
    char data[];
};

void *kernels_arena_alloc(struct kernels_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct kernels_arena_block *b = a->blocks;
    if (!b || b->size - b->used < size) {
        size_t block_size = size > ARENA_BLOCK_SIZE ? size : ARENA_BLOCK_SIZE;
        b = malloc(sizeof *b + block_size);
        if (!b)
            return NULL;
        b->used = 0;
        b->size = block_size;
        b->next = a->blocks;
        a->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

char *kernels_arena_strndup(struct kernels_arena *a, const char *s, size_t len)
{
    char *copy = kernels_arena_alloc(a, len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

void kernels_arena_release(struct kernels_arena *a)
{
    while (a->blocks) {
        struct kernels_arena_block *next = a->blocks->next;
        free(a->blocks);
        a->blocks = next;
    }
}

/* INT64_MIN marks an empty slot: ids in the database are never that. */
#define EMPTY_KEY INT64_MIN

static size_t slot_of(int64_t key, size_t capacity)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
    return (size_t)(h >> 32) & (capacity - 1);
}

void *kernels_map_get(const struct kernels_map *m, int64_t key)
{
    if (!m->capacity)
        return NULL;
    for (size_t i = slot_of(key, m->capacity);; i = (i + 1) & (m->capacity - 1)) {
        if (m->keys[i] == key)
            return m->values[i];
        if (m->keys[i] == EMPTY_KEY)
            return NULL;
    }
}

static int map_grow(struct kernels_map *m)
{
    size_t capacity = m->capacity ? m->capacity * 2 : 1024;
    int64_t *keys = malloc(capacity * sizeof *keys);
    void **values = malloc(capacity * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -ENOMEM;
    }
    for (size_t i = 0; i < capacity; i++)
        keys[i] = EMPTY_KEY;
    for (size_t i = 0; i < m->capacity; i++) {
        if (m->keys[i] == EMPTY_KEY)
            continue;
        size_t j = slot_of(m->keys[i], capacity);
        while (keys[j] != EMPTY_KEY)
            j = (j + 1) & (capacity - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->capacity = capacity;
    return 0;
}

int kernels_map_put(struct kernels_map *m, int64_t key, void *value)
{
    if ((m->count + 1) * 2 > m->capacity && map_grow(m) < 0) /* load factor <= 1/2 */
        return -ENOMEM;
    size_t i = slot_of(key, m->capacity);
    while (m->keys[i] != EMPTY_KEY && m->keys[i] != key)
        i = (i + 1) & (m->capacity - 1);
    if (m->keys[i] == EMPTY_KEY)
        m->count++;
    m->keys[i] = key;
    m->values[i] = value;
    return 0;
}

void kernels_map_release(struct kernels_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}
