/* The flight recorder's raw files (trace/segments.h): a chunk split into definitions and
 * events keeps every record and every timestamp exactly; joined files read in sequence order;
 * segment names round-trip; the segment length and count cover the ring. */
#include "harness.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"
#include "trace/segments.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A chunk mixing definitions and events, each with a timestamp where it has one. */
static void build_mixed(struct trace_chunk_builder *b, uint8_t *buf, size_t cap)
{
    trace_chunk_begin(b, buf, cap, 1000000);
    struct trace_clock clock = {.tsc = 5, .ts = 1000500};
    struct trace_thread thread = {.thread_idx = 1, .os_tid = 42, .first_seen = 999000};
    struct trace_string str = {.id = 3, .bytes = trace_cstr("kernel_name")};
    struct trace_cuda_api api = {
        .os_tid = 42, .cbid = 7, .name = 3, .start = 1002000, .end = 1003000, .correlation = 9};
    struct trace_domain domain = {.domain = 1, .name = 3};
    struct trace_cuda_kernel k = {.start = 1004000, .end = 1009000, .name = 3, .grid_x = 8};
    ASSERT_EQ(trace_put_clock(b, &clock), 0);
    ASSERT_EQ(trace_put_thread(b, &thread), 0);
    ASSERT_EQ(trace_put_string(b, &str), 0);
    ASSERT_EQ(trace_put_cuda_api(b, &api), 0);
    ASSERT_EQ(trace_put_domain(b, &domain), 0);
    ASSERT_EQ(trace_put_cuda_kernel(b, &k), 0);
}

/* The records of a finished chunk: types in order, and the timestamps read. */
static size_t read_chunk(uint8_t *chunk, unsigned *types, uint64_t *ts)
{
    uint64_t base, prev;
    memcpy(&base, chunk + 16, 8);
    prev = base;
    uint32_t body;
    memcpy(&body, chunk + 4, 4);
    struct trace_fields f = {.p = chunk + TRACE_CHUNK_HEADER_SIZE,
                             .end = chunk + TRACE_CHUNK_HEADER_SIZE + body,
                             .prev_ts = &prev};
    size_t n = 0;
    while (f.p < f.end) {
        types[n] = (unsigned)trace_get_u(&f);
        uint64_t len = trace_get_u(&f);
        struct trace_fields r = {.p = f.p, .end = f.p + len, .prev_ts = &prev};
        ts[n] = 0;
        if (types[n] == TRACE_CLOCK) {
            struct trace_clock c;
            trace_get_clock(&r, &c);
            ts[n] = c.ts;
        } else if (types[n] == TRACE_THREAD) {
            struct trace_thread t;
            trace_get_thread(&r, &t);
            ts[n] = t.first_seen;
        } else if (types[n] == TRACE_CUDA_API) {
            struct trace_cuda_api a;
            trace_get_cuda_api(&r, &a);
            ts[n] = a.start * 10000000 + (a.end - a.start);
        } else if (types[n] == TRACE_CUDA_KERNEL) {
            struct trace_cuda_kernel k;
            trace_get_cuda_kernel(&r, &k);
            ts[n] = k.start * 10000000 + (k.end - k.start);
        }
        f.p += len;
        n++;
    }
    return n;
}

static void split_keeps_every_record_and_timestamp(void)
{
    static uint8_t in_buf[4096], d_buf[4096], e_buf[4096];
    struct trace_chunk_builder in, defs, events;
    build_mixed(&in, in_buf, sizeof in_buf);
    ASSERT(trace_chunk_has_definition(&in));
    trace_chunk_begin(&defs, d_buf, sizeof d_buf, in.base_ts);
    trace_chunk_begin(&events, e_buf, sizeof e_buf, in.base_ts);
    ASSERT_EQ(trace_chunk_split(&in, &defs, &events), 0);
    trace_chunk_finish(&defs);
    trace_chunk_finish(&events);
    unsigned types[8];
    uint64_t ts[8];
    ASSERT_EQ(read_chunk(d_buf, types, ts), 3);
    ASSERT_EQ(types[0], TRACE_THREAD);
    ASSERT_EQ(ts[0], 999000);
    ASSERT_EQ(types[1], TRACE_STRING);
    ASSERT_EQ(types[2], TRACE_DOMAIN);
    ASSERT_EQ(read_chunk(e_buf, types, ts), 3);
    ASSERT_EQ(types[0], TRACE_CLOCK);
    ASSERT_EQ(ts[0], 1000500);
    ASSERT_EQ(types[1], TRACE_CUDA_API);
    ASSERT_EQ(ts[1], 1002000ull * 10000000 + 1000);
    ASSERT_EQ(types[2], TRACE_CUDA_KERNEL);
    ASSERT_EQ(ts[2], 1004000ull * 10000000 + 5000);
    struct trace_chunk_builder only_events;
    static uint8_t o_buf[256];
    trace_chunk_begin(&only_events, o_buf, sizeof o_buf, 0);
    struct trace_clock clock = {.tsc = 1, .ts = 2};
    trace_put_clock(&only_events, &clock);
    ASSERT(!trace_chunk_has_definition(&only_events));
}

