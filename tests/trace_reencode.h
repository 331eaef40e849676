/* Test helper: decodes one record with its generated decoder and encodes it again with its
 * generated encoder, so a test can check that what a file holds is exactly what the encoders
 * write (every record type of records.def, no layout written out here). */
#ifndef LANTERN_TESTS_TRACE_REENCODE_H
#define LANTERN_TESTS_TRACE_REENCODE_H

#include <string.h>

#include "trace/records.h"

/* A decoded record (a thread event, trace/events.h) as the bytes its encoder writes, in b:
 * fields over them (prev_ts: *zero, set to 0), or .bad set for a type records.def lacks. */
static inline struct trace_fields trace_reencode_record(unsigned type, struct trace_fields f,
                                                        struct trace_chunk_builder *b,
                                                        uint64_t *zero)
{
    trace_chunk_begin(b, b->buf, b->cap, 0);
    int put = -1;
    switch (type) {
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    case TRACE_##TYPE: {                                                                           \
        struct trace_##name r;                                                                     \
        if (trace_get_##name(&f, &r) == 0)                                                         \
            put = trace_put_##name(b, &r);                                                         \
        break;                                                                                     \
    }
#include "trace/records.def"
#undef RECORD
    default:
        break;
    }
    *zero = 0;
    /* the codec writes the type (one byte below 128, else two) and a 3-byte length before
     * the body */
    return (struct trace_fields){.p = b->buf + TRACE_CHUNK_HEADER_SIZE + (type < 128 ? 4 : 5),
                                 .end = b->buf + b->len,
                                 .prev_ts = zero,
                                 .bad = put < 0};
}

/* 1: the body re-encodes to the same bytes; 0: it differs or does not decode; -1: a type
 * records.def does not know. b is scratch space (emptied). */
static inline int trace_reencode_same(unsigned type, struct trace_fields f,
                                      struct trace_chunk_builder *b)
{
    uint64_t prev_ts = *f.prev_ts, scratch_ts = prev_ts;
    const uint8_t *body = f.p;
    size_t body_len = (size_t)(f.end - f.p);
    f.prev_ts = &scratch_ts; /* leave the reader's running timestamp alone */
    trace_chunk_begin(b, b->buf, b->cap, prev_ts);
    int put;
    switch (type) {
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    case TRACE_##TYPE: {                                                                           \
        struct trace_##name r;                                                                     \
        if (trace_get_##name(&f, &r) < 0)                                                          \
            return 0;                                                                              \
        put = trace_put_##name(b, &r);                                                             \
        break;                                                                                     \
    }
#include "trace/records.def"
#undef RECORD
    default:
        return -1;
    }
    /* the codec writes the type (one byte below 128, else two) and a 3-byte length before
     * the body */
    size_t header = type < 128 ? 4 : 5;
    const uint8_t *again = b->buf + TRACE_CHUNK_HEADER_SIZE + header;
    return put == 0 && b->len - TRACE_CHUNK_HEADER_SIZE - header == body_len &&
           memcmp(again, body, body_len) == 0;
}

#endif
