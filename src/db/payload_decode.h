/* Decoding NVTX extended payloads (the payload extension, nvToolsExtPayload.h) through their
 * registered schemas, with no SQLite: the NVTX importer (import_nvtx_payload.c) lays a schema
 * out once (each entry's offset, size and kind) and then turns each payload's bytes into
 * values. Only what is inside the bytes is read: pointers (strings, nested buffers) are
 * never followed, and a value past the recorded bytes (a payload the agent cut) is not
 * given. Sizes are those of Linux x86-64 (LP64), the only platform Lantern records on. */
#ifndef LANTERN_DB_PAYLOAD_DECODE_H
#define LANTERN_DB_PAYLOAD_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* The NVTX_PAYLOAD_ENTRY_TYPE_* and flags the decoder knows (the values are the header's; the
 * importer needs no NVTX header). */
#define PAYLOAD_SCHEMA_ID_STATIC_START (1ull << 24)
#define PAYLOAD_ENTRY_FLAG_POINTER (1u << 1)
#define PAYLOAD_ENTRY_ARRAY_MASK (7u << 4)
#define PAYLOAD_ENTRY_ARRAY_FIXED_SIZE (1u << 4)
#define PAYLOAD_SCHEMA_TYPE_STATIC 1u

/* How an entry's bytes read. */
enum payload_kind {
    PAYLOAD_KIND_NONE,     /* not decoded: its value is left out (raw bytes only) */
    PAYLOAD_KIND_SIGNED,   /* two's complement, little-endian */
    PAYLOAD_KIND_UNSIGNED, /* an SQLite integer: above 2^63 wraps to negative */
    PAYLOAD_KIND_FLOAT,    /* IEEE binary32 or binary64 by size */
    PAYLOAD_KIND_HALF,     /* IEEE binary16 */
    PAYLOAD_KIND_BF16,     /* bfloat16 */
    PAYLOAD_KIND_TEXT,     /* characters embedded in the payload, up to the first NUL */
    PAYLOAD_KIND_POINTER,  /* an address the program gave: never followed, no value */
};

/* A schema entry as registered (TRACE_PAYLOAD_ENTRY), and how it lays out. */
struct payload_entry {
    int64_t name_id; /* the importer's: strings.id */
    uint64_t type, flags, array_length, offset;
    /* layout (payload_layout): */
    enum payload_kind kind;
    uint64_t at;       /* bytes from the payload's start; valid when placed */
    uint32_t size;     /* one element's bytes */
    uint32_t elements; /* 1, or a fixed array's length (text: its length in bytes) */
    int placed;        /* its offset is known */
    const struct payload_schema *enumeration; /* its type is a registered enumeration */
};

/* An enumeration's value (TRACE_PAYLOAD_ENUM_VALUE). */
struct payload_enum_value {
    uint64_t value;
    int64_t name_id;
};

/* A schema or an enumeration, as registered. */
struct payload_schema {
    uint64_t domain, id; /* the file's domain id and the schema id */
    int is_enum;
    uint64_t schema_type, static_size, pack_align; /* enumerations: static_size is a value's */
    size_t count;                                   /* entries or values recorded */
    struct payload_entry *entries;
    struct payload_enum_value *values;
    int laid_out; /* payload_layout has run since the last registration */
};

/* Finds a schema or enumeration of the same domain by id (NULL: unknown). */
typedef const struct payload_schema *(*payload_lookup_fn)(void *ctx, uint64_t domain, uint64_t id);

/* Lays the schema's entries out: explicit offsets as registered, else natural alignment after
 * the previous entry (packAlign caps it); an entry of unknown size leaves the later entries
 * without an offset of their own unplaced. Entries whose type is a registered enumeration take
 * its value size (4 when not given). */
void payload_layout(struct payload_schema *s, payload_lookup_fn lookup, void *ctx);

/* One decoded value. */
struct payload_value {
    size_t entry;        /* index in the schema */
    int64_t array_index; /* -1: a scalar */
    enum { PAYLOAD_VALUE_INT, PAYLOAD_VALUE_REAL, PAYLOAD_VALUE_TEXT } type;
    int64_t i;
    double d;
    const uint8_t *text; /* into the payload's bytes */
    size_t text_len;
    int64_t enum_name_id; /* an enumeration's value: its name (0: no such value) */
};

/* Calls emit for every value of the laid-out schema s found within bytes[0, len); returns how
 * many entries gave no value (not decodable, or past the bytes). */
size_t payload_decode(const struct payload_schema *s, const uint8_t *bytes, size_t len,
                      void (*emit)(void *ctx, const struct payload_value *v), void *ctx);

/* The kind, size and alignment of a predefined entry type; 0 when unknown (then *kind is
 * PAYLOAD_KIND_NONE). */
uint32_t payload_type_size(uint64_t type, enum payload_kind *kind, uint32_t *align);

#endif
