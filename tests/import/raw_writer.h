/* Writes synthetic raw trace files for the importer's tests and benchmark, with the codec
 * and the field order of src/trace/format.h (as the agent writes them). */
#ifndef LANTERN_TESTS_RAW_WRITER_H
#define LANTERN_TESTS_RAW_WRITER_H

#include "trace/codec.h"
#include "trace/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct raw_writer {
    FILE *file;
    uint8_t *buf;
    size_t cap;
    struct trace_chunk_builder b;
    struct trace_record_mark m;
};

static inline void raw_open(struct raw_writer *w, const char *path, size_t chunk_cap)
{
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    w->file = fopen(path, "wb");
    w->cap = chunk_cap;
    w->buf = malloc(chunk_cap);
    if (!w->file || !w->buf)
        abort();
    trace_file_header(header);
    fwrite(header, 1, sizeof header, w->file);
}

static inline void raw_chunk(struct raw_writer *w, uint64_t base_ts)
{
    trace_chunk_begin(&w->b, w->buf, w->cap, base_ts);
}

/* Writes the chunk under construction, less its last cut bytes (to simulate a kill). */
static inline void raw_flush(struct raw_writer *w, size_t cut)
{
    size_t len = trace_chunk_finish(&w->b);
    fwrite(w->buf, 1, len - cut, w->file);
}

static inline void raw_close(struct raw_writer *w)
{
    fclose(w->file);
    free(w->buf);
}

static inline void raw_begin(struct raw_writer *w, unsigned type)
{
    w->m = trace_record_begin(&w->b, type);
}
static inline void raw_end(struct raw_writer *w)
{
    if (trace_record_end(&w->b, w->m) < 0)
        abort();
}
static inline void raw_u(struct raw_writer *w, uint64_t v)
{
    trace_put_u(&w->b, v);
}
static inline void raw_ts(struct raw_writer *w, uint64_t v)
{
    trace_put_ts(&w->b, v);
}
static inline void raw_s(struct raw_writer *w, const char *s, size_t len)
{
    trace_put_s(&w->b, s, len);
}

static inline void raw_process(struct raw_writer *w, uint64_t pid, uint64_t start,
                               const char *cmdline, size_t cmdline_len, uint64_t flags,
                               const char *trace)
{
    raw_begin(w, TRACE_PROCESS);
    raw_u(w, pid);
    raw_u(w, 1);
    raw_ts(w, start);
    raw_u(w, 1700000000000000000ull + start);
    raw_s(w, "/bin/demo", 9);
    raw_s(w, cmdline, cmdline_len);
    raw_s(w, "h1", 2);
    raw_u(w, flags);
    raw_s(w, "0.1.0", 5);
    if (trace)
        raw_s(w, trace, strlen(trace));
    raw_end(w);
}

static inline void raw_string(struct raw_writer *w, uint64_t id, const char *s)
{
    raw_begin(w, TRACE_STRING);
    raw_u(w, id);
    raw_s(w, s, strlen(s));
    raw_end(w);
}

static inline void raw_thread(struct raw_writer *w, uint64_t idx, uint64_t tid, uint64_t ts)
{
    raw_begin(w, TRACE_THREAD);
    raw_u(w, idx);
    raw_u(w, tid);
    raw_ts(w, ts);
    raw_end(w);
}

/* EVENT: name, category, color (ARGB + 1, 0 none), payload type, payload bits; like the
 * agent (src/agent/writer.c), trailing zero fields are left out (readers read them as 0). */
static inline void raw_event(struct raw_writer *w, uint64_t name, uint64_t category, uint64_t color,
                             uint64_t payload_type, uint64_t payload)
{
    uint64_t fields[5] = {name, category, color, payload_type, payload};
    int count = 5;
    while (count > 0 && fields[count - 1] == 0)
        count--;
    for (int i = 0; i < count; i++)
        raw_u(w, fields[i]);
}

static inline void raw_push(struct raw_writer *w, uint64_t idx, uint64_t ts, uint64_t domain,
                            uint64_t depth, uint64_t name)
{
    raw_begin(w, TRACE_PUSH);
    raw_u(w, idx);
    raw_ts(w, ts);
    raw_u(w, domain);
    raw_u(w, depth);
    raw_event(w, name, 0, 0, 0, 0);
    raw_end(w);
}

static inline void raw_pop(struct raw_writer *w, uint64_t idx, uint64_t ts, uint64_t domain,
                           uint64_t depth)
{
    raw_begin(w, TRACE_POP);
    raw_u(w, idx);
    raw_ts(w, ts);
    raw_u(w, domain);
    raw_u(w, depth);
    raw_end(w);
}

#endif
