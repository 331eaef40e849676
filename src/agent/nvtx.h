/* What the NVTX module's files share. nvtx_registry.c, at the bottom, keeps what is
 * registered (domains, categories, strings, payload schemas and enumerations) and writes it
 * once per file; nvtx.c (the core injection: every event's hot path) and nvtx_payload.c (the
 * payload extension's entry point) call into it. The payload extension's event functions are
 * nvtx.c's, so that they share its hot path. */
#ifndef LANTERN_AGENT_NVTX_H
#define LANTERN_AGENT_NVTX_H

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "trace/codec.h"
#include "trace/format.h"

/* The registry lock (nvtx_registry.c): domains, categories, payload schemas and enumerations. */
void nvtx_registry_lock(void);
void nvtx_registry_unlock(void);
/* Writes every registry entry not yet in the current file (registry lock held). */
void nvtx_emit_registry_locked(void);
/* A domain: what an nvtxDomainHandle_t points to (the registry's). */
struct nvtx_domain {
    uint32_t id;
    int emitted; /* TRACE_DOMAIN is in the current file */
    char *name;  /* UTF-8 */
    struct nvtx_domain *next;
};

/* A domain handle's id in the trace (0: NVTX's default domain, a NULL handle). */
static inline uint32_t nvtx_domain_id(nvtxDomainHandle_t domain)
{
    return domain ? ((const struct nvtx_domain *)domain)->id : 0;
}

/* Registered strings stay reachable from here: their handles are valid until exit. A use
 * costs what a literal costs: the thread's string cache knows it after the first. */
struct nvtx_string {
    char *bytes; /* UTF-8, owned, never freed */
    size_t len;
    struct nvtx_string *next;
};

/* The registry's entries, made by NVTX's callbacks (nvtx.c): each takes the registry lock,
 * and writes the new entry to the file at once. */
nvtxDomainHandle_t nvtx_domain_create(const char *ascii, const wchar_t *wide);
void nvtx_name_category(nvtxDomainHandle_t domain, uint32_t category, const char *ascii,
                        const wchar_t *wide);
nvtxStringHandle_t nvtx_register_string(const char *ascii, const wchar_t *wide);
/* Names a thing (nvtx_names.c): kind TRACE_RESOURCE_* with its handle, or
 * NVTX_NAMED_OS_THREAD with the OS tid; written to the file at once as a definition, the
 * table capped (TRACE_TABLE_NAMES). */
#define NVTX_NAMED_OS_THREAD 0u
void nvtx_name_thing(uint32_t kind, uint64_t handle, const char *ascii, const wchar_t *wide);
/* A heap UTF-8 copy of an ASCII (UTF-8) or wide string; NULL if out of memory. */
char *nvtx_utf8_dup(const char *ascii, const wchar_t *wide, size_t *len_out);

/* ---- payload schemas and enumerations (registered by nvtx_payload.c) ---- */

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

/* The entries (values) of s that are kept: at most TRACE_PAYLOAD_ENTRIES_MAX. */
static inline size_t nvtx_schema_kept(const struct nvtx_schema *s)
{
    return s->count < TRACE_PAYLOAD_ENTRIES_MAX ? (size_t)s->count : TRACE_PAYLOAD_ENTRIES_MAX;
}

char *nvtx_strdup_or_null(const char *s);
/* A registration of count entries (values) in domain, its kept items zeroed for the caller to
 * fill; NULL when out of memory. */
struct nvtx_schema *nvtx_schema_new(nvtxDomainHandle_t domain, int is_enum, const char *name,
                                    uint64_t count);
/* Appends s (from nvtx_schema_new) to the registry and writes it to the file; returns its id
 * (id: the registration's own, used when id_given and valid). */
uint64_t nvtx_schema_add(struct nvtx_schema *s, int id_given, uint64_t id);

/* The payload extension's event functions (nvToolsExtPayload.h's nvtxRangePushPayload, ...):
 * events without a message whose payloads are recorded as an EXT payload's are. */
int nvtx_range_push_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                            size_t count);
int nvtx_range_pop_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                           size_t count);
nvtxRangeId_t nvtx_range_start_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                                       size_t count);
void nvtx_range_end_payload(nvtxDomainHandle_t domain, nvtxRangeId_t id,
                            const nvtxPayloadData_t *data, size_t count);
void nvtx_mark_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data, size_t count);

#endif
