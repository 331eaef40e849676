/* NVTX's payload extension (nvToolsExtPayload.h): NVTX calls InitializeInjectionNvtxExtension
 * once per library that uses the extension, and we fill its function slots. Schemas and
 * enumerations (registered rarely: NCCL registers each once) are copied here under the
 * registry lock and written as TRACE_PAYLOAD_SCHEMA/ENTRY/ENUM/ENUM_VALUE records once per
 * file, so that the importer can decode the payload bytes the events carry (nvtx.c copies
 * them on the hot path, never looking inside). */
#include "agent/nvtx.h"

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/writer.h"
#include "trace/records.h"

#include <stdlib.h>
#include <string.h>

/* A process registers a handful of schemas (NCCL: 15); past this many something registers
 * in a loop, and the registry would grow without bound. */
#define NVTX_SCHEMAS_MAX 4096u

/* A schema's entry, or an enumeration's value (is_enum: type = value, flags = is_flag). */
struct nvtx_payload_item {
    char *name, *description;
    uint64_t flags, type, array_length, offset;
};

struct nvtx_schema {
    int is_enum;
    int emitted; /* its records are in the current file */
    uint32_t domain;
    uint64_t id, schema_type, flags, static_size, pack_align;
    uint64_t count; /* entries (values) registered; at most TRACE_PAYLOAD_ENTRIES_MAX kept */
    char *name;
    struct nvtx_payload_item *items;
    struct nvtx_schema *next;
};

/* Guarded by the registry lock (nvtx.h). */
static struct nvtx_schema *nvtx_schemas, **nvtx_schemas_tail = &nvtx_schemas;
static unsigned nvtx_schema_count;
static uint64_t nvtx_next_dynamic_id = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;

static char *nvtx_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The entries (values) of s that are kept: at most TRACE_PAYLOAD_ENTRIES_MAX. */
static size_t nvtx_schema_kept(const struct nvtx_schema *s)
{
    return s->count < TRACE_PAYLOAD_ENTRIES_MAX ? (size_t)s->count : TRACE_PAYLOAD_ENTRIES_MAX;
}

/* A registration of count entries (values) in domain, its kept items zeroed for the caller to
 * fill; NULL when out of memory. Without memory for the items it is recorded without its
 * entries (count 0): its payloads stay raw bytes. */
static struct nvtx_schema *nvtx_schema_new(nvtxDomainHandle_t domain, int is_enum, const char *name,
                                           uint64_t count)
{
    struct nvtx_schema *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->is_enum = is_enum;
    s->domain = nvtx_domain_id(domain);
    s->name = nvtx_strdup_or_null(name);
    s->count = count;
    if (count && !(s->items = calloc(nvtx_schema_kept(s), sizeof(*s->items))))
        s->count = 0;
    return s;
}

static void nvtx_schema_free(struct nvtx_schema *s)
{
    for (size_t i = 0; i < nvtx_schema_kept(s); i++) {
        free(s->items[i].name);
        free(s->items[i].description);
    }
    free(s->items);
    free(s->name);
    free(s);
}

/* The id a registration gets: its own static id when it gave a valid one, else a new one
 * from the dynamic range, as the extension's header asks of a tool. */
static uint64_t nvtx_schema_id(int given, uint64_t id)
{
    if (given && id >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START &&
        id < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START)
        return id;
    return nvtx_next_dynamic_id++;
}

/* Appends s (from nvtx_schema_new) and writes it to the file; returns its id. A static id
 * registered again in its domain (NCCL registers its enumeration per communicator) keeps its
 * first registration. */
