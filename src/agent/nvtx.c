/* NVTX injection: InitializeInjectionNvtx2 fills NVTX's CORE, CORE2, CUDA and CUDART
 * function tables with the callbacks below. Each callback stamps the time, keeps the
 * thread's range depth, and encodes one event of the thread event stream (a few bytes: its
 * message is a string id from the thread's cache) into the thread's buffer, followed by a
 * copy of its extended payloads when it has some. Domains, categories, registered strings
 * and payload schemas live in the registry (nvtx_registry.c), which the callbacks that
 * register things call, and the names of threads and resources in nvtx_names.c; the payload
 * extension's entry point is nvtx_payload.c's. */
#include "agent/nvtx.h"

#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/ring.h"
#include "agent/thread_events.h"
#include "agent/writer.h"
#include "trace/records.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---- the hot path ---- */

/* An event's extended payloads (NVTX_PAYLOAD_TYPE_EXT): the program's nvtxPayloadData_t
 * array, read during the call and never kept. */
struct nvtx_payloads {
    const nvtxPayloadData_t *data; /* NULL: none */
    size_t count;
};

/* An NVTX event's message and attributes, as a callback received them. */
struct nvtx_event {
    struct thread_message msg;
    const wchar_t *wide; /* a wide message, converted to UTF-8 as the event is written */
    int has_attributes;
    uint32_t category;
    uint64_t color; /* ARGB + 1; 0: none */
    uint64_t payload_type, payload;
    struct nvtx_payloads ext;
};

static inline struct nvtx_event nvtx_event_ascii(const char *message)
{
    return (struct nvtx_event){.msg = {.bytes = message, .len = message ? strlen(message) : 0}};
}

static inline struct nvtx_event nvtx_event_wide(const wchar_t *message)
{
    return (struct nvtx_event){.wide = message};
}

/* Event attributes, read only as far as the caller's struct size says they exist. */
static struct nvtx_event nvtx_event_from_attributes(const nvtxEventAttributes_t *a)
{
    struct nvtx_event ev = {0};
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
        return ev;
    ev.category = a->category;
    if (a->colorType == NVTX_COLOR_ARGB)
        ev.color = (uint64_t)a->color + 1;
    ev.payload_type = (uint8_t)a->payloadType;
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        ev.payload = a->payload.uiValue;
        break;
    case NVTX_PAYLOAD_TYPE_INT32:
        ev.payload = (uint32_t)a->payload.iValue;
        break;
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &a->payload.fValue, sizeof(bits));
        ev.payload = bits;
        break;
    }
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    case NVTX_PAYLOAD_TYPE_INT64:
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        ev.payload = a->payload.ullValue;
        break;
    case NVTX_PAYLOAD_TYPE_EXT:
        /* the payload is a pointer to reserved0 nvtxPayloadData_t (NVTX's helpers always
         * set the count; 0 is read as one): the data is copied, the pointer is not kept */
        ev.ext.data = (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue;
        ev.ext.count = ev.ext.data ? (a->reserved0 > 0 ? (size_t)a->reserved0 : 1) : 0;
        break;
    default:
        ev.payload_type = 0;
        break;
    }
    ev.has_attributes = ev.category || ev.color || ev.payload_type;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        ev.msg = nvtx_event_ascii(a->message.ascii).msg;
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        ev.wide = a->message.unicode;
        break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        if (a->message.registered) {
            const struct nvtx_string *r = (const struct nvtx_string *)a->message.registered;
            ev.msg = (struct thread_message){.bytes = r->bytes, .len = r->len};
        }
        break;
    default:
        break;
    }
    return ev;
}

/* The event's PAYLOAD events (trace/events.h) at p, within the TRACE_EV_PAYLOADS_RESERVE
 * bytes reserved for them: the first TRACE_EV_PAYLOAD_BYTES bytes of the payloads together,
 * copied as they are. A size of SIZE_MAX ("the tool finds out") copies nothing: the agent
 * never follows a pointer, in the payload or to find its end. */
