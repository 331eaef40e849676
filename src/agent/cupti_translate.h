/* CUPTI activity records -> Lantern trace records (src/trace/format.h, types 40-79).
 * A pure translation: everything it needs from the agent (string interning, thread
 * indexes, API names, device attributes) comes through hooks, so tests drive it on a CPU. */
#ifndef LANTERN_AGENT_CUPTI_TRANSLATE_H
#define LANTERN_AGENT_CUPTI_TRANSLATE_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"

/* What the translator asks of its host. All hooks are called before a record is begun,
 * never in the middle of one, because interning may append TRACE_STRING records. API
 * records carry the OS thread id itself (CUPTI's SYSTEM thread ids): the importer matches
 * it to the thread that NVTX saw, whichever of the two was written first. */
struct cupti_translate_hooks {
    uint64_t (*intern)(void *ctx, const char *s, size_t len);      /* string id, 0 on failure */
    const char *(*api_name)(void *ctx, int driver, uint32_t cbid); /* NULL if unknown */
    /* A CUdevice_attribute of a CUDA ordinal, or -1 when it cannot be read. */
    int64_t (*device_attribute)(void *ctx, uint32_t device, int attribute);
    /* An OS thread id seen in an API record (its name is read then); may be NULL. */
    void (*thread_seen)(void *ctx, uint32_t os_tid);
    void *ctx;
};

/* Kernel names come as pointers that CUPTI shares among all records of a kernel; a small
 * cache maps them to string ids so a kernel's name is hashed once, not per launch. Names
 * stay mangled: the importer demangles, away from the profiled process. */
#define CUPTI_NAME_CACHE_SIZE 1024u
struct cupti_name_cache_entry {
    const char *key; /* CUPTI's pointer */
    char *copy;      /* our copy, compared on a hit: CUPTI may reuse an address */
    uint64_t name_id;
};

/* Runtime and driver callback ids are below these (cupti_runtime_cbid.h and
 * cupti_driver_cbid.h stop near 500 and 900); larger ones go uncached. */
#define CUPTI_API_CACHE_SIZE 1536u

struct cupti_translate {
    struct cupti_translate_hooks hooks;
    int all_apis; /* LANTERN_CUDA_API=all: no allow-list */
    struct cupti_name_cache_entry names[CUPTI_NAME_CACHE_SIZE];
    /* per (driver, cbid): string id + 1, 0 = not looked up; and 1 allowed / 2 not */
    uint64_t api_name_id[2][CUPTI_API_CACHE_SIZE];
    uint8_t api_allowed[2][CUPTI_API_CACHE_SIZE];
    uint64_t rejected; /* bad timestamps, not yet reported */
    uint32_t last_tid; /* the thread of the previous API record: thread_seen once per run */
};

enum cupti_translate_result {
    CUPTI_TRANSLATED = 0, /* one record appended */
    CUPTI_SKIPPED = 1,    /* a kind we do not record, or an API outside the allow-list */
    CUPTI_REJECTED = 2,   /* zero or inverted timestamps: counted in ->rejected */
    CUPTI_NO_ROOM = -1,   /* the builder is full: flush it and call again */
};

void cupti_translate_init(struct cupti_translate *t, const struct cupti_translate_hooks *hooks,
                          int all_apis);
/* Forgets cached string ids (after fork the child's file starts its strings afresh). */
void cupti_translate_reset(struct cupti_translate *t);
void cupti_translate_release(struct cupti_translate *t);

int cupti_translate_record(struct cupti_translate *t, struct trace_chunk_builder *b,
                           const CUpti_Activity *record);
/* Appends TRACE_CUDA_REJECTED with the count since the last call, if any. */
int cupti_translate_flush_rejected(struct cupti_translate *t, struct trace_chunk_builder *b);

/* The default API allow-list (docs/trace-format.md, "CUDA API filter"): launches, copies,
 * sets, synchronization, allocation, graphs, streams, events, profiler start/stop. */
int cupti_api_allowed(const char *name);

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML and nvidia-smi print it. */
void cupti_format_uuid(const uint8_t bytes[16], char out[41]);

#endif
