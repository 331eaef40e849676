/* CUPTI activity records -> Lantern trace records. Runs in CUPTI's buffer-completed
 * callback under the writer lock (src/agent/cupti.c) and in CPU tests with records the test
 * builds; the layouts it reads are those of the CUPTI headers it is compiled against. */
#include "agent/cupti_translate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/records.h"

void cupti_translate_init(struct cupti_translate *t, const struct cupti_translate_hooks *hooks,
                          int all_apis)
{
    memset(t, 0, sizeof(*t));
    t->hooks = *hooks;
    t->all_apis = all_apis;
}

void cupti_translate_reset(struct cupti_translate *t)
{
    for (unsigned i = 0; i < CUPTI_NAME_CACHE_SIZE; i++) {
        free(t->names[i].copy);
        t->names[i] = (struct cupti_name_cache_entry){0};
    }
    memset(t->api_name_id, 0, sizeof(t->api_name_id));
    t->rejected = 0;
    t->last_tid = 0;
}

void cupti_translate_release(struct cupti_translate *t)
{
    cupti_translate_reset(t);
}

/* ---- the API allow-list ---------------------------------------------------------------- */

/* Calls that do work on or wait for the GPU, or change what it holds. */
static const char *const api_allowed_words[] = {
    "Launch",   "Memcpy",    "Memset",        "Synchronize",    "Malloc",   "Free",
    "MemAlloc", "HostAlloc", "HostRegister",  "HostUnregister", "Prefetch", "Graph",
    "Stream",   "Event",     "ProfilerStart", "ProfilerStop",
};
/* Queries and attribute reads: cheap, frequent (PyTorch's allocator polls cudaEventQuery
 * and cudaStreamIsCapturing), and not GPU work. They win over the words above. */
static const char *const api_noise_words[] = {"Get", "Query", "IsCapturing", "Attribute"};

int cupti_api_allowed(const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof(api_noise_words) / sizeof(api_noise_words[0]); i++)
        if (strstr(name, api_noise_words[i]))
            return 0;
    for (size_t i = 0; i < sizeof(api_allowed_words) / sizeof(api_allowed_words[0]); i++)
        if (strstr(name, api_allowed_words[i]))
            return 1;
    return 0;
}

/* Runtime names carry the CUDA version that introduced them ("cudaMemcpy_v3020"); reports
 * want "cudaMemcpy". Driver suffixes (_v2, _ptsz) are kept: they name different entry points. */
static size_t api_name_length(const char *name)
{
    size_t len = strlen(name);
    size_t digits = 0;
    while (digits < len && name[len - 1 - digits] >= '0' && name[len - 1 - digits] <= '9')
        digits++;
    if (digits >= 4 && len > digits + 2 && name[len - digits - 1] == 'v' &&
        name[len - digits - 2] == '_')
        return len - digits - 2;
    return len;
}

/* The string id of an API's name, and whether it is recorded; 0 when it is not. */
static int api_lookup(struct cupti_translate *t, int driver, uint32_t cbid, uint64_t *name_id)
{
    int cached = cbid < CUPTI_API_CACHE_SIZE;
    if (cached && t->api_name_id[driver][cbid]) {
        *name_id = t->api_name_id[driver][cbid] - 1;
        return t->api_allowed[driver][cbid] == 1;
    }
    const char *name = t->hooks.api_name(t->hooks.ctx, driver, cbid);
    int allowed = t->all_apis || cupti_api_allowed(name);
    *name_id = allowed && name ? t->hooks.intern(t->hooks.ctx, name, api_name_length(name)) : 0;
    if (cached) {
        t->api_name_id[driver][cbid] = *name_id + 1;
        t->api_allowed[driver][cbid] = allowed ? 1 : 2;
    }
    return allowed;
}

/* ---- kernel names ---------------------------------------------------------------------- */

static uint64_t name_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static uint64_t kernel_name_id(struct cupti_translate *t, const char *name)
{
    if (!name)
        return 0;
    struct cupti_name_cache_entry *e = &t->names[name_hash(name) % CUPTI_NAME_CACHE_SIZE];
    if (e->key == name && e->copy && strcmp(e->copy, name) == 0)
        return e->name_id;
    uint64_t id = t->hooks.intern(t->hooks.ctx, name, strlen(name));
    /* A failed copy only costs a cache miss next time. */
    free(e->copy);
    *e = (struct cupti_name_cache_entry){name, strdup(name), id};
    return id;
}

