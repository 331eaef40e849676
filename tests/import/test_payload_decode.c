/* NVTX extended payloads decoded through their schemas (src/db/payload_decode.c), with no
 * database: each test lays a schema out and checks every value the bytes give. */
#include "db/payload_decode.h"

#include "harness.h"

#define MAX_VALUES 16

struct decoded {
    struct payload_value v[MAX_VALUES];
    char text[MAX_VALUES][32];
    int n;
};

static void collect(void *ctx, const struct payload_value *v)
{
    struct decoded *d = ctx;
    ASSERT(d->n < MAX_VALUES);
    d->v[d->n] = *v;
    if (v->type == PAYLOAD_VALUE_TEXT) {
        ASSERT(v->text_len < sizeof d->text[0]);
        memcpy(d->text[d->n], v->text, v->text_len);
        d->text[d->n][v->text_len] = 0;
    }
    d->n++;
}

/* No registered schema of any other id (enumerations come through lookups below). */
static const struct payload_schema *lookup_none(void *ctx, uint64_t domain, uint64_t id)
{
    (void)ctx, (void)domain, (void)id;
    return NULL;
}

static size_t decode(struct payload_schema *s, const void *bytes, size_t len, struct decoded *d,
                     payload_lookup_fn lookup, void *ctx)
{
    memset(d, 0, sizeof *d);
    payload_layout(s, lookup ? lookup : lookup_none, ctx);
    return payload_decode(s, bytes, len, collect, d);
}

#define SCHEMA(list) {.count = sizeof(list) / sizeof(list[0]), .entries = list}

static void entries_without_offsets_are_naturally_aligned(void)
{
    struct payload_entry e[] = {{.type = 12}, {.type = 16}, {.type = 20}, {.type = 75, .array_length = 8}};
    struct payload_schema s = SCHEMA(e);
    struct {
        uint8_t flag;
        uint32_t count;
        double ratio;
        char tag[8];
    } p = {7, 123456, 0.25, "ring"};
    struct decoded d;
    ASSERT_EQ(decode(&s, &p, sizeof p, &d, NULL, NULL), 0);
    ASSERT_EQ(e[1].at, 4);
    ASSERT_EQ(e[2].at, 8);
    ASSERT_EQ(e[3].at, 16);
    ASSERT_EQ(d.n, 4);
    ASSERT_EQ(d.v[0].i, 7);
    ASSERT_EQ(d.v[1].i, 123456);
    ASSERT(d.v[2].type == PAYLOAD_VALUE_REAL && d.v[2].d == 0.25);
    ASSERT_STR_EQ(d.text[3], "ring");
    ASSERT_EQ(d.v[0].array_index, -1);
}

static void pack_align_caps_the_alignment(void)
{
    struct payload_entry e[] = {{.type = 12}, {.type = 16}, {.type = 18}};
    struct payload_schema s = SCHEMA(e);
    s.pack_align = 1;
    uint8_t bytes[13] = {1, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 0);
    ASSERT_EQ(e[1].at, 1);
    ASSERT_EQ(e[2].at, 5);
    ASSERT_EQ(d.v[1].i, 2);
    ASSERT_EQ(d.v[2].i, 3);
}

static void integers_are_sign_extended_or_wrapped(void)
{
    struct payload_entry e[] = {{.type = 11}, {.type = 13, .offset = 2}, {.type = 18, .offset = 8}};
    struct payload_schema s = SCHEMA(e);
    uint8_t bytes[16] = {0xff, 0, 0xfe, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 0);
    ASSERT_EQ(d.v[0].i, -1); /* int8 */
    ASSERT_EQ(d.v[1].i, -2); /* int16 */
    ASSERT_EQ(d.v[2].i, -1); /* uint64 max: an SQLite integer wraps */
}

static void half_and_bfloat16_become_reals(void)
{
    struct payload_entry e[] = {{.type = 42}, {.type = 42}, {.type = 42}, {.type = 50}};
    struct payload_schema s = SCHEMA(e);
    uint16_t bytes[4] = {0x3e00, 0xc000, 0x0001, 0x3fc0}; /* 1.5, -2, 2^-24, bf16 1.5 */
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 0);
    ASSERT(d.v[0].d == 1.5 && d.v[1].d == -2 && d.v[2].d == 0x1p-24 && d.v[3].d == 1.5);
}

static void a_fixed_array_gives_one_value_per_element(void)
{
    struct payload_entry e[] = {
        {.type = 13, .flags = PAYLOAD_ENTRY_ARRAY_FIXED_SIZE, .array_length = 3},
        {.type = 5}};
    struct payload_schema s = SCHEMA(e);
    int16_t a[4] = {10, -20, 30, 0};
    int32_t bytes[3];
    memcpy(bytes, a, 6);
    bytes[2] = 99; /* the int after the 6-byte array, aligned to 4: at 8 */
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 0);
    ASSERT_EQ(d.n, 4);
    ASSERT_EQ(d.v[1].array_index, 1);
    ASSERT_EQ(d.v[1].i, -20);
    ASSERT_EQ(d.v[3].array_index, -1);
    ASSERT_EQ(d.v[3].i, 99);
}

