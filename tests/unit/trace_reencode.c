/* trace_reencode FILE...: decodes every record of raw trace files with its generated decoder
 * and encodes it again (tests/trace_reencode.h), the events of TRACE_THREAD_EVENTS records as
 * the records they stand for too; prints per file the records and the types seen, and fails
 * if one record's bytes differ or a thread's events do not decode. Run on files an older build
 * wrote, it shows that the generated encoders write the same bytes (docs/trace-format.md). */
#include <stdio.h>
#include <stdlib.h>

#include "trace/events.h"
#include "trace_reencode.h"

static struct trace_events_reader events;
static uint8_t event_record[TRACE_CHUNK_HEADER_SIZE + TRACE_EV_STRING_MAX + 256];
static uint64_t thread_ticks[1u << 16];

int main(int argc, char **argv)
{
    static uint8_t scratch[4u << 20]; /* the agent's largest record: a 1 MiB string */
    struct trace_chunk_builder b = {.buf = scratch, .cap = sizeof scratch};
    int rc = argc > 1 ? 0 : 2;
    for (int a = 1; a < argc; a++) {
        struct trace_reader r;
        if (trace_reader_open(&r, argv[a]) < 0) {
            fprintf(stderr, "lantern: %s: %s\n", argv[a], r.damage);
            rc = 1;
            continue;
        }
        unsigned type;
        struct trace_fields f;
        size_t records = 0, differ = 0, unknown = 0, seen[256] = {0};
        int next;
        while ((next = trace_reader_next(&r, &type, &f)) == 1) {
            int same = trace_reencode_same(type, f, &b);
            records++;
            unknown += same < 0;
            if (same == 0 && differ++ < 5)
                fprintf(stderr, "lantern: %s: record %zu (type %u) differs from its encoding\n",
                        argv[a], records, type);
            seen[type & 255]++;
            struct trace_thread_events te;
            if (type != TRACE_THREAD_EVENTS || trace_get_thread_events(&f, &te) < 0)
                continue;
            trace_events_begin(&events, te.events.bytes, te.events.len, te.thread_idx,
                               &thread_ticks[te.thread_idx & 0xFFFF], NULL);
            struct trace_chunk_builder as_bytes = {.buf = event_record, .cap = sizeof event_record};
            struct trace_fields ef;
            uint64_t zero;
            int ev;
            while ((ev = trace_events_next(&events, &type, &ef)) == 1) {
                records++;
                ef = trace_reencode_record(type, ef, &as_bytes, &zero);
                differ += trace_reencode_same(type, ef, &b) != 1;
                seen[type & 255]++;
            }
            differ += ev < 0;
        }
        printf("%s: %zu records, %zu differ, %zu of unknown types; types", argv[a], records, differ,
               unknown);
        for (unsigned t = 0; t < 256; t++)
            if (seen[t])
                printf(" %u", t);
        printf("\n");
        if (differ || next < 0)
            rc = 1;
        trace_reader_close(&r);
    }
    return rc;
}
