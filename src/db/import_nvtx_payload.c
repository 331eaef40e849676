/* NVTX extended payloads into the database (docs/schema.md, "NVTX extended payloads"): each
 * registered schema and enumeration (records 30-33) becomes a row with its entries, kept in
 * memory for the file; each payload (record 34) becomes an nvtx_payloads row of the range or
 * mark its event made or ended, with its bytes, and its values decoded through the schema
 * (payload_decode.c) into nvtx_payload_values. A payload of a schema the file never
 * registered keeps its bytes only, with one warning per schema. */
#include "db/import_nvtx_payload.h"

#include "common/index_map.h"
#include "common/u64_map.h"
#include "db/payload_decode.h"
#include "trace/records.h"

#include <errno.h>
#include <inttypes.h>

enum {
    SLOT_SCHEMA = NVTX_PAYLOAD_SLOT_FIRST,
    SLOT_ENTRY,
    SLOT_ENUM_VALUE,
    SLOT_PAYLOAD,
    SLOT_VALUE,
};

/* The schema ids NVTX predefines for a payload: below them, a payload's schema id is an entry
 * type (one value of it); these two mean raw bytes. */
#define PAYLOAD_SCHEMA_REFERENCED 1022u
#define PAYLOAD_SCHEMA_RAW 1023u

struct file_schema {
    struct payload_schema s;
    int64_t row; /* nvtx_payload_schemas.id */
};

struct nvtx_payloads {
    struct import_file *file;
    const struct id_vec *domains;
    struct file_schema **schemas; /* every registration of the file, in order */
    size_t nschemas, cap;
    struct u64_map by_key;  /* schema_key -> index in schemas + 1 (the latest registration) */
    struct u64_map warned;  /* schema_key of payloads without a schema, warned about */
    struct {
        uint64_t thread_idx, domain;
        int64_t range_id, mark_id;
    } owner;
    struct {
        int64_t payload_id, range_id, mark_id;
        const struct payload_schema *schema;
    } decoding;
};

/* The map's key: unique for domains below 2^15 and ids below 2^48 (static ids are below 2^32,
 * the agent's dynamic ones count up from 2^32); the lookup checks, so others only cost a walk. */
static uint64_t schema_key(uint64_t domain, uint64_t id)
{
    return ((domain & 0x7fffu) << 48 | (id & ((1ull << 48) - 1))) + 1;
}

static struct file_schema *schema_find(struct nvtx_payloads *p, uint64_t domain, uint64_t id)
{
    uint64_t *at = u64_map_find(&p->by_key, schema_key(domain, id));
    if (at && *at <= p->nschemas) {
        struct file_schema *fs = p->schemas[*at - 1];
        if (fs->s.domain == domain && fs->s.id == id)
            return fs;
    }
    for (size_t i = p->nschemas; i-- > 0;)
        if (p->schemas[i]->s.domain == domain && p->schemas[i]->s.id == id)
            return p->schemas[i];
    return NULL;
}

static const struct payload_schema *schema_lookup(void *ctx, uint64_t domain, uint64_t id)
{
    struct file_schema *fs = schema_find(ctx, domain, id);
    return fs ? &fs->s : NULL;
}

struct nvtx_payloads *nvtx_payloads_open(struct import_file *f, const struct id_vec *domains)
{
    struct nvtx_payloads *p = calloc(1, sizeof *p);
    if (p) {
        p->file = f;
        p->domains = domains;
    }
    return p;
}

void nvtx_payloads_close(struct nvtx_payloads *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nschemas; i++) {
        free(p->schemas[i]->s.entries);
        free(p->schemas[i]->s.values);
        free(p->schemas[i]);
    }
    free(p->schemas);
    u64_map_release(&p->by_key);
    u64_map_release(&p->warned);
    free(p);
}

void nvtx_payloads_owner(struct nvtx_payloads *p, uint64_t thread_idx, uint64_t file_domain,
                         int64_t range_id, int64_t mark_id)
{
    if (!p)
        return;
    p->owner.thread_idx = thread_idx;
    p->owner.domain = file_domain;
    p->owner.range_id = range_id;
    p->owner.mark_id = mark_id;
}