static __attribute__((noinline)) uint8_t *nvtx_put_payloads(uint8_t *p,
                                                            struct nvtx_payloads ext)
{
    size_t budget = TRACE_EV_PAYLOAD_BYTES;
    size_t n = ext.count < TRACE_EV_PAYLOADS_MAX ? ext.count : TRACE_EV_PAYLOADS_MAX;
    for (size_t i = 0; i < n; i++) {
        const nvtxPayloadData_t *d = &ext.data[i];
        size_t len = d->payload && d->size != SIZE_MAX ? d->size : 0;
        if (len > budget)
            len = budget;
        budget -= len;
        p = trace_ev_put_payload(p, (struct trace_ev_payload){i, ext.count, d->schemaId, d->size,
                                                              {d->payload, len}});
    }
    return p;
}

/* PUSH ([domain] depth name), START ([domain] range_id name), MARK ([domain] name), then the
 * attributes and payloads (trace/events.h). kind is a constant at every call: the branches
 * fold. */
static inline __attribute__((always_inline)) void nvtx_put_utf8(struct agent_thread *t,
                                                                unsigned kind, uint64_t ticks,
                                                                uint32_t domain, uint64_t arg,
                                                                struct nvtx_event *ev)
{
    thread_message_resolve(t, &ev->msg);
    unsigned op = kind | (domain ? TRACE_EV_DOMAIN : 0) |
                  (ev->has_attributes ? TRACE_EV_ATTRIBUTES : 0);
    uint8_t *p = thread_event_begin_extra(t, op, ticks, &ev->msg,
                                          ev->ext.count ? TRACE_EV_PAYLOADS_RESERVE : 0);
    if (__builtin_expect(!p, 0))
        return;
    if (domain)
        p = trace_ev_u(p, domain);
    if (kind == TRACE_EV_PUSH)
        p = trace_ev_put_push(p, (struct trace_ev_push){arg, ev->msg.id});
    else if (kind == TRACE_EV_START)
        p = trace_ev_put_start(p, (struct trace_ev_start){arg, ev->msg.id});
    else
        p = trace_ev_put_mark(p, (struct trace_ev_mark){ev->msg.id});
    if (ev->has_attributes)
        p = trace_ev_put_attributes(p, (struct trace_ev_attributes){ev->category, ev->color,
                                                                    ev->payload_type, ev->payload});
    if (__builtin_expect(ev->ext.count != 0, 0))
        p = nvtx_put_payloads(p, ev->ext);
    ring_commit(t, p, ticks);
}

/* A wide message: UTF-8 on the stack (on the heap past 2 KiB), then as any other. */
static __attribute__((noinline)) void nvtx_put_wide(struct agent_thread *t, unsigned kind,
                                                    uint64_t ticks, uint32_t domain,
                                                    uint64_t arg, struct nvtx_event *ev)
{
    size_t units = wcslen(ev->wide);
    char stack[2048];
    char *utf8 = units * 4 <= sizeof stack ? stack : malloc(units * 4);
    if (!utf8) {
        ring_count_drop(t);
        return;
    }
    ev->msg = (struct thread_message){.bytes = utf8,
                                      .len = writer_wide_to_utf8(ev->wide, units, utf8)};
    switch (kind) { /* constants again, for nvtx_put_utf8's folding */
    case TRACE_EV_PUSH:
        nvtx_put_utf8(t, TRACE_EV_PUSH, ticks, domain, arg, ev);
        break;
    case TRACE_EV_START:
        nvtx_put_utf8(t, TRACE_EV_START, ticks, domain, arg, ev);
        break;
    default:
        nvtx_put_utf8(t, TRACE_EV_MARK, ticks, domain, arg, ev);
        break;
    }
    if (utf8 != stack)
        free(utf8);
}

static inline __attribute__((always_inline)) void nvtx_put(struct agent_thread *t, unsigned kind,
                                                           uint64_t ticks, uint32_t domain,
                                                           uint64_t arg, struct nvtx_event *ev)
{
    if (__builtin_expect(ev->wide != NULL, 0))
        nvtx_put_wide(t, kind, ticks, domain, arg, ev);
    else
        nvtx_put_utf8(t, kind, ticks, domain, arg, ev);
}

/* POP ([domain] depth), UNBALANCED_POP ([domain]), END (range_id), DOMAIN_DESTROY (domain):
 * events without a message; a POP or END of the payload extension's carries payloads. */
