/* NVTX's payload extension (nvToolsExtPayload.h): NVTX calls InitializeInjectionNvtxExtension
 * once per library that uses the extension, and we fill its function slots. Schemas and
 * enumerations (registered rarely: NCCL registers each once) are copied into the registry
 * (nvtx_registry.c), which writes them as TRACE_PAYLOAD_SCHEMA/ENTRY/ENUM/ENUM_VALUE records
 * once per file, so that the importer can decode the payload bytes the events carry (nvtx.c's
 * event functions copy them on the hot path, never looking inside). */
#include "agent/nvtx.h"

#include "agent/agent.h"
#include "agent/clock.h"
#include "trace/format.h"

#include <stddef.h>
#include <stdint.h>

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
