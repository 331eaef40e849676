/* NVTX's ring records -> trace records: what nvtx.c put in a thread's ring becomes, in the
 * writer thread, the record records.def defines for its type (registered with
 * WRITER_TRANSLATOR, so the writer names no NVTX record). */
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/records.h"

/* The event attributes at the end of PUSH, START and MARK; the encoder leaves out trailing
 * zeros, which makes a plain push 8 bytes on disk instead of 12. */
#define NVTX_SET_EVENT(out, w)                                                                     \
    do {                                                                                           \
        const struct ring_event *ev_ = (const struct ring_event *)(w)->rec;                        \
        const struct ring_attributes *attributes_ = ring_event_attributes(ev_);                    \
        (out).name = (w)->message_id;                                                              \
        (out).category = ev_->category;                                                            \
        if (attributes_) {                                                                         \
            (out).color =                                                                          \
                ((w)->rec->flags & RING_HAS_COLOR) ? (uint64_t)attributes_->color + 1 : 0;         \
            (out).payload_type = (w)->rec->payload_type;                                           \
            (out).payload = (w)->rec->payload_type ? attributes_->payload : 0;                     \
        }                                                                                          \
    } while (0)

static void nvtx_translate(struct trace_chunk_builder *b, const struct writer_ring_record *w)
{
    const struct ring_record *rec = w->rec;
    switch (rec->type) {
    case TRACE_PUSH: {
        struct trace_push r = {
            .thread_idx = w->thread_idx, .ts = w->ts, .domain = rec->domain, .depth = rec->arg};
        NVTX_SET_EVENT(r, w);
        trace_put_push(b, &r);
        break;
    }
    case TRACE_POP:
        trace_put_pop(b, &(struct trace_pop){.thread_idx = w->thread_idx,
                                             .ts = w->ts,
                                             .domain = rec->domain,
                                             .depth = rec->arg});
        break;
    case TRACE_START: {
        struct trace_start r = {
            .thread_idx = w->thread_idx, .ts = w->ts, .range_id = rec->arg, .domain = rec->domain};
        NVTX_SET_EVENT(r, w);
        trace_put_start(b, &r);
        break;
    }
    case TRACE_END:
        trace_put_end(
            b, &(struct trace_end){.thread_idx = w->thread_idx, .ts = w->ts, .range_id = rec->arg});
        break;
    case TRACE_MARK: {
        struct trace_mark r = {.thread_idx = w->thread_idx, .ts = w->ts, .domain = rec->domain};
        NVTX_SET_EVENT(r, w);
        trace_put_mark(b, &r);
        break;
    }
    case TRACE_UNBALANCED_POP:
        trace_put_unbalanced_pop(b, &(struct trace_unbalanced_pop){.thread_idx = w->thread_idx,
                                                                   .ts = w->ts,
                                                                   .domain = rec->domain});
        break;
    case TRACE_DOMAIN_DESTROY:
        trace_put_domain_destroy(
            b, &(struct trace_domain_destroy){.domain = rec->domain, .ts = w->ts});
        break;
    case TRACE_THREAD_NAME: /* the one ring record outside NVTX's range: nvtxNameOsThread */
        trace_put_thread_name(
            b, &(struct trace_thread_name){.os_tid = rec->arg, .name = w->message_id});
        break;
    case TRACE_NAME_RESOURCE:
        trace_put_name_resource(b, &(struct trace_name_resource){.kind = rec->domain,
                                                                 .handle = rec->arg,
                                                                 .name = w->message_id});
        break;
    default:
        break;
    }
}

WRITER_TRANSLATOR(nvtx_translator) = {TRACE_NVTX_FIRST, TRACE_NVTX_LAST, nvtx_translate};
WRITER_TRANSLATOR(nvtx_thread_name_translator) = {TRACE_THREAD_NAME, TRACE_THREAD_NAME,
                                                  nvtx_translate};
