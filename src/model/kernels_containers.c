/* The kernels report's arena: it owns every string the report keeps, freed at once at the
 * end (its id -> pointer maps are the shared u64 map, kernels_internal.h). Not thread-safe;
 * the report is single-threaded. */
#include "model/kernels_internal.h"

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