static inline __attribute__((always_inline)) void
nvtx_put_short(struct agent_thread *t, unsigned kind, uint64_t ticks, uint32_t domain,
               uint64_t arg, const struct nvtx_payloads *ext)
{
    struct thread_message none = {0};
    uint8_t *p = thread_event_begin_extra(t, kind | (domain ? TRACE_EV_DOMAIN : 0), ticks, &none,
                                          ext ? TRACE_EV_PAYLOADS_RESERVE : 0);
    if (__builtin_expect(!p, 0))
        return;
    if (domain)
        p = trace_ev_u(p, domain);
    if (kind == TRACE_EV_POP)
        p = trace_ev_put_pop(p, (struct trace_ev_pop){arg});
    else if (kind == TRACE_EV_END)
        p = trace_ev_put_end(p, (struct trace_ev_end){arg});
    else if (kind == TRACE_EV_DOMAIN_DESTROY)
        p = trace_ev_put_domain_destroy(p, (struct trace_ev_domain_destroy){arg});
    /* UNBALANCED_POP has no fields */
    if (ext)
        p = nvtx_put_payloads(p, *ext);
    ring_commit(t, p, ticks);
}

static inline __attribute__((always_inline)) int nvtx_push(uint32_t domain, struct nvtx_event *ev,
                                                           uint64_t ticks)
{
    struct agent_thread *t = ring_self(ticks);
    if (__builtin_expect(!t, 0))
        return 0;
    int level = t->depth[domain]++;
    nvtx_put(t, TRACE_EV_PUSH, ticks, domain, (uint64_t)level, ev);
    return level;
}

/* ext: NULL, or the payloads of nvtxRangePopPayload (count > 0). The level ended, or -1: NVTX's
 * own error value, which the program reads (an API's value, not our error code). */
static inline __attribute__((always_inline)) int nvtx_pop(uint32_t domain,
                                                          const struct nvtx_payloads *ext)
{
    uint64_t ticks = clock_ticks();
    struct agent_thread *t = ring_self(ticks);
    if (__builtin_expect(!t, 0))
        return -1;
    if (__builtin_expect(t->depth[domain] <= 0, 0)) {
        nvtx_put_short(t, TRACE_EV_UNBALANCED_POP, ticks, domain, 0, NULL);
        return -1;
    }
    int level = --t->depth[domain];
    nvtx_put_short(t, TRACE_EV_POP, ticks, domain, (uint64_t)level, ext);
    return level;
}

/* Range ids: the thread's index in the top 24 bits, its own counter below, so ids are
 * unique and non-zero without a shared atomic. */
static inline __attribute__((always_inline)) nvtxRangeId_t
nvtx_start(uint32_t domain, struct nvtx_event *ev, uint64_t ticks)
{
    struct agent_thread *t = ring_self(ticks);
    if (__builtin_expect(!t, 0))
        return 0;
    nvtxRangeId_t id = (t->thread_idx << 40) | (++t->next_range & ((1ull << 40) - 1));
    nvtx_put(t, TRACE_EV_START, ticks, domain, id, ev);
    return id;
}

static inline __attribute__((always_inline)) void nvtx_end(nvtxRangeId_t id,
                                                           const struct nvtx_payloads *ext)
{
    uint64_t ticks = clock_ticks();
    struct agent_thread *t = ring_self(ticks);
    if (__builtin_expect(t != NULL, 1))
        nvtx_put_short(t, TRACE_EV_END, ticks, 0, id, ext);
}

static inline __attribute__((always_inline)) void nvtx_mark(uint32_t domain,
                                                            struct nvtx_event *ev, uint64_t ticks)
{
    struct agent_thread *t = ring_self(ticks);
    if (__builtin_expect(t != NULL, 1))
        nvtx_put(t, TRACE_EV_MARK, ticks, domain, 0, ev);
    if (__builtin_expect(__atomic_load_n(&agent_ring_trigger, __ATOMIC_RELAXED) != NULL, 0) &&
        !ev->wide && ev->msg.bytes)
        agent_ring_trigger_mark(ev->msg.bytes, ev->msg.len);
}

/* ---- the callbacks NVTX calls ---- */

/* While the launcher has the session paused (lantern profile --start-paused, lantern stop:
 * agent_paused) every event callback returns at once, before reading the clock: a push
 * returns what NVTX returns with no tool attached (NVTX_NO_PUSH_POP_TRACKING), a start the
 * id 0. A range pushed while recording and popped while paused stays unended in its window,
 * and a pop after a resume whose push was paused pops the thread's older range, if any
 * (docs/long-runs.md). */
