/* NVTX's names of things: nvtxNameOsThread, nvtxNameCuStream/Device/Context/Event,
 * nvtxNameCudaStream/Device/Event and nvtxDomainResourceCreate. They are kept in a capped table
 * under the registry's lock and written as definition records (TRACE_THREAD_NAME,
 * TRACE_NAME_RESOURCE) when given, not as events of the naming thread's stream, so that with
 * --ring they stay in the never-rotated .lrt and every dump names its threads and streams
 * (docs/long-runs.md). A fork child's file gets a name when it is given again there (the
 * parent's threads are not the child's). Not a hot path: naming takes the lock and may
 * allocate. */
#include "agent/nvtx.h"

#include "agent/agent.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A resource created per object, each named, would grow the table forever: past this many
 * things, or bytes of names, a new thing keeps no name and is counted (TRACE_TABLE_NAMES),
 * once the threads that have ended are forgotten (below). Renaming a known thing replaces its
 * name. */
#define NVTX_NAMES_MAX (1u << 16) /* LANTERN_TEST_NAMES_MAX: lower, for tests */
#define NVTX_NAME_BYTES_MAX (16u << 20)
#define NVTX_NAME_BUCKETS 4096u /* a power of two */

struct nvtx_named {
    uint32_t kind;    /* TRACE_RESOURCE_*, or NVTX_NAMED_OS_THREAD */
    pid_t written_by; /* its record is in the file of this process (a fork child has its own) */
    uint64_t handle;  /* the resource's handle, or the OS tid */
    char *name;       /* UTF-8, len bytes */
    size_t len;
    struct nvtx_named *next; /* in its bucket */
};

/* Guarded by the registry lock. */
static struct nvtx_named *nvtx_named_buckets[NVTX_NAME_BUCKETS];
static size_t nvtx_named_count, nvtx_named_bytes;
static size_t nvtx_named_threads, nvtx_named_threads_swept; /* OS threads; after the last sweep */
static size_t nvtx_names_max;                               /* read at the first name */

static size_t nvtx_names_cap(void)
{
    if (!nvtx_names_max) {
        const char *test = getenv(trace_env_name(TRACE_ENV_TEST_NAMES_MAX));
        unsigned long max = test ? strtoul(test, NULL, 10) : 0;
        nvtx_names_max = max && max < NVTX_NAMES_MAX ? max : NVTX_NAMES_MAX;
    }
    return nvtx_names_max;
}

static struct nvtx_named **nvtx_named_bucket(uint32_t kind, uint64_t handle)
{
    uint64_t h = (handle ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
    return &nvtx_named_buckets[(h >> 40) & (NVTX_NAME_BUCKETS - 1)];
}

/* Its record into the file, at once (registry lock held): TRACE_THREAD_NAME or
 * TRACE_NAME_RESOURCE, definitions a dump always has. */
static void nvtx_named_emit_locked(struct nvtx_named *n)
{
    struct trace_chunk_builder *b = writer_lock();
    if (!b)
        return;
    uint64_t name = writer_intern(n->name, n->len);
    writer_reserve_locked(48);
    if (n->kind == NVTX_NAMED_OS_THREAD) {
        struct trace_thread_name r = {.os_tid = n->handle, .name = name};
        trace_put_thread_name(b, &r);
    } else {
        struct trace_name_resource r = {.kind = n->kind, .handle = n->handle, .name = name};
        trace_put_name_resource(b, &r);
    }
    n->written_by = getpid();
    writer_unlock_durable();
}

/* A full table forgets the threads that have ended (no /proc/self/task/<tid>): their names are
 * in the file already, and a server that starts and names a thread per request would fill it
 * for good. A sweep looks at every entry: at most once per a quarter of the cap of threads named
 * since the last one. Lock held. */
static void nvtx_names_forget_ended_threads(void)
{
    if (nvtx_named_threads < nvtx_named_threads_swept + nvtx_names_cap() / 4)
        return;
    for (size_t i = 0; i < NVTX_NAME_BUCKETS; i++)
        for (struct nvtx_named **p = &nvtx_named_buckets[i], *n; (n = *p);) {
            char task[48];
            snprintf(task, sizeof task, "/proc/self/task/%llu", (unsigned long long)n->handle);
            if (n->kind != NVTX_NAMED_OS_THREAD || access(task, F_OK) == 0) {
                p = &n->next;
                continue;
            }
            *p = n->next;
            nvtx_named_count--;
            nvtx_named_threads--;
            nvtx_named_bytes -= sizeof *n + n->len;
            free(n->name);
            free(n);
        }
    nvtx_named_threads_swept = nvtx_named_threads;
}

static int nvtx_names_full(void)
{
    return nvtx_named_count >= nvtx_names_cap() || nvtx_named_bytes >= NVTX_NAME_BYTES_MAX;
}

void nvtx_name_thing(uint32_t kind, uint64_t handle, const char *ascii, const wchar_t *wide)
{
    size_t len;
    char *name = ascii || wide ? nvtx_utf8_dup(ascii, wide, &len) : NULL;
    if (!name)
        return;
    nvtx_registry_lock();
    struct nvtx_named **bucket = nvtx_named_bucket(kind, handle), *n = *bucket;
    while (n && !(n->kind == kind && n->handle == handle))
        n = n->next;
    if (n && n->written_by == getpid() && n->len == len && memcmp(n->name, name, len) == 0)
        goto out; /* named so already */
    if (!n && nvtx_names_full())
        nvtx_names_forget_ended_threads();
    if (!n && nvtx_names_full()) {
        agent_table_cut(TRACE_TABLE_NAMES);
        goto out;
    }
    if (!n) {
        if (!(n = calloc(1, sizeof *n)))
            goto out;
        n->kind = kind;
        n->handle = handle;
        n->next = *bucket;
        *bucket = n;
        nvtx_named_count++;
        nvtx_named_threads += kind == NVTX_NAMED_OS_THREAD;
        nvtx_named_bytes += sizeof *n;
    }
    nvtx_named_bytes += len - n->len;
    free(n->name);
    n->name = name;
    n->len = len;
    name = NULL;
    nvtx_named_emit_locked(n);
out:
    nvtx_registry_unlock();
    free(name);
}