/* ---- one record per kind --------------------------------------------------------------- */

static int bad_times(struct cupti_translate *t, uint64_t start, uint64_t end)
{
    if (start && end && end >= start)
        return 0;
    t->rejected++;
    return 1;
}

/* An encoder's result (0, or -1 when the chunk had no room) as the translator's. */
static int finish(int put)
{
    return put < 0 ? CUPTI_NO_ROOM : CUPTI_TRANSLATED;
}

/* The fields every GPU operation record (kernel, copy, set) starts with, from CUPTI's
 * records, which name them alike. */
#define GPU_OP_FIELDS(a)                                                                           \
    .device = (a)->deviceId, .context = (a)->contextId, .stream = (a)->streamId,                   \
    .correlation = (a)->correlationId, .start = (a)->start, .end = (a)->end

/* What CUPTI's MEMCPY and MEMCPY2 (peer) records share, by the same names. */
#define MEMCPY_FIELDS(c)                                                                           \
    GPU_OP_FIELDS(c), .copy_kind = (c)->copyKind, .bytes = (c)->bytes, .src_kind = (c)->srcKind,   \
                      .dst_kind = (c)->dstKind,                                                    \
                      .async = ((c)->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0

static unsigned kernel_launch_type(const CUpti_ActivityKernel10 *k)
{
    if (k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE)
        return TRACE_CUDA_LAUNCH_COOPERATIVE;
    if (k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE)
        return TRACE_CUDA_LAUNCH_COOPERATIVE_MULTI_DEVICE;
    if ((uint64_t)k->clusterX * k->clusterY * k->clusterZ > 1)
        return TRACE_CUDA_LAUNCH_CLUSTER;
    return TRACE_CUDA_LAUNCH_REGULAR;
}

static int put_kernel(struct cupti_translate *t, struct trace_chunk_builder *b,
                      const CUpti_ActivityKernel10 *k)
{
    if (bad_times(t, k->start, k->end))
        return CUPTI_REJECTED;
    struct trace_cuda_kernel r = {
        GPU_OP_FIELDS(k),
        .name = kernel_name_id(t, k->name),
        .demangled = 0, /* left to the importer */
        .grid_x = (uint32_t)k->gridX,
        .grid_y = (uint32_t)k->gridY,
        .grid_z = (uint32_t)k->gridZ,
        .block_x = (uint32_t)k->blockX,
        .block_y = (uint32_t)k->blockY,
        .block_z = (uint32_t)k->blockZ,
        .cluster_x = k->clusterX,
        .cluster_y = k->clusterY,
        .cluster_z = k->clusterZ,
        .registers_per_thread = k->registersPerThread,
        .static_smem = (uint32_t)k->staticSharedMemory,
        .dynamic_smem = (uint32_t)k->dynamicSharedMemory,
        .local_mem_per_thread = k->localMemoryPerThread,
        .launch_type = kernel_launch_type(k),
        .graph_id = k->graphId,
        .graph_node_id = k->graphNodeId,
    };
    return finish(trace_put_cuda_kernel(b, &r));
}

static int put_memcpy(struct cupti_translate *t, struct trace_chunk_builder *b,
                      const CUpti_ActivityMemcpy6 *c)
{
    if (bad_times(t, c->start, c->end))
        return CUPTI_REJECTED;
    struct trace_cuda_memcpy r = {
        MEMCPY_FIELDS(c),
        .src_device = c->deviceId, /* a copy within one device: source and destination */
        .dst_device = c->deviceId,
        .graph_node_id = c->graphNodeId,
    };
    return finish(trace_put_cuda_memcpy(b, &r));
}

static int put_memcpy_peer(struct cupti_translate *t, struct trace_chunk_builder *b,
                           const CUpti_ActivityMemcpyPtoP4 *c)
{
    if (bad_times(t, c->start, c->end))
        return CUPTI_REJECTED;
    struct trace_cuda_memcpy r = {
        MEMCPY_FIELDS(c),
        .src_device = c->srcDeviceId,
        .dst_device = c->dstDeviceId,
        .graph_node_id = c->graphNodeId,
    };
    return finish(trace_put_cuda_memcpy(b, &r));
}

static int put_memset(struct cupti_translate *t, struct trace_chunk_builder *b,
                      const CUpti_ActivityMemset4 *s)
{
    if (bad_times(t, s->start, s->end))
        return CUPTI_REJECTED;
    struct trace_cuda_memset r = {
        GPU_OP_FIELDS(s),
        .bytes = s->bytes,
        .value = s->value,
        .mem_kind = s->memoryKind,
        .async = (s->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0,
        .graph_node_id = s->graphNodeId,
    };
    return finish(trace_put_cuda_memset(b, &r));
}

static int put_api(struct cupti_translate *t, struct trace_chunk_builder *b,
                   const CUpti_ActivityAPI *a, int driver)
{
    uint64_t name_id;
    if (!api_lookup(t, driver, a->cbid, &name_id))
        return CUPTI_SKIPPED;
    if (bad_times(t, a->start, a->end))
        return CUPTI_REJECTED;
    if (a->threadId != t->last_tid && t->hooks.thread_seen) {
        t->last_tid = a->threadId;
        t->hooks.thread_seen(t->hooks.ctx, a->threadId);
    }
    struct trace_cuda_api r = {
        .os_tid = a->threadId,
        .api = driver ? 1 : 0,
        .cbid = a->cbid,
        .name = name_id,
        .start = a->start,
        .end = a->end,
        .return_code = a->returnValue,
        .correlation = a->correlationId,
    };
    return finish(trace_put_cuda_api(b, &r));
}

static int put_sync(struct cupti_translate *t, struct trace_chunk_builder *b,
                    const CUpti_ActivitySynchronization2 *s)
{
    if (bad_times(t, s->start, s->end))
        return CUPTI_REJECTED;
    struct trace_cuda_sync r = {
        .sync_kind = s->type,
        .context = s->contextId,
        /* CUPTI marks "no stream" / "no event" with CUPTI_SYNCHRONIZATION_INVALID_VALUE (~0) */
        .stream = s->streamId == (uint32_t)-1 ? 0 : (uint64_t)s->streamId + 1,
        .event = s->cudaEventId == (uint32_t)-1 ? 0 : (uint64_t)s->cudaEventId + 1,
        .correlation = s->correlationId,
        .start = s->start,
        .end = s->end,
    };
    return finish(trace_put_cuda_sync(b, &r));
}

static int put_memory(struct cupti_translate *t, struct trace_chunk_builder *b,
                      const CUpti_ActivityMemory4 *m)
{
    if (bad_times(t, m->timestamp, m->timestamp))
        return CUPTI_REJECTED;
    struct trace_cuda_memory r = {
        .op = m->memoryOperationType,
        .mem_kind = m->memoryKind,
        .device = m->deviceId,
        .context = m->contextId,
        .stream = m->streamId,
        .address = m->address,
        .bytes = m->bytes,
        .ts = m->timestamp,
        .correlation = m->correlationId,
    };
    return finish(trace_put_cuda_memory(b, &r));
}

void cupti_format_uuid(const uint8_t u[16], char out[41])
{
    snprintf(out, 41, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static uint64_t attribute_or_zero(struct cupti_translate *t, uint32_t device, int attribute)
{
    if (!t->hooks.device_attribute)
        return 0;
    int64_t v = t->hooks.device_attribute(t->hooks.ctx, device, attribute);
    return v < 0 ? 0 : (uint64_t)v;
}

static int put_device(struct cupti_translate *t, struct trace_chunk_builder *b,
                      const CUpti_ActivityDevice5 *d)
{
    char uuid[41], pci[32] = "";
    cupti_format_uuid((const uint8_t *)d->uuid.bytes, uuid);
    uint64_t pci_domain = attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    uint64_t pci_bus = attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    uint64_t pci_device = attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    if (t->hooks.device_attribute) /* NVML's form: "00000000:19:00.0" */
        snprintf(pci, sizeof(pci), "%08x:%02x:%02x.0", (unsigned)pci_domain, (unsigned)pci_bus,
                 (unsigned)pci_device);
    uint64_t memory_clock = attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    uint64_t bus_bits = attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    uint64_t smem_optin =
        attribute_or_zero(t, d->id, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    const char *name = d->name ? d->name : "";

    struct trace_cuda_device r = {
        .device = d->id,
        .name = trace_cstr(name),
        .uuid = trace_cstr(uuid),
        .pci_bus_id = trace_cstr(pci),
        .cc_major = d->computeCapabilityMajor,
        .cc_minor = d->computeCapabilityMinor,
        .sm_count = d->numMultiprocessors,
        .memory_bytes = d->globalMemorySize,
        .sm_clock_khz = d->coreClockRate,
        .memory_clock_khz = memory_clock,
        .memory_bus_bits = bus_bits,
        .l2_bytes = d->l2CacheSize,
        .max_threads_per_sm = (uint64_t)d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp,
        .max_registers_per_sm = d->maxRegistersPerMultiprocessor,
        .max_smem_per_sm = d->maxSharedMemoryPerMultiprocessor,
        .max_blocks_per_sm = d->maxBlocksPerMultiprocessor,
        .registers_per_block = d->maxRegistersPerBlock,
        .smem_per_block_optin = smem_optin ? smem_optin : d->maxSharedMemoryPerBlock,
        .dram_bandwidth = d->globalMemoryBandwidth * 1000u, /* CUPTI gives kB/s */
    };
    return finish(trace_put_cuda_device(b, &r));
}

static int put_context(struct trace_chunk_builder *b, const CUpti_ActivityContext3 *c)
{
    struct trace_cuda_context r = {
        .context = c->contextId, .device = c->deviceId, .null_stream = c->nullStreamId};
    return finish(trace_put_cuda_context(b, &r));
}

static int put_stream(struct trace_chunk_builder *b, const CUpti_ActivityStream *s)
{
    struct trace_cuda_stream r = {.context = s->contextId,
                                  .stream = s->streamId,
                                  .priority = s->priority,
                                  .flag = s->flag,
                                  .correlation = s->correlationId};
    return finish(trace_put_cuda_stream(b, &r));
}

static int put_overhead(struct cupti_translate *t, struct trace_chunk_builder *b,
                        const CUpti_ActivityOverhead3 *o)
{
    if (bad_times(t, o->start, o->end))
        return CUPTI_REJECTED;
    struct trace_cuda_overhead r = {
        .kind = o->overheadKind,
        .os_tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0,
        .start = o->start,
        .end = o->end,
    };
    return finish(trace_put_cuda_overhead(b, &r));
}

int cupti_translate_record(struct cupti_translate *t, struct trace_chunk_builder *b,
                           const CUpti_Activity *r)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return put_kernel(t, b, (const CUpti_ActivityKernel10 *)r);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return put_memcpy(t, b, (const CUpti_ActivityMemcpy6 *)r);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        return put_memcpy_peer(t, b, (const CUpti_ActivityMemcpyPtoP4 *)r);
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return put_memset(t, b, (const CUpti_ActivityMemset4 *)r);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        return put_api(t, b, (const CUpti_ActivityAPI *)r, 0);
    case CUPTI_ACTIVITY_KIND_DRIVER:
        return put_api(t, b, (const CUpti_ActivityAPI *)r, 1);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return put_sync(t, b, (const CUpti_ActivitySynchronization2 *)r);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        return put_memory(t, b, (const CUpti_ActivityMemory4 *)r);
    case CUPTI_ACTIVITY_KIND_DEVICE:
        return put_device(t, b, (const CUpti_ActivityDevice5 *)r);
    case CUPTI_ACTIVITY_KIND_CONTEXT:
        return put_context(b, (const CUpti_ActivityContext3 *)r);
    case CUPTI_ACTIVITY_KIND_STREAM:
        return put_stream(b, (const CUpti_ActivityStream *)r);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
        return put_overhead(t, b, (const CUpti_ActivityOverhead3 *)r);
    default:
        return CUPTI_SKIPPED;
    }
}

int cupti_translate_flush_rejected(struct cupti_translate *t, struct trace_chunk_builder *b)
{
    if (!t->rejected)
        return CUPTI_SKIPPED;
    struct trace_cuda_rejected r = {.count = t->rejected};
    if (trace_put_cuda_rejected(b, &r) < 0)
        return CUPTI_NO_ROOM;
    t->rejected = 0;
    return CUPTI_TRANSLATED;
}