#define NVTX_PAUSED_LEVEL NVTX_NO_PUSH_POP_TRACKING

static void nvtx_mark_ex(const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    nvtx_mark(0, &ev, ticks);
}

static void nvtx_mark_a(const char *message)
{
    if (agent_paused())
        return;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_ascii(message);
    nvtx_mark(0, &ev, ticks);
}

static void nvtx_mark_w(const wchar_t *message)
{
    if (agent_paused())
        return;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_wide(message);
    nvtx_mark(0, &ev, ticks);
}

static nvtxRangeId_t nvtx_range_start_ex(const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return 0;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    return nvtx_start(0, &ev, ticks);
}

static nvtxRangeId_t nvtx_range_start_a(const char *message)
{
    if (agent_paused())
        return 0;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_ascii(message);
    return nvtx_start(0, &ev, ticks);
}

static nvtxRangeId_t nvtx_range_start_w(const wchar_t *message)
{
    if (agent_paused())
        return 0;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_wide(message);
    return nvtx_start(0, &ev, ticks);
}

static void nvtx_range_end(nvtxRangeId_t id)
{
    if (agent_paused())
        return;
    nvtx_end(id, NULL);
}

static int nvtx_range_push_ex(const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    return nvtx_push(0, &ev, ticks);
}

static int nvtx_range_push_a(const char *message)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_ascii(message);
    return nvtx_push(0, &ev, ticks);
}

static int nvtx_range_push_w(const wchar_t *message)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_wide(message);
    return nvtx_push(0, &ev, ticks);
}

static int nvtx_range_pop(void)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    return nvtx_pop(0, NULL);
}

static void nvtx_name_category_a(uint32_t category, const char *name)
{
    nvtx_name_category(NULL, category, name, NULL);
}

static void nvtx_name_category_w(uint32_t category, const wchar_t *name)
{
    nvtx_name_category(NULL, category, NULL, name);
}

static void nvtx_name_os_thread_a(uint32_t tid, const char *name)
{
    nvtx_name_thing(NVTX_NAMED_OS_THREAD, tid, name, NULL);
}

static void nvtx_name_os_thread_w(uint32_t tid, const wchar_t *name)
{
    nvtx_name_thing(NVTX_NAMED_OS_THREAD, tid, NULL, name);
}

static void nvtx_domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    nvtx_mark(nvtx_domain_id(domain), &ev, ticks);
}

static nvtxRangeId_t nvtx_domain_range_start_ex(nvtxDomainHandle_t domain,
                                                const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return 0;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    return nvtx_start(nvtx_domain_id(domain), &ev, ticks);
}

static void nvtx_domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    if (agent_paused())
        return;
    (void)domain; /* the id alone names the range */
    nvtx_end(id, NULL);
}

static int nvtx_domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_from_attributes(a);
    return nvtx_push(nvtx_domain_id(domain), &ev, ticks);
}

static int nvtx_domain_range_pop(nvtxDomainHandle_t domain)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    return nvtx_pop(nvtx_domain_id(domain), NULL);
}

/* ---- the payload extension's events (nvtx_payload.c hands them to NVTX) ---- */

/* An event of the payload extension: no message (a message entry inside the payload is a
 * pointer, never followed), the payloads as an EXT payload's. */
static struct nvtx_event nvtx_event_payloads(const nvtxPayloadData_t *data, size_t count)
{
    struct nvtx_event ev = {.has_attributes = 1, .payload_type = TRACE_PAYLOAD_TYPE_EXT};
    if (data)
        ev.ext = (struct nvtx_payloads){.data = data, .count = count};
    return ev;
}

int nvtx_range_push_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                            size_t count)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_payloads(data, count);
    return nvtx_push(nvtx_domain_id(domain), &ev, ticks);
}

/* NCCL ends its communicator ranges this way, with the communicator's payload (its id and
 * size, known only once it is made): without it those ranges would never end. */
int nvtx_range_pop_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                           size_t count)
{
    if (agent_paused())
        return NVTX_PAUSED_LEVEL;
    struct nvtx_payloads ext = {.data = data, .count = count};
    return nvtx_pop(nvtx_domain_id(domain), data && count ? &ext : NULL);
}