static int64_t domain_row(struct nvtx_payloads *p, uint64_t file_domain)
{
    return file_domain ? id_vec_get(p->domains, file_domain) : 0;
}

/* A registration's entries (or values), as many as recorded, at most the agent's limit: a
 * damaged count must not allocate more. */
static size_t kept_count(uint64_t entry_count)
{
    return entry_count < TRACE_PAYLOAD_ENTRIES_MAX ? (size_t)entry_count
                                                   : TRACE_PAYLOAD_ENTRIES_MAX;
}

/* A new registration, a schema or an enumeration as s says (its entries or values to come in
 * the records after it): its row, then the file's latest one of its id. Every layout is redone
 * at its next use, since an enumeration or a nested schema may be what was missing. */
static int schema_add(struct nvtx_payloads *p, struct payload_schema s, uint64_t name,
                      uint64_t flags, uint64_t entry_count)
{
    int rc = -ENOMEM;
    struct file_schema *fs = calloc(1, sizeof *fs);
    s.count = kept_count(entry_count);
    if (!fs || index_reserve((void **)&p->schemas, &p->cap, p->nschemas, sizeof *p->schemas) < 0)
        goto fail;
    if (s.count && s.is_enum)
        s.values = calloc(s.count, sizeof *s.values);
    else if (s.count)
        s.entries = calloc(s.count, sizeof *s.entries);
    if (s.count && !s.values && !s.entries)
        goto fail;
    fs->s = s;
    rc = -EIO;
    sqlite3_stmt *st = import_stmt(
        p->file, SLOT_SCHEMA,
        "INSERT INTO nvtx_payload_schemas(process_id, domain_id, schema_id, is_enum, name_id,"
        " schema_type, flags, static_size, pack_align, entry_count)"
        " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        goto fail;
    import_bind_row(st, IMPORT_INT(import_process(p->file)), IMPORT_INT(domain_row(p, s.domain)),
                    IMPORT_INT(s.id), IMPORT_INT(s.is_enum),
                    IMPORT_NONZERO(import_string(p->file, name)),
                    s.is_enum ? IMPORT_NULL : IMPORT_INT(s.schema_type), IMPORT_INT(flags),
                    IMPORT_INT(s.static_size), IMPORT_INT(s.pack_align), IMPORT_INT(entry_count));
    rc = import_step(p->file, st, "NVTX payload schema: ");
    if (rc < 0)
        goto fail;
    fs->row = sqlite3_last_insert_rowid(import_db(p->file));
    p->schemas[p->nschemas++] = fs;
    for (size_t i = 0; i < p->nschemas; i++)
        p->schemas[i]->s.laid_out = 0;
    u64_map_put(&p->by_key, schema_key(s.domain, s.id), p->nschemas); /* else: a walk */
    return 0;
fail:
    free(s.entries);
    free(s.values);
    free(fs);
    return rc;
}

static int on_schema(struct nvtx_payloads *p, struct trace_fields *fl)
{
    struct trace_payload_schema r;
    trace_get_payload_schema(fl, &r);
    struct payload_schema s = {.domain = r.domain,
                               .id = r.schema_id,
                               .schema_type = r.schema_type,
                               .static_size = r.static_size,
                               .pack_align = r.pack_align};
    return schema_add(p, s, r.name, r.flags, r.entry_count);
}

static int on_enum(struct nvtx_payloads *p, struct trace_fields *fl)
{
    struct trace_payload_enum r;
    trace_get_payload_enum(fl, &r);
    struct payload_schema s = {
        .domain = r.domain, .id = r.schema_id, .is_enum = 1, .static_size = r.size};
    return schema_add(p, s, r.name, 0, r.entry_count);
}

/* The registration (a schema, or with is_enum an enumeration) whose entry or value at index a
 * record gives; NULL, the record counted malformed, when there is no such registration or room. */
static struct file_schema *item_owner(struct nvtx_payloads *p, uint64_t domain, uint64_t id,
                                      int is_enum, uint64_t index)
{
    struct file_schema *fs = schema_find(p, domain, id);
    if (fs && fs->s.is_enum == is_enum && index < fs->s.count)
        return fs;
    import_malformed(p->file);
    return NULL;
}

static int on_entry(struct nvtx_payloads *p, struct trace_fields *fl)
{
    struct trace_payload_entry r;
    trace_get_payload_entry(fl, &r);
    struct file_schema *fs = item_owner(p, r.domain, r.schema_id, 0, r.index);
    if (!fs)
        return 0;
    int64_t name_id = import_string(p->file, r.name),
            description_id = import_string(p->file, r.description);
    fs->s.entries[r.index] = (struct payload_entry){.name_id = name_id,
                                                    .type = r.type,
                                                    .flags = r.flags,
                                                    .array_length = r.array_length,
                                                    .offset = r.offset};
    fs->s.laid_out = 0;
    sqlite3_stmt *st = import_stmt(
        p->file, SLOT_ENTRY,
        "INSERT OR REPLACE INTO nvtx_payload_entries(schema_row, idx, name_id, description_id,"
        " type, flags, array_length, byte_offset) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(fs->row), IMPORT_INT(r.index), IMPORT_NONZERO(name_id),
                    IMPORT_NONZERO(description_id), IMPORT_INT(r.type), IMPORT_INT(r.flags),
                    IMPORT_INT(r.array_length), IMPORT_INT(r.offset));
    return import_step(p->file, st, "NVTX payload schema: ");
}

static int on_enum_value(struct nvtx_payloads *p, struct trace_fields *fl)
{
    struct trace_payload_enum_value r;
    trace_get_payload_enum_value(fl, &r);
    struct file_schema *fs = item_owner(p, r.domain, r.schema_id, 1, r.index);
    if (!fs)
        return 0;
    int64_t name_id = import_string(p->file, r.name);
    fs->s.values[r.index] = (struct payload_enum_value){.value = r.value, .name_id = name_id};
    sqlite3_stmt *st = import_stmt(p->file, SLOT_ENUM_VALUE,
                                   "INSERT OR REPLACE INTO nvtx_payload_enum_values(schema_row,"
                                   " idx, name_id, value, is_flag) VALUES(?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(fs->row), IMPORT_INT(r.index), IMPORT_NONZERO(name_id),
                    IMPORT_INT(r.value), IMPORT_INT(r.is_flag != 0));
    return import_step(p->file, st, "NVTX payload schema: ");
}

/* A decoded value as its column holds it: an integer, a real or text. */
static struct import_value decoded_value(const struct payload_value *v)
{
    if (v->type == PAYLOAD_VALUE_INT)
        return IMPORT_INT(v->i);
    if (v->type == PAYLOAD_VALUE_REAL)
        return IMPORT_REAL(v->d);
    return IMPORT_BYTES_TEXT(trace_bytes(v->text, v->text_len));
}

/* payload_decode's callback: one nvtx_payload_values row. */
static void put_value(void *ctx, const struct payload_value *v)
{
    struct nvtx_payloads *p = ctx;
    sqlite3_stmt *st = import_stmt(
        p->file, SLOT_VALUE,
        "INSERT INTO nvtx_payload_values(payload_id, range_id, mark_id, entry_idx, array_idx,"
        " name_id, value, enum_name_id) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return;
    import_bind_row(st, IMPORT_INT(p->decoding.payload_id), IMPORT_NONZERO(p->decoding.range_id),
                    IMPORT_NONZERO(p->decoding.mark_id), IMPORT_INT(v->entry),
                    v->array_index >= 0 ? IMPORT_INT(v->array_index) : IMPORT_NULL,
                    IMPORT_NONZERO(p->decoding.schema->entries[v->entry].name_id), decoded_value(v),
                    IMPORT_NONZERO(v->enum_name_id));
    import_step(p->file, st, "NVTX payload values: ");
}

/* The schema a payload decodes through: a registered one of its event's domain, or for the
 * ids below 1022 the predefined entry type itself, one value of it (in single). NULL: raw. */
static const struct payload_schema *payload_schema_of(struct nvtx_payloads *p, uint64_t id,
                                                      struct file_schema **registered,
                                                      struct payload_schema *single,
                                                      struct payload_entry *entry)
{
    *registered = schema_find(p, p->owner.domain, id);
    if (*registered) {
        struct payload_schema *s = &(*registered)->s;
        if (s->is_enum)
            return NULL;
        if (!s->laid_out)
            payload_layout(s, schema_lookup, p);
        return s;
    }
    if (id >= PAYLOAD_SCHEMA_REFERENCED)
        return NULL;
    *entry = (struct payload_entry){.type = id};
    *single = (struct payload_schema){.domain = p->owner.domain, .count = 1, .entries = entry};
    payload_layout(single, schema_lookup, p);
    return entry->size ? single : NULL;
}

static void warn_unknown_schema(struct nvtx_payloads *p, uint64_t id)
{
    uint64_t key = schema_key(p->owner.domain, id);
    if (id == PAYLOAD_SCHEMA_REFERENCED || id == PAYLOAD_SCHEMA_RAW ||
        u64_map_find(&p->warned, key))
        return;
    u64_map_put(&p->warned, key, 1);
    import_warn(p->file,
                "%s: NVTX payloads of schema %" PRIu64 " with no registered schema: kept as bytes"
                " (nvtx_payloads.data)",
                import_file_name(p->file), id);
}

static int on_payload(struct nvtx_payloads *p, struct trace_fields *fl)
{
    struct trace_payload r;
    trace_get_payload(fl, &r);
    if ((!p->owner.range_id && !p->owner.mark_id) || p->owner.thread_idx != r.thread_idx)
        return 0; /* its event was not recorded (a pop whose push was dropped) */
    struct file_schema *registered = NULL;
    struct payload_schema single;
    struct payload_entry entry;
    const struct payload_schema *schema =
        payload_schema_of(p, r.schema_id, &registered, &single, &entry);
    if (!schema && !registered)
        warn_unknown_schema(p, r.schema_id);
    sqlite3_stmt *st = import_stmt(
        p->file, SLOT_PAYLOAD,
        "INSERT INTO nvtx_payloads(range_id, mark_id, idx, count, schema_id, schema_row, size,"
        " data, truncated) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_NONZERO(p->owner.range_id), IMPORT_NONZERO(p->owner.mark_id),
                    IMPORT_INT(r.index), IMPORT_INT(r.count), IMPORT_INT(r.schema_id),
                    registered ? IMPORT_INT(registered->row) : IMPORT_NULL, IMPORT_INT(r.size),
                    IMPORT_BLOB(r.bytes), IMPORT_INT(r.bytes.len < r.size));
    int rc = import_step(p->file, st, "NVTX payloads: ");
    if (rc < 0 || !schema)
        return rc;
    p->decoding.payload_id = sqlite3_last_insert_rowid(import_db(p->file));
    p->decoding.range_id = p->owner.range_id;
    p->decoding.mark_id = p->owner.mark_id;
    p->decoding.schema = schema;
    payload_decode(schema, r.bytes.bytes, r.bytes.len, put_value, p);
    return 0;
}

int nvtx_payloads_record(struct nvtx_payloads *p, unsigned type, struct trace_fields *fields)
{
    if (!p)
        return 0;
    switch (type) {
    case TRACE_PAYLOAD_SCHEMA:
        return on_schema(p, fields);
    case TRACE_PAYLOAD_ENTRY:
        return on_entry(p, fields);
    case TRACE_PAYLOAD_ENUM:
        return on_enum(p, fields);
    case TRACE_PAYLOAD_ENUM_VALUE:
        return on_enum_value(p, fields);
    case TRACE_PAYLOAD:
        return on_payload(p, fields);
    default:
        return IMPORT_RECORD_UNKNOWN;
    }
}
