/* The writer's string table: the strings of the locked interface (CUPTI's records, names,
 * NVTX's registry) interned per file, each written once as TRACE_STRING (cut to
 * TRACE_STRING_MAX), under the writer lock; the ids they share with the threads' STRING
 * events; wide strings to UTF-8. */
#include "agent/writer_file.h"

#include "agent/ring.h"
#include "trace/records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WRITER_INTERN_MAX                                                                          \
    (1u << 20) /* distinct strings remembered per file; more are not deduplicated */
#define WRITER_INTERN_BYTES_MAX                                                                    \
    (64u << 20) /* ... and their bytes: the writer's memory stays bounded */

static uint64_t writer_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3u;
    return h | 1; /* 0 marks an empty slot */
}

static void writer_emit_string(uint64_t id, const char *s, size_t len, size_t original_len)
{
    struct trace_string r = {.id = id,
                             .bytes = trace_bytes(s, len),
                             .original_len = original_len != len ? original_len : 0};
    writer_reserve_locked(len + 32);
    trace_put_string(&writer.chunk, &r);
}

/* A string longer than TRACE_STRING_MAX, cut at a UTF-8 character boundary and marked;
 * *len becomes the cut length. NULL if out of memory. */
static const char *writer_cut_string(const char *s, size_t *len)
{
    static const char mark[] = TRACE_STRING_CUT_MARK;
    if (!writer.cut && !(writer.cut = malloc(TRACE_STRING_MAX)))
        return NULL;
    size_t keep = TRACE_STRING_MAX - (sizeof mark - 1);
    while (keep && ((unsigned char)s[keep] & 0xC0) == 0x80) /* s[keep] continues a character */
        keep--;
    memcpy(writer.cut, s, keep);
    memcpy(writer.cut + keep, mark, sizeof mark - 1);
    *len = keep + sizeof mark - 1;
    return writer.cut;
}

static int writer_strings_grow(void)
{
    size_t cap = writer.strings_cap ? writer.strings_cap * 2 : 4096;
    struct writer_string *table = calloc(cap, sizeof(*table));
    if (!table)
        return -ENOMEM;
    for (size_t i = 0; i < writer.strings_cap; i++) {
        struct writer_string *old = &writer.strings[i];
        if (!old->hash)
            continue;
        size_t j = old->hash & (cap - 1);
        while (table[j].hash)
            j = (j + 1) & (cap - 1);
        table[j] = *old;
    }
    free(writer.strings);
    writer.strings = table;
    writer.strings_cap = cap;
    return 0;
}

uint64_t writer_intern(const char *s, size_t len)
{
    size_t original_len = len;
    if (len > TRACE_STRING_MAX && !(s = writer_cut_string(s, &len)))
        return 0;
    uint64_t hash = writer_hash(s, len);
    if (writer.strings_used * 2 >= writer.strings_cap && writer.strings_used < WRITER_INTERN_MAX)
        writer_strings_grow();
    struct writer_string *slot = NULL;
    if (writer.strings_cap) { /* at most half full, so the probe ends */
        size_t mask = writer.strings_cap - 1, j = hash & mask;
        for (; writer.strings[j].hash; j = (j + 1) & mask) {
            struct writer_string *e = &writer.strings[j];
            if (e->hash == hash && e->len == len && memcmp(e->bytes, s, len) == 0)
                return e->id;
        }
        slot = &writer.strings[j];
    }
    uint64_t id = writer_new_string_id();
    /* past the caps a string is written again on each use instead of being remembered */
    if (slot && writer.strings_used * 2 < writer.strings_cap &&
        writer.strings_bytes + len <= WRITER_INTERN_BYTES_MAX) {
        char *copy = malloc(len ? len : 1);
        if (copy) {
            memcpy(copy, s, len);
            *slot = (struct writer_string){hash, id, copy, len};
            writer.strings_used++;
            writer.strings_bytes += len;
        }
    }
    writer_emit_string(id, s, len, original_len);
    return id;
}

/* The string table forgotten for a fork child's new file: retired, not freed (free() there
 * may wait for the allocator lock of a parent thread that is not in the child; the copies stay
 * untouched and reachable); the next string makes a new table. Past 8 generations of forks
 * the oldest is freed. */
void writer_strings_forget(void)
{
    size_t n = sizeof writer.strings_retired / sizeof writer.strings_retired[0];
    struct writer_string *oldest = writer.strings_retired[n - 1];
    for (size_t i = 0; oldest && i < writer.strings_retired_cap[n - 1]; i++)
        free(oldest[i].bytes);
    free(oldest);
    memmove(writer.strings_retired + 1, writer.strings_retired,
            (n - 1) * sizeof writer.strings_retired[0]);
    memmove(writer.strings_retired_cap + 1, writer.strings_retired_cap,
            (n - 1) * sizeof writer.strings_retired_cap[0]);
    writer.strings_retired[0] = writer.strings;
    writer.strings_retired_cap[0] = writer.strings_cap;
    writer.strings = NULL;
    writer.strings_cap = writer.strings_used = writer.strings_bytes = 0;
}

/* Forgets the string table, freed (the writer thread, lock held: not in a fork child). */
void writer_strings_clear(void)
{
    for (size_t i = 0; i < writer.strings_cap; i++)
        free(writer.strings[i].bytes);
    free(writer.strings);
    writer.strings = NULL;
    writer.strings_cap = writer.strings_used = writer.strings_bytes = 0;
}

/* Kept in the buffer file, so that the launcher's salvage continues the file's numbering. */
uint64_t writer_new_string_id(void)
{
    static _Atomic uint64_t unmapped = 1; /* before the pool exists (never in practice) */
    struct pool_header *h = __atomic_load_n(&ring_pool.header, __ATOMIC_ACQUIRE);
    return __atomic_fetch_add(h ? &h->next_string_id : &unmapped, 1, __ATOMIC_RELAXED);
}

/* wchar_t is UTF-32 on Linux; invalid code points become U+FFFD. */
size_t writer_wide_to_utf8(const wchar_t *w, size_t units, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < units; i++) {
        uint32_t c = (uint32_t)w[i];
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xC0 | (c >> 6));
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[n++] = (char)(0xE0 | (c >> 12));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | (c >> 18));
            out[n++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        }
    }
    return n;
}
