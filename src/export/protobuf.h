/* A minimal protocol-buffers encoder for the Perfetto export: varints, fixed64, doubles,
 * length-delimited fields and nested messages written in place into one growing buffer
 * (a nested message reserves one length byte and moves its body in the rare case it
 * outgrows 127 bytes). Only what perfetto.c needs; docs/export.md says why it is ours. */
#ifndef LANTERN_EXPORT_PROTOBUF_H
#define LANTERN_EXPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pb_buf {
    uint8_t *data;
    size_t len, cap;
    int failed; /* an allocation failed: the buffer's contents are incomplete */
};

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2 };

int pb_grow(struct pb_buf *b, size_t need); /* 0, or -ENOMEM (and failed set) */

static inline int pb_room(struct pb_buf *b, size_t need)
{
    return b->cap - b->len >= need ? 0 : pb_grow(b, need);
}

static inline void pb_raw_varint(struct pb_buf *b, uint64_t v)
{
    if (pb_room(b, 10) < 0)
        return;
    uint8_t *p = b->data + b->len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    b->len = (size_t)(p - b->data);
}

static inline void pb_tag(struct pb_buf *b, unsigned field, unsigned wire)
{
    pb_raw_varint(b, (uint64_t)field << 3 | wire);
}

static inline void pb_uint(struct pb_buf *b, unsigned field, uint64_t v)
{
    pb_tag(b, field, PB_VARINT);
    pb_raw_varint(b, v);
}

/* int64/int32 (not sint): negative values take ten bytes, as protobuf says. */
static inline void pb_int(struct pb_buf *b, unsigned field, int64_t v)
{
    pb_uint(b, field, (uint64_t)v);
}

static inline void pb_fixed64(struct pb_buf *b, unsigned field, uint64_t v)
{
    pb_tag(b, field, PB_FIXED64);
    if (pb_room(b, 8) < 0)
        return;
    for (int i = 0; i < 8; i++)
        b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

static inline void pb_double(struct pb_buf *b, unsigned field, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    pb_fixed64(b, field, bits);
}

static inline void pb_bytes(struct pb_buf *b, unsigned field, const void *s, size_t len)
{
    pb_tag(b, field, PB_LEN);
    pb_raw_varint(b, len);
    if (pb_room(b, len) < 0)
        return;
    memcpy(b->data + b->len, s, len);
    b->len += len;
}

/* A string field: valid UTF-8 as it is, each byte that does not start a valid sequence as
 * U+FFFD, as the JSON export writes names (Perfetto's parsers expect UTF-8; names come from the
 * program and may hold any byte). */
void pb_text(struct pb_buf *b, unsigned field, const char *s, size_t len);

static inline void pb_string(struct pb_buf *b, unsigned field, const char *s)
{
    pb_text(b, field, s, strlen(s));
}

/* A nested message: pb_begin returns a mark for pb_end. */
static inline size_t pb_begin(struct pb_buf *b, unsigned field)
{
    pb_tag(b, field, PB_LEN);
    if (pb_room(b, 1) < 0)
        return 0;
    b->data[b->len++] = 0; /* the length, fixed up by pb_end */
    return b->len;
}

void pb_end(struct pb_buf *b, size_t mark);

#endif