static uint64_t nvtx_schema_add(struct nvtx_schema *s, int id_given, uint64_t id)
{
    static int warned;
    nvtx_registry_lock();
    s->id = nvtx_schema_id(id_given, id);
    uint64_t result = s->id;
    struct nvtx_schema *known = nvtx_schemas;
    while (known && !(known->domain == s->domain && known->id == s->id))
        known = known->next;
    if (known || nvtx_schema_count >= NVTX_SCHEMAS_MAX) {
        if (!known)
            agent_table_cut(TRACE_TABLE_PAYLOAD_SCHEMAS);
        if (!known && !warned++)
            agent_warn("more than %u NVTX payload schemas; the payloads of later ones are kept "
                       "undecoded",
                       NVTX_SCHEMAS_MAX);
        nvtx_schema_free(s);
    } else {
        nvtx_schema_count++;
        *nvtx_schemas_tail = s;
        nvtx_schemas_tail = &s->next;
        nvtx_emit_registry_locked();
    }
    nvtx_registry_unlock();
    return result;
}

static uint64_t nvtx_payload_schema_register(nvtxDomainHandle_t domain,
                                             const nvtxPayloadSchemaAttr_t *attr)
{
    if (!attr)
        return 0;
    uint64_t mask = attr->fieldMask;
    int has_entries = (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) &&
                      (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) && attr->entries;
    struct nvtx_schema *s =
        nvtx_schema_new(domain, 0, (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME) ? attr->name : NULL,
                        has_entries ? attr->numEntries : 0);
    if (!s)
        return 0;
    s->schema_type = (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE) ? attr->type : 0;
    s->flags = (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_FLAGS) ? attr->flags : 0;
    s->static_size =
        (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE) ? attr->payloadStaticSize : 0;
    s->pack_align = (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ALIGNMENT) ? attr->packAlign : 0;
    for (size_t i = 0; i < nvtx_schema_kept(s); i++) {
        const nvtxPayloadSchemaEntry_t *e = &attr->entries[i];
        s->items[i] = (struct nvtx_payload_item){
            .name = nvtx_strdup_or_null(e->name),
            .description = nvtx_strdup_or_null(e->description),
            .flags = e->flags,
            .type = e->type,
            .array_length = e->arrayOrUnionDetail,
            .offset = e->offset,
        };
    }
    return nvtx_schema_add(s, (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) != 0,
                           attr->schemaId);
}

static uint64_t nvtx_payload_enum_register(nvtxDomainHandle_t domain,
                                           const nvtxPayloadEnumAttr_t *attr)
{
    if (!attr)
        return 0;
    uint64_t mask = attr->fieldMask;
    int has_entries = (mask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) &&
                      (mask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES) && attr->entries;
    struct nvtx_schema *s =
        nvtx_schema_new(domain, 1, (mask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NAME) ? attr->name : NULL,
                        has_entries ? attr->numEntries : 0);
    if (!s)
        return 0;
    s->static_size = (mask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE) ? attr->sizeOfEnum : 0;
    for (size_t i = 0; i < nvtx_schema_kept(s); i++)
        s->items[i] = (struct nvtx_payload_item){
            .name = nvtx_strdup_or_null(attr->entries[i].name),
            .type = attr->entries[i].value,
            .flags = attr->entries[i].isFlag != 0,
        };
    return nvtx_schema_add(s, (mask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) != 0,
                           attr->schemaId);
}

static uint64_t nvtx_intern(const char *s)
{
    return s ? writer_intern(s, strlen(s)) : 0;
}

