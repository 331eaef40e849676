/* Writes synthetic raw trace files for the importer's tests and benchmark through the
 * generated record encoders (src/trace/records.def), as the agent writes them. */
#ifndef LANTERN_TESTS_RAW_WRITER_H
#define LANTERN_TESTS_RAW_WRITER_H

#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct raw_writer {
    FILE *file;
    uint8_t *buf;
    size_t cap;
    struct trace_chunk_builder b;
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

/* Appends one record through its generated encoder (src/trace/records.h), e.g.
 *   RAW(w, push, .thread_idx = 1, .ts = 2000, .domain = 0, .depth = 0, .name = 3);
 * fields left out are 0, and optional trailing zeros are not written, as the agent does. */
#define RAW(w, name, ...) raw_check(trace_put_##name(&(w)->b, &(struct trace_##name){__VA_ARGS__}))

static inline void raw_check(int put)
{
    if (put < 0)
        abort();
}

static inline void raw_process(struct raw_writer *w, uint64_t pid, uint64_t start,
                               const char *cmdline, size_t cmdline_len, uint64_t flags,
                               const char *trace)
{
    RAW(w, process, .pid = pid, .ppid = 1, .start = start,
        .wall_ns = 1700000000000000000ull + start, .exe = trace_cstr("/bin/demo"),
        .cmdline = trace_bytes(cmdline, cmdline_len), .host = trace_cstr("h1"),
        .agent_flags = flags, .lantern_version = trace_cstr("0.1.0"),
        .trace_list = trace_cstr(trace ? trace : ""));
}

static inline void raw_string(struct raw_writer *w, uint64_t id, const char *s)
{
    RAW(w, string, .id = id, .bytes = trace_cstr(s));
}

static inline void raw_thread(struct raw_writer *w, uint64_t idx, uint64_t tid, uint64_t ts)
{
    RAW(w, thread, .thread_idx = idx, .os_tid = tid, .first_seen = ts);
}

static inline void raw_push(struct raw_writer *w, uint64_t idx, uint64_t ts, uint64_t domain,
                            uint64_t depth, uint64_t name)
{
    RAW(w, push, .thread_idx = idx, .ts = ts, .domain = domain, .depth = depth, .name = name);
}

static inline void raw_pop(struct raw_writer *w, uint64_t idx, uint64_t ts, uint64_t domain,
                           uint64_t depth)
{
    RAW(w, pop, .thread_idx = idx, .ts = ts, .domain = domain, .depth = depth);
}

#endif
