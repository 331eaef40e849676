/* The generated record codec (src/trace/records.def -> records.h): every record round-trips
 * field by field and byte for byte, the bytes match the worked example of
 * docs/trace-format.md, optional trailing fields are left out exactly when they are zero,
 * absent fields read as 0, and the .def itself is well formed. */
#include "harness.h"
#include "trace_reencode.h"

#include <errno.h>

static uint8_t buf[1 << 16], scratch[1 << 16];

/* A distinct value per field: small, multi-byte and full 64-bit varints. */
static uint64_t sample(unsigned type, size_t field)
{
    static const uint64_t values[] = {1, 127, 128, 300, 16384, 0xFFFFFFFFu, UINT64_MAX, 42};
    return values[(type + field) % (sizeof values / sizeof values[0])];
}

/* Fills a record struct field by field from sample(); strings are "fN". */
static char names[64][8];
#define FILL_u(x, i) x = sample(type, i);
#define FILL_ou(x, i) x = sample(type, i);
#define FILL_ts(x, i) x = 1000000 + sample(type, i) % 100000;
#define FILL_i(x, i) x = -(int64_t)(sample(type, i) >> 1);
#define FILL_f(x, i) x = (double)sample(type, i) / 8;
#define FILL_s(x, i) x = trace_cstr(names[i]);
#define FILL_os(x, i) x = trace_cstr(names[i]);
#define FILL_ul(x, i)                                                                              \
    x.count = 3;                                                                                   \
    x.values[0] = 1, x.values[1] = 300, x.values[2] = UINT64_MAX;

#define SAME_u(a, b) ASSERT(a == b);
#define SAME_ou(a, b) ASSERT(a == b);
#define SAME_ts(a, b) ASSERT(a == b);
#define SAME_i(a, b) ASSERT(a == b);
#define SAME_f(a, b) ASSERT(a == b);
#define SAME_s(a, b) ASSERT(a.len == b.len && memcmp(a.bytes, b.bytes, a.len) == 0);
#define SAME_os(a, b) SAME_s(a, b)
#define SAME_ul(a, b) ASSERT(a.count == b.count && !memcmp(a.values, b.values, sizeof a.values));

#define F(kind, field, doc) FILL_##kind(r->field, i) i++;
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    static void fill_##name(struct trace_##name *r)                                                \
    {                                                                                              \
        unsigned type = TRACE_##TYPE;                                                              \
        (void)type;                                                                                \
        size_t i = 0;                                                                              \
        fields                                                                                     \
    }
#include "trace/records.def"
#undef RECORD
#undef F

#define F(kind, field, doc) SAME_##kind(a->field, b->field)
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    static void same_##name(const struct trace_##name *a, const struct trace_##name *b)            \
    {                                                                                              \
        fields                                                                                     \
    }
#include "trace/records.def"
#undef RECORD
#undef F

/* Encodes the filled record, checks its type (a varint: one byte below 128, else two), that it
 * decodes to the same values with nothing left over, and that it re-encodes to the same
 * bytes. */