/* One schema's records: the schema, then its entries (or the enumeration, then its values). */
static void nvtx_schema_emit(struct trace_chunk_builder *b, const struct nvtx_schema *s)
{
    size_t kept = nvtx_schema_kept(s);
    if (s->is_enum) {
        struct trace_payload_enum r = {.domain = s->domain,
                                       .schema_id = s->id,
                                       .name = nvtx_intern(s->name),
                                       .size = s->static_size,
                                       .entry_count = s->count};
        writer_reserve_locked(64);
        trace_put_payload_enum(b, &r);
        for (size_t i = 0; i < kept; i++) {
            struct trace_payload_enum_value v = {.domain = s->domain,
                                                 .schema_id = s->id,
                                                 .index = i,
                                                 .name = nvtx_intern(s->items[i].name),
                                                 .value = s->items[i].type,
                                                 .is_flag = s->items[i].flags};
            writer_reserve_locked(72);
            trace_put_payload_enum_value(b, &v);
        }
        return;
    }
    struct trace_payload_schema r = {.domain = s->domain,
                                     .schema_id = s->id,
                                     .name = nvtx_intern(s->name),
                                     .schema_type = s->schema_type,
                                     .flags = s->flags,
                                     .static_size = s->static_size,
                                     .pack_align = s->pack_align,
                                     .entry_count = s->count};
    writer_reserve_locked(96);
    trace_put_payload_schema(b, &r);
    for (size_t i = 0; i < kept; i++) {
        const struct nvtx_payload_item *e = &s->items[i];
        struct trace_payload_entry v = {.domain = s->domain,
                                        .schema_id = s->id,
                                        .index = i,
                                        .name = nvtx_intern(e->name),
                                        .type = e->type,
                                        .flags = e->flags,
                                        .array_length = e->array_length,
                                        .offset = e->offset,
                                        .description = nvtx_intern(e->description)};
        writer_reserve_locked(104);
        trace_put_payload_entry(b, &v);
    }
}

void nvtx_payload_emit_locked(struct trace_chunk_builder *b)
{
    for (struct nvtx_schema *s = nvtx_schemas; s; s = s->next) {
        if (s->emitted)
            continue;
        nvtx_schema_emit(b, s);
        s->emitted = 1;
    }
}

void nvtx_payload_fork_child(void)
{
    for (struct nvtx_schema *s = nvtx_schemas; s; s = s->next)
        s->emitted = 0;
}

/* ---- the entry point ---- */

#define SLOT(f) ((intptr_t)(f))

/* The functions we handle, by callback id; the rest stay NVTX's no-ops (nvtxDomainIsEnabled
 * then answers 1, as for a tool that does not handle it). */
static const intptr_t nvtx_payload_slots[] = {
    [NVTX3EXT_CBID_nvtxPayloadSchemaRegister] = SLOT(nvtx_payload_schema_register),
    [NVTX3EXT_CBID_nvtxPayloadEnumRegister] = SLOT(nvtx_payload_enum_register),
    [NVTX3EXT_CBID_nvtxMarkPayload] = SLOT(nvtx_mark_payload),
    [NVTX3EXT_CBID_nvtxRangePushPayload] = SLOT(nvtx_range_push_payload),
    [NVTX3EXT_CBID_nvtxRangePopPayload] = SLOT(nvtx_range_pop_payload),
    [NVTX3EXT_CBID_nvtxRangeStartPayload] = SLOT(nvtx_range_start_payload),
    [NVTX3EXT_CBID_nvtxRangeEndPayload] = SLOT(nvtx_range_end_payload),
};

/* Called by each NVTX instance for each extension module it uses (payload, counters, memory),
 * possibly from several threads. We take the payload module of major version 1 (compatId
 * 0x01xx: the _v1 structs, unchanged from NCCL 2.19's headers to CUDA 13's); returning 0
 * leaves any other module on NVTX's no-op path. */
__attribute__((visibility("default"))) int
InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    clock_init();
    if (!info || info->structSize < offsetof(nvtxExtModuleInfo_t, segments) + sizeof(void *) ||
        info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || (info->compatId >> 8) != 1 ||
        info->segmentsCount < 1 || !info->segments || !info->segments[0].functionSlots)
        return 0;
    if (agent_init(TRACE_FLAG_NVTX) < 0)
        return 0;
    nvtxExtModuleSegment_t *segment = &info->segments[0];
    size_t n = sizeof(nvtx_payload_slots) / sizeof(nvtx_payload_slots[0]);
    for (size_t i = 0; i < n && i < segment->slotCount; i++)
        if (nvtx_payload_slots[i])
            segment->functionSlots[i] = nvtx_payload_slots[i];
    return 1;
}
