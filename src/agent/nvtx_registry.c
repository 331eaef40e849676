/* The NVTX registry: what a program registers with NVTX (domains, categories, registered
 * strings, and the payload extension's schemas and enumerations), kept under one lock and
 * written to the trace file as definition records once per file (again in a fork child's),
 * before the events that use them. Not on the hot path: nvtx.c's callbacks and nvtx_payload.c
 * call into it, and it calls neither. */
#include "agent/nvtx.h"

#include "agent/agent.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/records.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---- the registry: domains (struct nvtx_domain: nvtx.h), categories (not on the hot path;
 * re-emitted in a fork child) ---- */

struct nvtx_category {
    uint32_t domain, category;
    int emitted;
    char *name;
    struct nvtx_category *next;
};

static pthread_mutex_t nvtx_registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_domain *nvtx_domains;
static uint32_t nvtx_domain_count; /* ids 1..; 0 is the default domain */
static int nvtx_domains_warned;
/* nvtxDomainRegisterString: at most this many strings, or bytes, are kept (a program that
 * registers a new string every step); later ones get a NULL handle (their events have no
 * name) and are counted (TRACE_TABLE_CUT). Categories likewise. */
#define NVTX_REGISTERED_STRINGS_MAX (1u << 20)
#define NVTX_REGISTERED_BYTES_MAX (64u << 20)
#define NVTX_CATEGORIES_MAX (1u << 16)
static size_t nvtx_string_count, nvtx_string_bytes, nvtx_category_count;
static struct nvtx_category *nvtx_categories;
/* Registered strings (struct nvtx_string: nvtx.h), reachable until exit. */
static struct nvtx_string *nvtx_strings;

/* A heap UTF-8 copy of an ASCII (UTF-8) or wide string; NULL if out of memory. */
char *nvtx_utf8_dup(const char *ascii, const wchar_t *wide, size_t *len_out)
{
    size_t len;
    char *copy;
    if (ascii) {
        len = strlen(ascii);
        copy = malloc(len + 1);
        if (copy)
            memcpy(copy, ascii, len + 1);
    } else {
        size_t units = wide ? wcslen(wide) : 0;
        copy = malloc(units * 4 + 1);
        len = copy ? writer_wide_to_utf8(wide, units, copy) : 0;
        if (copy)
            copy[len] = '\0';
    }
    if (len_out)
        *len_out = len;
    return copy;
}

void nvtx_registry_lock(void)
{
    pthread_mutex_lock(&nvtx_registry_mutex);
}

void nvtx_registry_unlock(void)
{
    pthread_mutex_unlock(&nvtx_registry_mutex);
}

/* ---- the payload extension's schemas and enumerations (nvtx_payload.c registers them) ---- */

/* A process registers a handful of schemas (NCCL: 15); past this many something registers
 * in a loop, and the registry would grow without bound. */
#define NVTX_SCHEMAS_MAX 4096u

/* Guarded by the registry lock (nvtx.h). */
static struct nvtx_schema *nvtx_schemas, **nvtx_schemas_tail = &nvtx_schemas;
static unsigned nvtx_schema_count;
static uint64_t nvtx_next_dynamic_id = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;

char *nvtx_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A registration of count entries (values) in domain, its kept items zeroed for the caller to
 * fill; NULL when out of memory. Without memory for the items it is recorded without its
 * entries (count 0): its payloads stay raw bytes. */