nvtxRangeId_t nvtx_range_start_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
                                       size_t count)
{
    if (agent_paused())
        return 0;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_payloads(data, count);
    return nvtx_start(nvtx_domain_id(domain), &ev, ticks);
}

void nvtx_range_end_payload(nvtxDomainHandle_t domain, nvtxRangeId_t id,
                            const nvtxPayloadData_t *data, size_t count)
{
    if (agent_paused())
        return;
    (void)domain;
    struct nvtx_payloads ext = {.data = data, .count = count};
    nvtx_end(id, data && count ? &ext : NULL);
}

void nvtx_mark_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data, size_t count)
{
    if (agent_paused())
        return;
    uint64_t ticks = clock_ticks();
    struct nvtx_event ev = nvtx_event_payloads(data, count);
    nvtx_mark(nvtx_domain_id(domain), &ev, ticks);
}

/* Generic resources are recorded as names of their identifier; the handle only needs to be
 * unique and non-NULL, so it is a counter, and destroying it records nothing. */
static _Atomic uint64_t nvtx_next_resource = 1;

static nvtxResourceHandle_t nvtx_domain_resource_create(nvtxDomainHandle_t domain,
                                                        nvtxResourceAttributes_t *attribs)
{
    (void)domain;
    uint64_t handle = __atomic_fetch_add(&nvtx_next_resource, 1, __ATOMIC_RELAXED);
    if (attribs &&
        attribs->size >= offsetof(nvtxResourceAttributes_t, message) + sizeof(attribs->message)) {
        const char *ascii =
            attribs->messageType == NVTX_MESSAGE_TYPE_ASCII ? attribs->message.ascii : NULL;
        const wchar_t *wide =
            attribs->messageType == NVTX_MESSAGE_TYPE_UNICODE ? attribs->message.unicode : NULL;
        if (ascii || wide)
            nvtx_name_thing(TRACE_RESOURCE_NVTX_GENERIC, attribs->identifier.ullValue, ascii,
                            wide);
    }
    return (nvtxResourceHandle_t)(uintptr_t)handle;
}

static void nvtx_domain_resource_destroy(nvtxResourceHandle_t resource)
{
    (void)resource;
}

static void nvtx_domain_name_category_a(nvtxDomainHandle_t domain, uint32_t category,
                                        const char *name)
{
    nvtx_name_category(domain, category, name, NULL);
}

static void nvtx_domain_name_category_w(nvtxDomainHandle_t domain, uint32_t category,
                                        const wchar_t *name)
{
    nvtx_name_category(domain, category, NULL, name);
}

static nvtxStringHandle_t nvtx_domain_register_string_a(nvtxDomainHandle_t domain, const char *s)
{
    (void)domain; /* string ids are per file, shared by all domains */
    return s ? nvtx_register_string(s, NULL) : NULL;
}

static nvtxStringHandle_t nvtx_domain_register_string_w(nvtxDomainHandle_t domain, const wchar_t *s)
{
    (void)domain;
    return s ? nvtx_register_string(NULL, s) : NULL;
}

static nvtxDomainHandle_t nvtx_domain_create_a(const char *name)
{
    return name ? nvtx_domain_create(name, NULL) : NULL;
}

static nvtxDomainHandle_t nvtx_domain_create_w(const wchar_t *name)
{
    return name ? nvtx_domain_create(NULL, name) : NULL;
}

/* The handle stays valid (a later create by the same name returns it again). */
static void nvtx_domain_destroy(nvtxDomainHandle_t domain)
{
    uint64_t ticks = clock_ticks();
    struct agent_thread *t = ring_self(ticks);
    if (domain && t)
        nvtx_put_short(t, TRACE_EV_DOMAIN_DESTROY, ticks, 0, nvtx_domain_id(domain), NULL);
}

/* nvtxInitialize only forces NVTX to load us, which has happened by the time it is called. */
static void nvtx_initialize(const void *reserved)
{
    (void)reserved;
}

#define NVTX_NAME_FUNCTIONS(fn, type, kind, to_handle)                                             \
    static void fn##_a(type h, const char *name)                                                   \
    {                                                                                              \
        nvtx_name_thing(kind, to_handle(h), name, NULL);                                           \
    }                                                                                              \
    static void fn##_w(type h, const wchar_t *name)                                                \
    {                                                                                              \
        nvtx_name_thing(kind, to_handle(h), NULL, name);                                           \
    }
