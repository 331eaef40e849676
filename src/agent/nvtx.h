/* What the NVTX module's two files share: nvtx.c (the core injection: domains, categories,
 * strings and every event's hot path) and nvtx_payload.c (the payload extension: payload
 * schemas and enumerations, registered rarely, written once per file as trace records).
 * The payload extension's event functions are nvtx.c's, so that they share its hot path. */
#ifndef LANTERN_AGENT_NVTX_H
#define LANTERN_AGENT_NVTX_H

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"

/* The registry lock (nvtx.c): domains, categories, payload schemas and enumerations. */
void nvtx_registry_lock(void);
void nvtx_registry_unlock(void);
/* Writes every registry entry not yet in the current file (registry lock held). */
void nvtx_emit_registry_locked(void);
/* A domain: what an nvtxDomainHandle_t points to (nvtx.c's registry). */
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

/* nvtx_payload.c, called by nvtx_emit_registry_locked with the writer lock held: writes the
 * schemas and enumerations not yet in the current file. */
void nvtx_payload_emit_locked(struct trace_chunk_builder *b);
/* In a fork child (registry lock held): every schema goes into the child's new file again. */
void nvtx_payload_fork_child(void);

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