static void segment_names_round_trip(void)
{
    char path[256];
    ASSERT_EQ(trace_segment_path(path, sizeof path, "/s/12-345.lrt", 7), 0);
    ASSERT_STR_EQ(path, "/s/12-345.000007.lrs");
    ASSERT_EQ(trace_segment_number("12-345.000007.lrs", "12-345.lrt"), 7);
    ASSERT_EQ(trace_segment_number("12-345.1234567.lrs", "12-345.lrt"), 1234567);
    ASSERT_EQ(trace_segment_number("12-3456.000007.lrs", "12-345.lrt"), 0);
    ASSERT_EQ(trace_segment_number("12-345.lrt", "12-345.lrt"), 0);
    ASSERT_EQ(trace_segment_path(path, sizeof path, "/s/12-345.lrb", 1), -EINVAL);
}

static void segments_cover_the_ring(void)
{
    ASSERT_EQ(trace_segment_ns(2000000000ull), 500000000ull);
    ASSERT_EQ(trace_segment_ns(100000000ull), TRACE_SEGMENT_MIN_NS);
    ASSERT_EQ(trace_segment_ns(86400000000000ull), TRACE_SEGMENT_MAX_NS);
    for (uint64_t ring = 500000000ull; ring < 4000000000000ull; ring = ring * 3 + 1) {
        uint64_t seg = trace_segment_ns(ring), kept = trace_segments_kept(ring);
        ASSERT(kept * seg >= ring + seg); /* the ring before any moment, and one to spare */
        ASSERT(kept * seg <= ring + 2 * seg);
    }
}

/* Two files whose chunks interleave by seq are joined in seq order; a missing one and one
 * shorter than its header add nothing. */
static void join_orders_chunks_by_sequence(void)
{
    char a[] = "/tmp/lantern-seg-a-XXXXXX", b[] = "/tmp/lantern-seg-b-XXXXXX",
         out[] = "/tmp/lantern-seg-o-XXXXXX";
    int fds[2] = {mkstemp(a), mkstemp(b)};
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    static uint8_t buf[512];
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(write(fds[i], header, sizeof header), (ssize_t)sizeof header);
    for (uint64_t seq = 1; seq <= 6; seq++) { /* odd into a, even into b */
        struct trace_chunk_builder c;
        trace_chunk_begin(&c, buf, sizeof buf, seq);
        struct trace_dropped d = {.thread_idx = 0, .count = seq};
        trace_put_dropped(&c, &d);
        c.seq = seq;
        size_t len = trace_chunk_finish(&c);
        ASSERT_EQ(write(fds[seq % 2 ? 0 : 1], buf, len), (ssize_t)len);
    }
    close(fds[0]);
    close(fds[1]);
    /* a segment the writer had just created when its process died: no header yet */
    char fresh[] = "/tmp/lantern-seg-f-XXXXXX";
    int fresh_fd = mkstemp(fresh);
    ASSERT_EQ(write(fresh_fd, header, 5), 5);
    close(fresh_fd);
    int o = mkstemp(out);
    const char *paths[] = {a, "/tmp/lantern-no-such-segment.lrs", b, fresh};
    ASSERT_EQ(trace_files_join(o, paths, 4), 0);
    close(o);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, out), 0);
    unsigned type;
    struct trace_fields f;
    uint64_t expect = 1;
    while (trace_reader_next(&r, &type, &f) == 1) {
        struct trace_dropped d;
        ASSERT_EQ(trace_get_dropped(&f, &d), 0);
        ASSERT_EQ(d.count, expect++);
    }
    ASSERT_EQ(expect, 7);
    ASSERT_EQ(r.misordered_chunks, 0);
    trace_reader_close(&r);
    unlink(a);
    unlink(b);
    unlink(fresh);
    unlink(out);
}

/* A new segment: created beside the others (a folder's descriptor, as the launcher's) with
 * its file header, close-on-exec; one that exists already is never written over. */
static void segment_create_writes_its_header_once(void)
{
    char dir[] = "/tmp/lantern-seg-d-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    ASSERT(dir_fd >= 0);
    int fd = trace_segment_create(dir_fd, "1-2.000001.lrs");
    ASSERT(fd >= 0);
    ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    ASSERT_EQ(trace_write_all(fd, "x", 1), 0);
    close(fd);
    ASSERT_EQ(trace_segment_create(dir_fd, "1-2.000001.lrs"), -EEXIST);
    uint8_t expect[TRACE_FILE_HEADER_SIZE], got[TRACE_FILE_HEADER_SIZE + 2];
    trace_file_header(expect);
    int rd = openat(dir_fd, "1-2.000001.lrs", O_RDONLY);
    ASSERT_EQ(read(rd, got, sizeof got), (ssize_t)sizeof expect + 1);
    ASSERT(memcmp(got, expect, sizeof expect) == 0 && got[sizeof expect] == 'x');
    close(rd);
    unlinkat(dir_fd, "1-2.000001.lrs", 0);
    close(dir_fd);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"split_keeps_every_record_and_timestamp", split_keeps_every_record_and_timestamp},
        {"segment_names_round_trip", segment_names_round_trip},
        {"segments_cover_the_ring", segments_cover_the_ring},
        {"join_orders_chunks_by_sequence", join_orders_chunks_by_sequence},
        {"segment_create_writes_its_header_once", segment_create_writes_its_header_once},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