static const struct payload_schema *lookup_ops(void *ctx, uint64_t domain, uint64_t id)
{
    (void)domain;
    const struct payload_schema *ops = ctx;
    return id == ops->id ? ops : NULL;
}

static void an_enumeration_gives_its_value_and_name(void)
{
    struct payload_enum_value values[] = {{0, 100}, {2, 102}};
    struct payload_schema ops = {.id = PAYLOAD_SCHEMA_ID_STATIC_START + 14, .is_enum = 1,
                                 .static_size = 4, .count = 2, .values = values};
    struct payload_entry e[] = {{.type = 22}, {.type = PAYLOAD_SCHEMA_ID_STATIC_START + 14, .offset = 8},
                                {.type = PAYLOAD_SCHEMA_ID_STATIC_START + 14, .offset = 12}};
    struct payload_schema s = SCHEMA(e);
    uint32_t bytes[4] = {4096, 0, 2, 7};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, lookup_ops, &ops), 0);
    ASSERT_EQ(d.v[0].i, 4096);
    ASSERT_EQ(d.v[1].i, 2);
    ASSERT_EQ(d.v[1].enum_name_id, 102);
    ASSERT_EQ(d.v[2].i, 7);
    ASSERT_EQ(d.v[2].enum_name_id, 0); /* not a value of the enumeration */
}

static void pointers_are_never_followed_but_keep_the_layout(void)
{
    struct payload_entry e[] = {{.type = 75}, {.type = 5, .flags = PAYLOAD_ENTRY_FLAG_POINTER},
                                {.type = 16}};
    struct payload_schema s = SCHEMA(e);
    uint64_t bytes[3] = {0xdeadbeef, 0xfeedface, 5};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 2);
    ASSERT_EQ(d.n, 1);
    ASSERT_EQ(d.v[0].entry, 2);
    ASSERT_EQ(d.v[0].i, 5);
}

static void after_a_variable_length_only_given_offsets_are_decoded(void)
{
    struct payload_entry e[] = {
        {.type = 5, .flags = 2u << 4 /* zero-terminated */}, {.type = 5}, {.type = 5, .offset = 12}};
    struct payload_schema s = SCHEMA(e);
    int32_t bytes[4] = {1, 0, 0, 42};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 2);
    ASSERT(!e[1].placed);
    ASSERT_EQ(d.n, 1);
    ASSERT_EQ(d.v[0].i, 42);
}

static void values_past_the_recorded_bytes_are_left_out(void)
{
    struct payload_entry e[] = {{.type = 18}, {.type = 22, .offset = 8}};
    struct payload_schema s = SCHEMA(e);
    uint64_t bytes[2] = {77, 1024};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, 12, &d, NULL, NULL), 1); /* cut inside the second */
    ASSERT_EQ(d.n, 1);
    ASSERT_EQ(d.v[0].i, 77);
}

static void unknown_types_stop_the_natural_layout(void)
{
    struct payload_entry e[] = {{.type = 999}, {.type = 5}, {.type = 21}, {.type = 5}};
    struct payload_schema s = SCHEMA(e);
    uint8_t bytes[64] = {0};
    struct decoded d;
    ASSERT_EQ(decode(&s, bytes, sizeof bytes, &d, NULL, NULL), 4);
    ASSERT(e[0].placed && !e[1].placed);
    enum payload_kind kind;
    uint32_t align;
    ASSERT_EQ(payload_type_size(21, &kind, &align), 16); /* long double: laid out, not read */
    ASSERT(kind == PAYLOAD_KIND_NONE && align == 16);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"entries_without_offsets_are_naturally_aligned",
         entries_without_offsets_are_naturally_aligned},
        {"pack_align_caps_the_alignment", pack_align_caps_the_alignment},
        {"integers_are_sign_extended_or_wrapped", integers_are_sign_extended_or_wrapped},
        {"half_and_bfloat16_become_reals", half_and_bfloat16_become_reals},
        {"a_fixed_array_gives_one_value_per_element", a_fixed_array_gives_one_value_per_element},
        {"an_enumeration_gives_its_value_and_name", an_enumeration_gives_its_value_and_name},
        {"pointers_are_never_followed_but_keep_the_layout",
         pointers_are_never_followed_but_keep_the_layout},
        {"after_a_variable_length_only_given_offsets_are_decoded",
         after_a_variable_length_only_given_offsets_are_decoded},
        {"values_past_the_recorded_bytes_are_left_out", values_past_the_recorded_bytes_are_left_out},
        {"unknown_types_stop_the_natural_layout", unknown_types_stop_the_natural_layout},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