#define RECORD(TYPE, name, number, doc, fields)                                                    \
    static void round_trip_##name(void)                                                            \
    {                                                                                              \
        struct trace_##name in = {0}, out;                                                         \
        struct trace_chunk_builder b, again = {.buf = scratch, .cap = sizeof scratch};             \
        fill_##name(&in);                                                                          \
        trace_chunk_begin(&b, buf, sizeof buf, 1000000);                                           \
        ASSERT_EQ(trace_put_##name(&b, &in), 0);                                                   \
        size_t type_bytes = TRACE_##TYPE < 128 ? 1 : 2;                                            \
        ASSERT_EQ(buf[TRACE_CHUNK_HEADER_SIZE] & 0x7F, TRACE_##TYPE & 0x7F);                       \
        if (type_bytes == 2)                                                                       \
            ASSERT_EQ(buf[TRACE_CHUNK_HEADER_SIZE + 1], TRACE_##TYPE >> 7);                        \
        uint64_t prev_ts = 1000000;                                                                \
        struct trace_fields f = {.p = buf + TRACE_CHUNK_HEADER_SIZE + type_bytes + 3,              \
                                 .end = buf + b.len,                                               \
                                 .prev_ts = &prev_ts};                                             \
        ASSERT_EQ(trace_reencode_same(TRACE_##TYPE, f, &again), 1);                                \
        ASSERT_EQ(trace_get_##name(&f, &out), 0);                                                  \
        ASSERT(f.p == f.end);                                                                      \
        same_##name(&in, &out);                                                                    \
    }
#include "trace/records.def"
#undef RECORD

static void every_record_round_trips_field_by_field(void)
{
    for (int i = 0; i < 64; i++)
        snprintf(names[i], sizeof names[i], "f%d", i);
    size_t records = 0;
#define RECORD(TYPE, name, number, doc, fields) round_trip_##name(), records++;
#include "trace/records.def"
#undef RECORD
    ASSERT_EQ(records, trace_record_spec_count);
}

/* docs/trace-format.md, "Example: one push/pop pair": nvtxRangePushA("step") then
 * nvtxRangePop() 850 ns later on thread 1, name id 3, 120 ns after the chunk's previous ts. */
static void push_pop_bytes_match_the_documented_example(void)
{
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, 5000);
    struct trace_push push = {.thread_idx = 1, .ts = 5120, .domain = 0, .depth = 0, .name = 3};
    struct trace_pop pop = {.thread_idx = 1, .ts = 5970, .domain = 0, .depth = 0};
    ASSERT_EQ(trace_put_push(&b, &push), 0);
    ASSERT_EQ(trace_put_pop(&b, &pop), 0);
    /* the codec pads the length to 3 bytes (0x86 0x80 0x00 is 6); the doc shows it minimal */
    static const uint8_t want[] = {0x16, 0x86, 0x80, 0x00, 0x01, 0xf0, 0x01, 0x00, 0x00, 0x03,
                                   0x17, 0x85, 0x80, 0x00, 0x01, 0xa4, 0x0d, 0x00, 0x00};
    ASSERT_EQ(b.len - TRACE_CHUNK_HEADER_SIZE, sizeof want);
    ASSERT(memcmp(buf + TRACE_CHUNK_HEADER_SIZE, want, sizeof want) == 0);
}

static size_t body_of(struct trace_chunk_builder *b)
{
    return b->len - TRACE_CHUNK_HEADER_SIZE - 4;
}

static void optional_fields_end_at_the_last_non_zero_one(void)
{
    struct trace_chunk_builder b;
    /* a push's event: category set, the rest zero -> name and category only */
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    ASSERT_EQ(trace_put_push(&b, &(struct trace_push){.thread_idx = 1, .category = 7}), 0);
    ASSERT_EQ(body_of(&b), 4 + 2);
    /* a string the agent did not cut has no original_len */
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    ASSERT_EQ(trace_put_string(&b, &(struct trace_string){.id = 1, .bytes = trace_cstr("ab")}), 0);
    ASSERT_EQ(body_of(&b), 1 + 1 + 2);
    /* the launcher's end record keeps exit_status 0 when asked to */
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    struct trace_process_end end = {.end = 5, .clean = 1, .optional_present = 1};
    ASSERT_EQ(trace_put_process_end(&b, &end), 0);
    ASSERT_EQ(body_of(&b), 4);
    uint64_t prev_ts = 0;
    struct trace_fields f = {
        .p = buf + TRACE_CHUNK_HEADER_SIZE + 4, .end = buf + b.len, .prev_ts = &prev_ts};
    struct trace_process_end out;
    ASSERT_EQ(trace_get_process_end(&f, &out), 0);
    ASSERT_EQ(out.optional_present, 1);
    ASSERT_EQ(out.end, 5);
    /* ... and the agent's leaves it out */
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    end.optional_present = 0;
    ASSERT_EQ(trace_put_process_end(&b, &end), 0);
    ASSERT_EQ(body_of(&b), 3);
}

static void absent_trailing_fields_read_as_zero(void)
{
    static const uint8_t body[] = {0x02, 0x14}; /* a kernel record cut after device, context */
    uint64_t prev_ts = 77;
    struct trace_fields f = {.p = body, .end = body + sizeof body, .prev_ts = &prev_ts};
    struct trace_cuda_kernel k;
    memset(&k, 0xAB, sizeof k);
    ASSERT_EQ(trace_get_cuda_kernel(&f, &k), 0);
    ASSERT_EQ(k.device, 2);
    ASSERT_EQ(k.context, 20);
    ASSERT_EQ(k.stream, 0);
    ASSERT_EQ(k.start, 0);
    ASSERT_EQ(k.graph_node_id, 0);
    ASSERT_EQ(prev_ts, 77); /* an absent ts moves nothing */
}

static void malformed_body_is_reported(void)
{
    static const uint8_t body[] = {0x01, 0x05, 'a'}; /* a string claiming 5 bytes, holding 1 */
    uint64_t prev_ts = 0;
    struct trace_fields f = {.p = body, .end = body + sizeof body, .prev_ts = &prev_ts};
    struct trace_string s;
    ASSERT_EQ(trace_get_string(&f, &s), -EBADMSG);
}

static void the_list_keeps_its_first_values(void)
{
    struct trace_chunk_builder b;
    struct trace_process_info in = {.rank = 1, .ancestors = {.count = 40}};
    for (unsigned i = 0; i < TRACE_U_LIST_MAX; i++)
        in.ancestors.values[i] = 100 + i;
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    ASSERT_EQ(trace_put_process_info(&b, &in), 0); /* writes at most TRACE_U_LIST_MAX */
    uint64_t prev_ts = 0;
    struct trace_fields f = {
        .p = buf + TRACE_CHUNK_HEADER_SIZE + 4, .end = buf + b.len, .prev_ts = &prev_ts};
    struct trace_process_info out;
    ASSERT_EQ(trace_get_process_info(&f, &out), 0);
    ASSERT_EQ(out.ancestors.count, TRACE_U_LIST_MAX);
    ASSERT_EQ(out.ancestors.values[TRACE_U_LIST_MAX - 1], 100 + TRACE_U_LIST_MAX - 1);
    ASSERT(f.p == f.end);
}

/* records.def's rules: types unique and below 16384 (at most two varint bytes), inside a
 * source's range or 1-19, field names unique per record, optional fields and lists only at
 * the end. */
static void the_definitions_are_well_formed(void)
{
    for (size_t i = 0; i < trace_record_spec_count; i++) {
        const struct trace_record_spec *r = &trace_record_specs[i];
        ASSERT(r->type > 0 && r->type < 16384);
        int in_range = r->type <= 19;
#define SOURCE(ID, name, flag, first, last, where, gpu, by_default, doc)                           \
    in_range |= r->type >= (first) && r->type <= (last);
#include "trace/sources.def"
#undef SOURCE
        ASSERT(in_range);
        for (size_t j = 0; j < i; j++)
            ASSERT(trace_record_specs[j].type != r->type);
        int optional_seen = 0;
        for (size_t k = 0; k < r->field_count; k++) {
            const char *kind = r->fields[k].kind;
            int optional = kind[0] == 'o';
            if (optional_seen && !optional) {
                fprintf(stderr, "%s: field %s follows an optional one\n", r->name,
                        r->fields[k].name);
                ASSERT(0);
            }
            optional_seen |= optional;
            if (!strcmp(kind, "ul"))
                ASSERT_EQ(k, r->field_count - 1);
            for (size_t m = 0; m < k; m++)
                ASSERT(strcmp(r->fields[m].name, r->fields[k].name) != 0);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"every_record_round_trips_field_by_field", every_record_round_trips_field_by_field},
        {"push_pop_bytes_match_the_documented_example",
         push_pop_bytes_match_the_documented_example},
        {"optional_fields_end_at_the_last_non_zero_one",
         optional_fields_end_at_the_last_non_zero_one},
        {"absent_trailing_fields_read_as_zero", absent_trailing_fields_read_as_zero},
        {"malformed_body_is_reported", malformed_body_is_reported},
        {"the_list_keeps_its_first_values", the_list_keeps_its_first_values},
        {"the_definitions_are_well_formed", the_definitions_are_well_formed},
        {0, 0},
    };
    return test_main(tests, argc, argv);
}