#define NVTX_POINTER_HANDLE(h) ((uint64_t)(uintptr_t)(h))
#define NVTX_DEVICE_HANDLE(h) ((uint64_t)(uint32_t)(h))
NVTX_NAME_FUNCTIONS(nvtx_name_cu_device, nvtx_CUdevice, TRACE_RESOURCE_CU_DEVICE,
                    NVTX_DEVICE_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cu_context, nvtx_CUcontext, TRACE_RESOURCE_CU_CONTEXT,
                    NVTX_POINTER_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cu_stream, nvtx_CUstream, TRACE_RESOURCE_CU_STREAM,
                    NVTX_POINTER_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cu_event, nvtx_CUevent, TRACE_RESOURCE_CU_EVENT, NVTX_POINTER_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cuda_device, int, TRACE_RESOURCE_CUDART_DEVICE, NVTX_DEVICE_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cuda_stream, nvtx_cudaStream_t, TRACE_RESOURCE_CUDART_STREAM,
                    NVTX_POINTER_HANDLE)
NVTX_NAME_FUNCTIONS(nvtx_name_cuda_event, nvtx_cudaEvent_t, TRACE_RESOURCE_CUDART_EVENT,
                    NVTX_POINTER_HANDLE)

/* ---- the tables and the entry point ---- */

#define FN(f) ((NvtxFunctionPointer)(f))

static const NvtxFunctionPointer nvtx_core_table[NVTX_CBID_CORE_SIZE] = {
    [NVTX_CBID_CORE_MarkEx] = FN(nvtx_mark_ex),
    [NVTX_CBID_CORE_MarkA] = FN(nvtx_mark_a),
    [NVTX_CBID_CORE_MarkW] = FN(nvtx_mark_w),
    [NVTX_CBID_CORE_RangeStartEx] = FN(nvtx_range_start_ex),
    [NVTX_CBID_CORE_RangeStartA] = FN(nvtx_range_start_a),
    [NVTX_CBID_CORE_RangeStartW] = FN(nvtx_range_start_w),
    [NVTX_CBID_CORE_RangeEnd] = FN(nvtx_range_end),
    [NVTX_CBID_CORE_RangePushEx] = FN(nvtx_range_push_ex),
    [NVTX_CBID_CORE_RangePushA] = FN(nvtx_range_push_a),
    [NVTX_CBID_CORE_RangePushW] = FN(nvtx_range_push_w),
    [NVTX_CBID_CORE_RangePop] = FN(nvtx_range_pop),
    [NVTX_CBID_CORE_NameCategoryA] = FN(nvtx_name_category_a),
    [NVTX_CBID_CORE_NameCategoryW] = FN(nvtx_name_category_w),
    [NVTX_CBID_CORE_NameOsThreadA] = FN(nvtx_name_os_thread_a),
    [NVTX_CBID_CORE_NameOsThreadW] = FN(nvtx_name_os_thread_w),
};

static const NvtxFunctionPointer nvtx_core2_table[NVTX_CBID_CORE2_SIZE] = {
    [NVTX_CBID_CORE2_DomainMarkEx] = FN(nvtx_domain_mark_ex),
    [NVTX_CBID_CORE2_DomainRangeStartEx] = FN(nvtx_domain_range_start_ex),
    [NVTX_CBID_CORE2_DomainRangeEnd] = FN(nvtx_domain_range_end),
    [NVTX_CBID_CORE2_DomainRangePushEx] = FN(nvtx_domain_range_push_ex),
    [NVTX_CBID_CORE2_DomainRangePop] = FN(nvtx_domain_range_pop),
    [NVTX_CBID_CORE2_DomainResourceCreate] = FN(nvtx_domain_resource_create),
    [NVTX_CBID_CORE2_DomainResourceDestroy] = FN(nvtx_domain_resource_destroy),
    [NVTX_CBID_CORE2_DomainNameCategoryA] = FN(nvtx_domain_name_category_a),
    [NVTX_CBID_CORE2_DomainNameCategoryW] = FN(nvtx_domain_name_category_w),
    [NVTX_CBID_CORE2_DomainRegisterStringA] = FN(nvtx_domain_register_string_a),
    [NVTX_CBID_CORE2_DomainRegisterStringW] = FN(nvtx_domain_register_string_w),
    [NVTX_CBID_CORE2_DomainCreateA] = FN(nvtx_domain_create_a),
    [NVTX_CBID_CORE2_DomainCreateW] = FN(nvtx_domain_create_w),
    [NVTX_CBID_CORE2_DomainDestroy] = FN(nvtx_domain_destroy),
    [NVTX_CBID_CORE2_Initialize] = FN(nvtx_initialize),
};

