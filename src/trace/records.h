/* The trace records as C: one struct per record of records.def (fields named as there), its
 * encoder and its decoder, all generated from records.def by the preprocessor, plus a table
 * describing every record for the docs check and the codec tests. Nothing here allocates. */
#ifndef LANTERN_TRACE_RECORDS_H
#define LANTERN_TRACE_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/codec.h"
#include "trace/format.h"

/* An `s` field: bytes not NUL-terminated; a decoded one points into the record. */
struct trace_bytes {
    const uint8_t *bytes;
    size_t len;
};

static inline struct trace_bytes trace_bytes(const void *bytes, size_t len)
{
    return (struct trace_bytes){(const uint8_t *)bytes, len};
}

static inline struct trace_bytes trace_cstr(const char *s)
{
    return trace_bytes(s, strlen(s));
}

/* A `ul` field: u count, then count values. */
#define TRACE_U_LIST_MAX TRACE_MAX_ANCESTORS
struct trace_u_list {
    uint64_t count;                    /* as written; the encoder writes at most the max */
    uint64_t values[TRACE_U_LIST_MAX]; /* the first TRACE_U_LIST_MAX of them */
};

#define TRACE_CTYPE_u uint64_t
#define TRACE_CTYPE_i int64_t
#define TRACE_CTYPE_ts uint64_t
#define TRACE_CTYPE_f double
#define TRACE_CTYPE_s struct trace_bytes
#define TRACE_CTYPE_ou uint64_t
#define TRACE_CTYPE_os struct trace_bytes
#define TRACE_CTYPE_ul struct trace_u_list

/* struct trace_<name>: the fields in records.def's order, then optional_present: how many
 * optional trailing fields (ou, os) the record holds. The decoder sets it; the encoder
 * writes at least that many of them (0: only up to the last non-zero one). */
#define F(kind, field, doc) TRACE_CTYPE_##kind field;
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    struct trace_##name {                                                                          \
        fields unsigned optional_present;                                                          \
    };                                                                                             \
    /* Appends the record to the chunk: 0, or -ENOSPC if it did not fit (the chunk is              \
     * unchanged). */                                                                              \
    int trace_put_##name(struct trace_chunk_builder *b, const struct trace_##name *r);             \
    /* Reads a TRACE_##TYPE body (from trace_reader_next): absent trailing fields read as 0;       \
     * or copies the record a thread event was decoded into (trace_events_next).                   \
     * 0, or -EBADMSG if the body is malformed (-EINVAL: a decoded record of another type). */     \
    int trace_get_##name(struct trace_fields *f, struct trace_##name *r);
#include "trace/records.def"
#undef RECORD
#undef F

/* ---- the records described, for the docs check and the codec tests ---- */

struct trace_field_spec {
    const char *kind; /* "u", "i", "ts", "s", "f", "ou", "os", "ul" */
    const char *name;
    const char *doc;
};

struct trace_record_spec {
    unsigned type;
    const char *name; /* "TRACE_PROCESS" */
    const char *doc;
    const struct trace_field_spec *fields;
    size_t field_count;
};

extern const struct trace_record_spec trace_record_specs[];
extern const size_t trace_record_spec_count;

#endif
