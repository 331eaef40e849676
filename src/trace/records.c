/* The encoders, decoders and descriptions of the trace records, generated from records.def
 * (see records.h) by including it once per pass with F defined differently. Optional trailing
 * fields (ou, os) are written up to the last non-zero one, so a plain push ends after its
 * name; a list (ul) is its count, then its values. */
#include "trace/records.h"

#include <errno.h>

/* Writes count (at most TRACE_U_LIST_MAX) then the values. */
static void put_u_list(struct trace_chunk_builder *b, const struct trace_u_list *l)
{
    uint64_t count = l->count < TRACE_U_LIST_MAX ? l->count : TRACE_U_LIST_MAX;
    trace_put_u(b, count);
    for (uint64_t i = 0; i < count; i++)
        trace_put_u(b, l->values[i]);
}

static void get_u_list(struct trace_fields *f, struct trace_u_list *l)
{
    l->count = trace_get_u(f);
    for (uint64_t i = 0; i < l->count && i < TRACE_U_LIST_MAX && !f->bad; i++)
        l->values[i] = trace_get_u(f);
}

/* ---- pass 1: how many optional fields a record writes ---- */

#define SCAN_u(x)
#define SCAN_i(x)
#define SCAN_ts(x)
#define SCAN_f(x)
#define SCAN_s(x)
#define SCAN_ul(x)
#define SCAN_ou(x)                                                                                 \
    optional++;                                                                                    \
    if (x)                                                                                         \
        last = optional;
#define SCAN_os(x)                                                                                 \
    optional++;                                                                                    \
    if ((x).len)                                                                                   \
        last = optional;

#define F(kind, field, doc) SCAN_##kind(r->field)
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    static unsigned optional_written_##name(const struct trace_##name *r)                          \
    {                                                                                              \
        unsigned optional = 0, last = r->optional_present;                                         \
        (void)optional;                                                                            \
        fields return last;                                                                        \
    }
#include "trace/records.def"
#undef RECORD
#undef F

/* ---- pass 2: encoders ---- */

#define PUT_u(x) trace_put_u(b, x);
#define PUT_i(x) trace_put_i(b, x);
#define PUT_ts(x) trace_put_ts(b, x);
#define PUT_f(x) trace_put_f(b, x);
#define PUT_s(x) trace_put_s(b, (x).bytes, (x).len);
#define PUT_ul(x) put_u_list(b, &(x));
#define PUT_ou(x)                                                                                  \
    if (++optional <= last)                                                                        \
        trace_put_u(b, x);
#define PUT_os(x)                                                                                  \
    if (++optional <= last)                                                                        \
        trace_put_s(b, (x).bytes, (x).len);

#define F(kind, field, doc) PUT_##kind(r->field)
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    int trace_put_##name(struct trace_chunk_builder *b, const struct trace_##name *r)              \
    {                                                                                              \
        unsigned optional = 0, last = optional_written_##name(r);                                  \
        (void)optional;                                                                            \
        (void)last;                                                                                \
        struct trace_record_mark m = trace_record_begin(b, TRACE_##TYPE);                          \
        fields return trace_record_end(b, m);                                                      \
    }
#include "trace/records.def"
#undef RECORD
#undef F

/* ---- pass 3: decoders ---- */

/* A record decoded already (trace_fields.decoded): copied, if it is of this type. */
static int get_decoded(struct trace_fields *f, unsigned type, void *r, size_t size)
{
    if (f->decoded_type != type) {
        memset(r, 0, size);
        f->bad = 1;
        return -EINVAL;
    }
    memcpy(r, f->decoded, size);
    return 0;
}

#define GET_u(x) x = trace_get_u(f);
#define GET_i(x) x = trace_get_i(f);
#define GET_ts(x) x = trace_get_ts(f);
#define GET_f(x) x = trace_get_f(f);
#define GET_s(x) (x).len = trace_get_s(f, &(x).bytes);
#define GET_ul(x) get_u_list(f, &(x));
#define GET_ou(x)                                                                                  \
    r->optional_present += f->p < f->end;                                                          \
    x = trace_get_u(f);
#define GET_os(x)                                                                                  \
    r->optional_present += f->p < f->end;                                                          \
    (x).len = trace_get_s(f, &(x).bytes);

#define F(kind, field, doc) GET_##kind(r->field)
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    int trace_get_##name(struct trace_fields *f, struct trace_##name *r)                           \
    {                                                                                              \
        if (f->decoded)                                                                            \
            return get_decoded(f, TRACE_##TYPE, r, sizeof *r);                                     \
        *r = (struct trace_##name){0};                                                             \
        fields return f->bad ? -EBADMSG : 0;                                                       \
    }
#include "trace/records.def"
#undef RECORD
#undef F

/* ---- pass 4: the descriptions ---- */

#define F(kind, field, doc) {#kind, #field, doc},
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    static const struct trace_field_spec fields_##name[] = {fields};
#include "trace/records.def"
#undef RECORD
#undef F

#define RECORD(TYPE, name, number, doc, fields)                                                    \
    {TRACE_##TYPE, "TRACE_" #TYPE, doc, fields_##name,                                             \
     sizeof fields_##name / sizeof fields_##name[0]},
const struct trace_record_spec trace_record_specs[] = {
#include "trace/records.def"
};
#undef RECORD

const size_t trace_record_spec_count = sizeof trace_record_specs / sizeof trace_record_specs[0];
