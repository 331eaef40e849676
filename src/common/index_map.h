/* An index over a caller's array of records with composite keys: open addressing from the
 * key's hash to the record's position, records compared by a callback. The caller owns the
 * array and appends a record at the position index_get hands out. Used by the analyze timeline
 * pass (kernel names, launch shapes, streams, NVTX range names).
 *
 *   struct index_map m = {0};
 *   long pos = index_get(&m, hash, array, eq, &key, count, &added);  then array[pos] = key
 *   index_release(&m);
 */
#ifndef LANTERN_COMMON_INDEX_MAP_H
#define LANTERN_COMMON_INDEX_MAP_H

#include <stddef.h>
#include <stdint.h>

struct index_map {
    uint32_t *slots; /* position + 1; 0: empty */
    uint64_t *hashes;
    size_t cap, count;
};

/* Is array[pos] the record key? */
typedef int (*index_eq)(const void *array, size_t pos, const void *key);

/* Folds a value into a hash (start from any constant). */
uint64_t index_mix(uint64_t h, int64_t v);

/* Finds key, or inserts it at position `next` (the caller appends the element there).
 * Returns the position, or -ENOMEM; *added says which. */
long index_get(struct index_map *m, uint64_t hash, const void *array, index_eq eq, const void *key,
               size_t next, int *added);
void index_release(struct index_map *m);

/* Grows a dynamic array of elem-byte elements to hold count + 1 (doubling); 0 or -ENOMEM. */
int index_reserve(void **array, size_t *cap, size_t count, size_t elem);

#endif