static const NvtxFunctionPointer nvtx_cuda_table[NVTX_CBID_CUDA_SIZE] = {
    [NVTX_CBID_CUDA_NameCuDeviceA] = FN(nvtx_name_cu_device_a),
    [NVTX_CBID_CUDA_NameCuDeviceW] = FN(nvtx_name_cu_device_w),
    [NVTX_CBID_CUDA_NameCuContextA] = FN(nvtx_name_cu_context_a),
    [NVTX_CBID_CUDA_NameCuContextW] = FN(nvtx_name_cu_context_w),
    [NVTX_CBID_CUDA_NameCuStreamA] = FN(nvtx_name_cu_stream_a),
    [NVTX_CBID_CUDA_NameCuStreamW] = FN(nvtx_name_cu_stream_w),
    [NVTX_CBID_CUDA_NameCuEventA] = FN(nvtx_name_cu_event_a),
    [NVTX_CBID_CUDA_NameCuEventW] = FN(nvtx_name_cu_event_w),
};

static const NvtxFunctionPointer nvtx_cudart_table[NVTX_CBID_CUDART_SIZE] = {
    [NVTX_CBID_CUDART_NameCudaDeviceA] = FN(nvtx_name_cuda_device_a),
    [NVTX_CBID_CUDART_NameCudaDeviceW] = FN(nvtx_name_cuda_device_w),
    [NVTX_CBID_CUDART_NameCudaStreamA] = FN(nvtx_name_cuda_stream_a),
    [NVTX_CBID_CUDART_NameCudaStreamW] = FN(nvtx_name_cuda_stream_w),
    [NVTX_CBID_CUDART_NameCudaEventA] = FN(nvtx_name_cuda_event_a),
    [NVTX_CBID_CUDART_NameCudaEventW] = FN(nvtx_name_cuda_event_w),
};

static void nvtx_fill_module(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
                             const NvtxFunctionPointer *ours, unsigned count)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (unsigned i = 1; i <= size && i < count; i++)
        if (ours[i] && table[i])
            *table[i] = ours[i];
}

/* Called by NVTX once per library that embeds it, possibly from several threads at once:
 * agent_init() runs the process-wide start once and never blocks; every call fills its
 * caller's tables. When the agent is inert (no session folder), returning 0 leaves the
 * library on NVTX's own no-op path (the cheapest, with NVTX's no-tool return values); a
 * library that raced the failing start keeps our callbacks, which then only count levels. */
__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    clock_init(); /* before our callbacks are reachable: a racing caller's first timestamps */
    if (agent_init(TRACE_FLAG_NVTX) < 0)
        return 0;
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    if (!callbacks || callbacks->struct_size < sizeof(*callbacks))
        return 0;
    nvtx_fill_module(callbacks, NVTX_CB_MODULE_CORE, nvtx_core_table, NVTX_CBID_CORE_SIZE);
    nvtx_fill_module(callbacks, NVTX_CB_MODULE_CORE2, nvtx_core2_table, NVTX_CBID_CORE2_SIZE);
    nvtx_fill_module(callbacks, NVTX_CB_MODULE_CUDA, nvtx_cuda_table, NVTX_CBID_CUDA_SIZE);
    nvtx_fill_module(callbacks, NVTX_CB_MODULE_CUDART, nvtx_cudart_table, NVTX_CBID_CUDART_SIZE);
    const NvtxExportTableVersionInfo *version = get_export_table(NVTX_ETID_VERSIONINFO);
    if (version && version->struct_size >= sizeof(*version) && version->SetInjectionNvtxVersion)
        version->SetInjectionNvtxVersion(NVTX_VERSION);
    return 1;
}