struct nvtx_schema *nvtx_schema_new(nvtxDomainHandle_t domain, int is_enum, const char *name,
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
uint64_t nvtx_schema_add(struct nvtx_schema *s, int id_given, uint64_t id)
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

static void nvtx_payload_emit_locked(struct trace_chunk_builder *b)
{
    for (struct nvtx_schema *s = nvtx_schemas; s; s = s->next) {
        if (s->emitted)
            continue;
        nvtx_schema_emit(b, s);
        s->emitted = 1;
    }
}

static void nvtx_payload_fork_child(void)
{
    for (struct nvtx_schema *s = nvtx_schemas; s; s = s->next)
        s->emitted = 0;
}

/* ---- domains, categories and strings ---- */

/* Writes the registry's unwritten entries to the file (registry lock held): domains first,
 * since categories and payload schemas name them. */
void nvtx_emit_registry_locked(void)
{
    struct trace_chunk_builder *b = writer_lock();
    if (!b)
        return;
    for (struct nvtx_domain *d = nvtx_domains; d; d = d->next) {
        if (d->emitted)
            continue;
        struct trace_domain r = {.domain = d->id, .name = writer_intern(d->name, strlen(d->name))};
        writer_reserve_locked(32);
        trace_put_domain(b, &r);
        d->emitted = 1;
    }
    for (struct nvtx_category *c = nvtx_categories; c; c = c->next) {
        if (c->emitted)
            continue;
        struct trace_category r = {.domain = c->domain,
                                   .category = c->category,
                                   .name = writer_intern(c->name, strlen(c->name))};
        writer_reserve_locked(40);
        trace_put_category(b, &r);
        c->emitted = 1;
    }
    nvtx_payload_emit_locked(b);
    writer_unlock_durable();
}

nvtxDomainHandle_t nvtx_domain_create(const char *ascii, const wchar_t *wide)
{
    size_t len;
    char *name = nvtx_utf8_dup(ascii, wide, &len);
    if (!name)
        return NULL;
    nvtx_registry_lock();
    struct nvtx_domain *d;
    for (d = nvtx_domains; d; d = d->next)
        if (strcmp(d->name, name) == 0)
            goto out;
    if (nvtx_domain_count + 1 >= AGENT_MAX_DOMAINS) {
        agent_table_cut(TRACE_TABLE_DOMAINS);
        if (!nvtx_domains_warned++)
            agent_warn("more than %u NVTX domains; the rest are recorded in the default domain",
                       AGENT_MAX_DOMAINS - 1);
        goto out;
    }
    d = calloc(1, sizeof(*d));
    if (!d)
        goto out;
    d->id = ++nvtx_domain_count;
    d->name = name;
    name = NULL;
    d->next = nvtx_domains;
    nvtx_domains = d;
    nvtx_emit_registry_locked();
out:
    nvtx_registry_unlock();
    free(name);
    return (nvtxDomainHandle_t)d;
}

/* Naming a category again renames it (one entry per domain and category). */
void nvtx_name_category(nvtxDomainHandle_t domain, uint32_t category, const char *ascii,
                        const wchar_t *wide)
{
    char *name = nvtx_utf8_dup(ascii, wide, NULL);
    if (!name)
        return;
    uint32_t domain_id = nvtx_domain_id(domain);
    nvtx_registry_lock();
    struct nvtx_category *c;
    for (c = nvtx_categories; c; c = c->next)
        if (c->domain == domain_id && c->category == category)
            break;
    if (!c && nvtx_category_count >= NVTX_CATEGORIES_MAX)
        agent_table_cut(TRACE_TABLE_CATEGORIES);
    else if (!c && (c = calloc(1, sizeof(*c)))) {
        nvtx_category_count++;
        c->domain = domain_id;
        c->category = category;
        c->next = nvtx_categories;
        nvtx_categories = c;
    }
    if (c) {
        free(c->name);
        c->name = name;
        c->emitted = 0;
        name = NULL;
        nvtx_emit_registry_locked();
    }
    nvtx_registry_unlock();
    free(name);
}

nvtxStringHandle_t nvtx_register_string(const char *ascii, const wchar_t *wide)
{
    if (__atomic_load_n(&nvtx_string_count, __ATOMIC_RELAXED) >= NVTX_REGISTERED_STRINGS_MAX ||
        __atomic_load_n(&nvtx_string_bytes, __ATOMIC_RELAXED) >= NVTX_REGISTERED_BYTES_MAX) {
        agent_table_cut(TRACE_TABLE_REGISTERED_STRINGS);
        return NULL;
    }
    struct nvtx_string *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->bytes = nvtx_utf8_dup(ascii, wide, &r->len);
    if (!r->bytes) {
        free(r);
        return NULL;
    }
    nvtx_registry_lock();
    r->next = nvtx_strings;
    nvtx_strings = r;
    __atomic_store_n(&nvtx_string_count, nvtx_string_count + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&nvtx_string_bytes, nvtx_string_bytes + r->len + sizeof *r, __ATOMIC_RELAXED);
    nvtx_registry_unlock();
    return (nvtxStringHandle_t)r;
}

/* ---- the source hooks: the registry reaches every file, and survives fork ---- */

static int nvtx_source_init(void)
{
    nvtx_registry_lock();
    nvtx_emit_registry_locked();
    nvtx_registry_unlock();
    return 0;
}

static void nvtx_fork_prepare(void)
{
    nvtx_registry_lock();
}
static void nvtx_fork_parent(void)
{
    nvtx_registry_unlock();
}

static void nvtx_fork_child(void)
{
    pthread_mutex_init(&nvtx_registry_mutex, NULL);
    for (struct nvtx_domain *d = nvtx_domains; d; d = d->next)
        d->emitted = 0;
    for (struct nvtx_category *c = nvtx_categories; c; c = c->next)
        c->emitted = 0;
    nvtx_payload_fork_child();
    nvtx_emit_registry_locked();
}

AGENT_SOURCE(nvtx_source) = {
    .name = "nvtx",
    .trace_flag = TRACE_FLAG_NVTX,
    .always_on = 1,
    .init = nvtx_source_init,
    .at_fork_prepare = nvtx_fork_prepare,
    .at_fork_parent = nvtx_fork_parent,
    .at_fork_child = nvtx_fork_child,
};
