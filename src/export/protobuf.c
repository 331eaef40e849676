/* The out-of-line half of the protocol-buffers encoder (protobuf.h): growing the buffer,
 * closing a nested message, and string fields made valid UTF-8. */
#include "export/protobuf.h"
#include "output/utf8.h"

#include <errno.h>
#include <stdlib.h>

int pb_grow(struct pb_buf *b, size_t need)
{
    if (b->failed)
        return -ENOMEM;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < need)
        cap *= 2;
    uint8_t *data = realloc(b->data, cap);
    if (!data) {
        b->failed = 1;
        return -ENOMEM;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

void pb_text(struct pb_buf *b, unsigned field, const char *s, size_t len)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    size_t out = 0;
    for (size_t i = 0; i < len;) { /* the field's length first: 3 bytes for each bad one */
        size_t n = utf8_sequence(p + i, len - i);
        out += n ? n : 3;
        i += n ? n : 1;
    }
    if (out == len) {
        pb_bytes(b, field, s, len);
        return;
    }
    pb_tag(b, field, PB_LEN);
    pb_raw_varint(b, out);
    if (pb_room(b, out) < 0)
        return;
    for (; p < end;) {
        size_t n = utf8_sequence(p, (size_t)(end - p));
        memcpy(b->data + b->len, n ? (const char *)p : replacement, n ? n : 3);
        b->len += n ? n : 3;
        p += n ? n : 1;
    }
}

/* The body after the reserved length byte is moved right by the extra bytes a length of 128
 * or more needs (rare: track events are a few dozen bytes). */
void pb_end(struct pb_buf *b, size_t mark)
{
    if (b->failed || mark == 0)
        return;
    size_t body = b->len - mark;
    if (body < 0x80) {
        b->data[mark - 1] = (uint8_t)body;
        return;
    }
    size_t extra = 0;
    for (size_t v = body >> 7; v; v >>= 7)
        extra++;
    if (pb_room(b, extra) < 0)
        return;
    memmove(b->data + mark + extra, b->data + mark, body);
    uint8_t *p = b->data + mark - 1;
    for (size_t v = body; v >= 0x80; v >>= 7)
        *p++ = (uint8_t)(v | 0x80);
    *p = (uint8_t)(body >> (7 * extra));
    b->len += extra;
}
