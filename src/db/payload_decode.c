/* NVTX extended payloads through their schemas (payload_decode.h): a table of the predefined
 * entry types, the layout of a schema's entries, and the reading of one payload's values. */
#include "db/payload_decode.h"

#include <string.h>

/* The predefined entry types (nvToolsExtPayload.h's NVTX_PAYLOAD_ENTRY_TYPE_*, plus 90-92 and
 * 128-255 of the extension's earlier headers, which NCCL 2.19-2.21 ship) with their LP64 size
 * and alignment. Types of 16 bytes (long double, 128-bit integers and floats) are laid out
 * but not decoded. */
static const struct payload_type {
    uint16_t first, last; /* a range of type numbers */
    uint8_t size, align;
    enum payload_kind kind;
} payload_types[] = {
    {1, 1, 1, 1, PAYLOAD_KIND_SIGNED},       /* char (signed on x86-64) */
    {2, 2, 1, 1, PAYLOAD_KIND_UNSIGNED},     /* unsigned char */
    {3, 3, 2, 2, PAYLOAD_KIND_SIGNED},       /* short */
    {4, 4, 2, 2, PAYLOAD_KIND_UNSIGNED},     /* unsigned short */
    {5, 5, 4, 4, PAYLOAD_KIND_SIGNED},       /* int */
    {6, 6, 4, 4, PAYLOAD_KIND_UNSIGNED},     /* unsigned int */
    {7, 7, 8, 8, PAYLOAD_KIND_SIGNED},       /* long */
    {8, 8, 8, 8, PAYLOAD_KIND_UNSIGNED},     /* unsigned long */
    {9, 9, 8, 8, PAYLOAD_KIND_SIGNED},       /* long long */
    {10, 10, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* unsigned long long */
    {11, 11, 1, 1, PAYLOAD_KIND_SIGNED},     /* int8 */
    {12, 12, 1, 1, PAYLOAD_KIND_UNSIGNED},   /* uint8 */
    {13, 13, 2, 2, PAYLOAD_KIND_SIGNED},     /* int16 */
    {14, 14, 2, 2, PAYLOAD_KIND_UNSIGNED},   /* uint16 */
    {15, 15, 4, 4, PAYLOAD_KIND_SIGNED},     /* int32 */
    {16, 16, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* uint32 */
    {17, 17, 8, 8, PAYLOAD_KIND_SIGNED},     /* int64 */
    {18, 18, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* uint64 */
    {19, 19, 4, 4, PAYLOAD_KIND_FLOAT},      /* float */
    {20, 20, 8, 8, PAYLOAD_KIND_FLOAT},      /* double */
    {21, 21, 16, 16, PAYLOAD_KIND_NONE},     /* long double */
    {22, 22, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* size_t */
    {23, 23, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* an address, as a number */
    {24, 24, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* wchar_t */
    {25, 25, 1, 1, PAYLOAD_KIND_UNSIGNED},   /* char8_t */
    {26, 26, 2, 2, PAYLOAD_KIND_UNSIGNED},   /* char16_t */
    {27, 27, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* char32_t */
    {32, 32, 1, 1, PAYLOAD_KIND_UNSIGNED},   /* a raw byte */
    {33, 34, 16, 16, PAYLOAD_KIND_NONE},     /* 128-bit integers */
    {42, 42, 2, 2, PAYLOAD_KIND_HALF},       /* float16 */
    {43, 43, 4, 4, PAYLOAD_KIND_FLOAT},      /* float32 */
    {44, 44, 8, 8, PAYLOAD_KIND_FLOAT},      /* float64 */
    {45, 45, 16, 16, PAYLOAD_KIND_NONE},     /* float128 */
    {50, 50, 2, 2, PAYLOAD_KIND_BF16},       /* bfloat16 */
    {52, 52, 4, 4, PAYLOAD_KIND_FLOAT},      /* tf32, held in a float */
    {68, 69, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* NVTX category, ARGB color */
    {70, 70, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* scope id */
    {71, 71, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* pid (32 bits) */
    {72, 72, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* pid (64 bits) */
    {73, 73, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* tid (32 bits) */
    {74, 74, 8, 8, PAYLOAD_KIND_UNSIGNED},   /* tid (64 bits) */
    {75, 76, 8, 8, PAYLOAD_KIND_POINTER},    /* char *, UTF-8 char * (embedded: see layout) */
    {77, 78, 8, 8, PAYLOAD_KIND_POINTER},    /* UTF-16 and UTF-32 strings */
    {80, 80, 8, 8, PAYLOAD_KIND_POINTER},    /* nvtxStringHandle_t */
    {90, 92, 4, 4, PAYLOAD_KIND_UNSIGNED},   /* earlier headers: category, color type, color */
    {128, 255, 8, 8, PAYLOAD_KIND_UNSIGNED}, /* earlier headers: timestamps */
};

uint32_t payload_type_size(uint64_t type, enum payload_kind *kind, uint32_t *align)
{
    for (size_t i = 0; i < sizeof payload_types / sizeof payload_types[0]; i++) {
        const struct payload_type *t = &payload_types[i];
        if (type >= t->first && type <= t->last) {
            *kind = t->kind;
            *align = t->align;
            return t->size;
        }
    }
    *kind = PAYLOAD_KIND_NONE;
    *align = 1;
    return 0;
}

/* C strings of 1-byte characters (char *, UTF-8): embedded in the payload when they have a
 * length and no pointer flag, as the extension's header defines a fixed-size string. */
static int payload_is_narrow_string(uint64_t type)
{
    return type == 75 || type == 76;
}

/* One entry's kind, element size, count and alignment; size 0 when unknown. */
static void payload_entry_shape(struct payload_entry *e, payload_lookup_fn lookup, void *ctx,
                                uint64_t domain, uint32_t *align)
{
    uint64_t array = e->flags & PAYLOAD_ENTRY_ARRAY_MASK;
    e->elements = 1;
    e->enumeration = NULL;
    if (e->flags & PAYLOAD_ENTRY_FLAG_POINTER) {
        e->kind = PAYLOAD_KIND_POINTER;
        e->size = *align = 8;
        return;
    }
    if (payload_is_narrow_string(e->type) && e->array_length && !array) {
        e->kind = PAYLOAD_KIND_TEXT;
        e->size = *align = 1;
        e->elements = (uint32_t)(e->array_length < UINT32_MAX ? e->array_length : UINT32_MAX);
        return;
    }
    e->size = payload_type_size(e->type, &e->kind, align);
    if (!e->size && e->type >= PAYLOAD_SCHEMA_ID_STATIC_START) {
        const struct payload_schema *ref = lookup(ctx, domain, e->type);
        if (ref && ref->is_enum) {
            e->enumeration = ref;
            e->kind = PAYLOAD_KIND_UNSIGNED;
            e->size = ref->static_size >= 1 && ref->static_size <= 8 ? (uint32_t)ref->static_size : 4;
            *align = e->size;
        } else if (ref && ref->static_size) { /* a nested schema: laid out, not decoded */
            e->kind = PAYLOAD_KIND_NONE;
            e->size = (uint32_t)(ref->static_size < UINT32_MAX ? ref->static_size : 0);
            *align = 8;
        }
    }
    if (!array || !e->size)
        return;
    if (array != PAYLOAD_ENTRY_ARRAY_FIXED_SIZE || !e->array_length) {
        e->size = 0; /* a variable length: the entries after it have no natural offset */
        e->kind = PAYLOAD_KIND_NONE;
        return;
    }
    e->elements = (uint32_t)(e->array_length < 4096 ? e->array_length : 4096);
    if (e->kind == PAYLOAD_KIND_SIGNED && e->size == 1 && (e->type == 1 || e->type == 25))
        e->kind = PAYLOAD_KIND_TEXT; /* char[N] */
    if (e->kind == PAYLOAD_KIND_TEXT) {
        e->elements *= e->size;
        e->size = 1;
    }
}

void payload_layout(struct payload_schema *s, payload_lookup_fn lookup, void *ctx)
{
    uint64_t next = 0; /* where the previous entry ended; known while `flowing` */
    int flowing = 1;
    for (size_t i = 0; i < s->count; i++) {
        struct payload_entry *e = &s->entries[i];
        uint32_t align = 1;
        payload_entry_shape(e, lookup, ctx, s->domain, &align);
        if (s->pack_align && align > s->pack_align)
            align = (uint32_t)s->pack_align;
        if (e->offset || i == 0) {
            e->at = e->offset;
            e->placed = 1;
        } else if (flowing) {
            e->at = (next + align - 1) / align * align;
            e->placed = 1;
        } else {
            e->placed = 0;
        }
        flowing = e->placed && e->size;
        if (flowing)
            next = e->at + (uint64_t)e->size * e->elements;
    }
    s->laid_out = 1;
}

static uint64_t payload_read_le(const uint8_t *p, uint32_t size)
{
    uint64_t v = 0;
    for (uint32_t i = size; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static double payload_half(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) { /* infinity, NaN */
        bits = sign | 0x7f800000u | mant << 13;
    } else if (exp) {
        bits = sign | (exp + 112) << 23 | mant << 13;
    } else if (mant) { /* subnormal: normalise */
        exp = 113;
        while (!(mant & 0x400)) {
            mant <<= 1;
            exp--;
        }
        bits = sign | exp << 23 | (mant & 0x3ff) << 13;
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* One element's value into v; 0 when its kind gives none. */
static int payload_read(const struct payload_entry *e, const uint8_t *p, struct payload_value *v)
{
    uint64_t raw = payload_read_le(p, e->size);
    switch (e->kind) {
    case PAYLOAD_KIND_SIGNED: {
        unsigned shift = 64 - 8 * e->size;
        v->type = PAYLOAD_VALUE_INT;
        v->i = (int64_t)(raw << shift) >> shift;
        return 1;
    }
    case PAYLOAD_KIND_UNSIGNED:
        v->type = PAYLOAD_VALUE_INT;
        v->i = (int64_t)raw;
        return 1;
    case PAYLOAD_KIND_FLOAT: {
        v->type = PAYLOAD_VALUE_REAL;
        if (e->size == 4) {
            uint32_t bits = (uint32_t)raw;
            float f;
            memcpy(&f, &bits, sizeof f);
            v->d = f;
        } else {
            memcpy(&v->d, &raw, sizeof v->d);
        }
        return 1;
    }
    case PAYLOAD_KIND_HALF:
        v->type = PAYLOAD_VALUE_REAL;
        v->d = payload_half((uint16_t)raw);
        return 1;
    case PAYLOAD_KIND_BF16: {
        uint32_t bits = (uint32_t)raw << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        v->type = PAYLOAD_VALUE_REAL;
        v->d = f;
        return 1;
    }
    default:
        return 0;
    }
}

static int64_t payload_enum_name(const struct payload_schema *en, uint64_t value)
{
    for (size_t i = 0; i < en->count; i++)
        if (en->values[i].value == value)
            return en->values[i].name_id;
    return 0;
}

size_t payload_decode(const struct payload_schema *s, const uint8_t *bytes, size_t len,
                      void (*emit)(void *ctx, const struct payload_value *v), void *ctx)
{
    size_t missing = 0;
    for (size_t i = 0; i < s->count; i++) {
        const struct payload_entry *e = &s->entries[i];
        uint64_t span = (uint64_t)e->size * e->elements;
        if (!e->placed || !e->size || e->kind == PAYLOAD_KIND_NONE ||
            e->kind == PAYLOAD_KIND_POINTER || e->at > len || span > len - e->at) {
            missing++;
            continue;
        }
        const uint8_t *p = bytes + e->at;
        struct payload_value v = {.entry = i, .array_index = -1};
        if (e->kind == PAYLOAD_KIND_TEXT) {
            const uint8_t *nul = memchr(p, 0, e->elements);
            v.type = PAYLOAD_VALUE_TEXT;
            v.text = p;
            v.text_len = nul ? (size_t)(nul - p) : e->elements;
            emit(ctx, &v);
            continue;
        }
        for (uint32_t k = 0; k < e->elements; k++) {
            v.array_index = e->elements > 1 || (e->flags & PAYLOAD_ENTRY_ARRAY_MASK) ? (int64_t)k : -1;
            if (!payload_read(e, p + (uint64_t)k * e->size, &v))
                continue;
            v.enum_name_id = e->enumeration ? payload_enum_name(e->enumeration, (uint64_t)v.i) : 0;
            emit(ctx, &v);
        }
    }
    return missing;
}
