/* The raw trace codec: records round-trip exactly, and a damaged file yields everything
 * before the damage and a reason. */
#include "harness.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static char path[] = "/tmp/lantern-codec-XXXXXX";

static size_t build_chunk(uint8_t *buf, size_t cap, uint64_t base, int n)
{
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, cap, base);
    for (int i = 0; i < n; i++) {
        struct trace_record_mark m = trace_record_begin(&b, TRACE_PUSH);
        trace_put_u(&b, 1);
        trace_put_ts(&b, base + 100 * (uint64_t)i - (i % 2 ? 150 : 0));
        trace_put_i(&b, -i);
        trace_put_s(&b, "abc", 3);
        trace_put_f(&b, 2.5);
        ASSERT_EQ(trace_record_end(&b, m), 0);
    }
    return trace_chunk_finish(&b);
}

static void write_file(int chunks, size_t truncate_by, int corrupt_last)
{
    uint8_t header[16], buf[4096];
    trace_file_header(header);
    FILE *f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    size_t len = 0;
    for (int c = 0; c < chunks; c++) {
        len = build_chunk(buf, sizeof buf, 1000000 * (uint64_t)(c + 1), 10);
        if (c == chunks - 1 && corrupt_last)
            buf[len - 3] ^= 0x55;
        fwrite(buf, 1, c == chunks - 1 ? len - truncate_by : len, f);
    }
    fclose(f);
}

static int read_all(struct trace_reader *r, int *records)
{
    unsigned type;
    struct trace_fields f;
    int rc;
    *records = 0;
    while ((rc = trace_reader_next(r, &type, &f)) == 1) {
        ASSERT_EQ(type, TRACE_PUSH);
        ASSERT_EQ(trace_get_u(&f), 1);
        uint64_t ts = trace_get_ts(&f);
        int i = *records % 10;
        uint64_t base = 1000000 * (uint64_t)(*records / 10 + 1);
        ASSERT_EQ(ts, base + 100 * (uint64_t)i - (i % 2 ? 150 : 0));
        ASSERT_EQ(trace_get_i(&f), -i);
        const uint8_t *s;
        ASSERT_EQ(trace_get_s(&f, &s), 3);
        ASSERT(memcmp(s, "abc", 3) == 0);
        ASSERT(trace_get_f(&f) == 2.5);
        ASSERT_EQ(trace_get_u(&f), 0); /* absent trailing field reads as 0 */
        ASSERT_EQ(f.bad, 0);
        (*records)++;
    }
    return rc;
}

static void records_round_trip(void)
{
    write_file(3, 0, 0);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    int n;
    ASSERT_EQ(read_all(&r, &n), 0);
    ASSERT_EQ(n, 30);
    trace_reader_close(&r);
}

static void truncated_file_reads_up_to_damage(void)
{
    write_file(3, 7, 0);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    int n;
    ASSERT_EQ(read_all(&r, &n), -EBADMSG);
    ASSERT_EQ(n, 20);
    ASSERT(strstr(r.damage, "truncated") != NULL);
    ASSERT(r.bytes_lost > 0);
    trace_reader_close(&r);
}

static void corrupt_chunk_is_detected(void)
{
    write_file(2, 0, 1);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    int n;
    ASSERT_EQ(read_all(&r, &n), -EBADMSG);
    ASSERT_EQ(n, 10);
    ASSERT(strstr(r.damage, "checksum") != NULL);
    trace_reader_close(&r);
}

/* Version 2 chunks: the CRC covers body_len, record_count and base_ts too. Every single-bit
 * flip of a one-chunk file's chunk (header and body) is found: no flip decodes silently. */
static void every_chunk_bit_flip_is_detected(void)
{
    uint8_t header[16], chunk[4096];
    trace_file_header(header);
    size_t len = build_chunk(chunk, sizeof chunk, 1000000, 3);
    for (size_t bit = 0; bit < len * 8; bit++) {
        chunk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        FILE *f = fopen(path, "wb");
        fwrite(header, 1, 16, f);
        fwrite(chunk, 1, len, f);
        fclose(f);
        chunk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        struct trace_reader r;
        ASSERT_EQ(trace_reader_open(&r, path), 0);
        unsigned type;
        struct trace_fields fl;
        if (trace_reader_next(&r, &type, &fl) != -EBADMSG) {
            fprintf(stderr, "flip of bit %zu (byte %zu) not detected\n", bit % 8, bit / 8);
            ASSERT(0);
        }
        trace_reader_close(&r);
    }
}

/* A chunk as versions 1 to 4 wrote it: a 24-byte header (no seq); its CRC over the body
 * alone (version 1) or over the header after the CRC and the body (2 to 4). */
static size_t build_old_chunk(uint8_t *buf, size_t cap, uint64_t base, int n, unsigned version)
{
    size_t len = build_chunk(buf, cap, base, n);
    memmove(buf + TRACE_CHUNK_HEADER_SIZE_V4, buf + TRACE_CHUNK_HEADER_SIZE,
            len - TRACE_CHUNK_HEADER_SIZE);
    len -= TRACE_CHUNK_HEADER_SIZE - TRACE_CHUNK_HEADER_SIZE_V4;
    uint32_t crc = 0;
    if (version > 1)
        crc = trace_crc32c(trace_crc32c(0, buf + 4, 4), buf + 12, 12);
    crc = trace_crc32c(crc, buf + TRACE_CHUNK_HEADER_SIZE_V4, len - TRACE_CHUNK_HEADER_SIZE_V4);
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (uint8_t)(crc >> (8 * i));
    return len;
}

/* Files of the previous format versions (24-byte chunk headers; version 1: CRC over the body
 * only) still read, in file order. */
static void version_1_and_4_files_still_read(void)
{
    uint8_t header[16], chunk[4096];
    struct trace_reader r;
    FILE *f;
    int n;
    for (unsigned version = 1; version <= 4; version += 3) {
        trace_file_header(header);
        header[8] = (uint8_t)version;
        f = fopen(path, "wb");
        fwrite(header, 1, 16, f);
        for (int c = 0; c < 2; c++) {
            size_t len = build_old_chunk(chunk, sizeof chunk, 1000000 * (uint64_t)(c + 1), 10,
                                         version);
            fwrite(chunk, 1, len, f);
        }
        fclose(f);
        ASSERT_EQ(trace_reader_open(&r, path), 0);
        ASSERT_EQ(r.version, version);
        ASSERT_EQ(read_all(&r, &n), 0);
        ASSERT_EQ(n, 20);
        ASSERT_EQ(r.duplicate_chunks + r.misordered_chunks, 0);
        trace_reader_close(&r);
    }
    /* ... and a newer version than this reader knows is refused, saying so */
    header[8] = TRACE_FORMAT_VERSION + 1;
    f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    fclose(f);
    ASSERT_EQ(trace_reader_open(&r, path), -EPROTO);
    char expected[64];
    snprintf(expected, sizeof expected, "unsupported trace format version %u",
             TRACE_FORMAT_VERSION + 1);
    ASSERT(strstr(r.damage, expected) != NULL);
    trace_reader_close(&r);
}

/* Chunks 1, 2, 3 of a file and their numbers (build_chunk: the process's counter). */
static size_t three_chunks(uint8_t chunks[3][4096], size_t len[3], uint64_t seq[3])
{
    for (int c = 0; c < 3; c++) {
        len[c] = build_chunk(chunks[c], sizeof chunks[c], 1000000 * (uint64_t)(c + 1), 10);
        memcpy(&seq[c], chunks[c] + 24, 8);
    }
    ASSERT(seq[0] < seq[1] && seq[1] < seq[2]);
    return len[0] + len[1] + len[2];
}

static void write_chunks(uint8_t chunks[3][4096], const size_t len[3], const int *order, int n)
{
    uint8_t header[16];
    trace_file_header(header);
    FILE *f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    for (int i = 0; i < n; i++)
        fwrite(chunks[order[i]], 1, len[order[i]], f);
    fclose(f);
}

/* A chunk written twice (a writer's retry, an appender that wrote what was written): its
 * records are read once, and the copy is counted. */
static void duplicated_chunk_is_read_once(void)
{
    static uint8_t chunks[3][4096];
    size_t len[3];
    uint64_t seq[3];
    three_chunks(chunks, len, seq);
    write_chunks(chunks, len, (const int[]){0, 1, 1, 2, 1}, 5);
    struct trace_reader r;
    int n;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    ASSERT_EQ(read_all(&r, &n), 0);
    ASSERT_EQ(n, 30);
    ASSERT_EQ(r.duplicate_chunks, 2);
    ASSERT_EQ(r.misordered_chunks, 0);
    trace_reader_close(&r);
}

/* Chunks written in another order than numbered come back in their numbers' order (their
 * timestamps, from read_all, say which is which), counted. */
static void chunks_are_read_in_sequence_order(void)
{
    static uint8_t chunks[3][4096];
    size_t len[3];
    uint64_t seq[3];
    three_chunks(chunks, len, seq);
    write_chunks(chunks, len, (const int[]){0, 2, 1}, 3);
    struct trace_reader r;
    int n;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    ASSERT_EQ(read_all(&r, &n), 0);
    ASSERT_EQ(n, 30);
    ASSERT_EQ(r.duplicate_chunks, 0);
    ASSERT_EQ(r.misordered_chunks, 1);
    trace_reader_close(&r);
}

/* trace_file_last_chunk: the end of the last whole chunk (a partial one after it is not
 * whole) and the number after the highest; an appender's chunks numbered from there are read
 * after the file's own, and a file of another version cannot be appended to. */
static void last_chunk_gives_where_an_appender_goes_on(void)
{
    static uint8_t chunks[3][4096];
    size_t len[3];
    uint64_t seq[3];
    three_chunks(chunks, len, seq);
    write_chunks(chunks, len, (const int[]){1, 0}, 2);
    FILE *f = fopen(path, "ab");
    fwrite(chunks[2], 1, len[2] - 5, f); /* a partial chunk: the writer was killed */
    fclose(f);
    int fd = open(path, O_RDWR);
    ASSERT(fd >= 0);
    uint64_t whole = 0, next = 0;
    ASSERT_EQ(trace_file_last_chunk(fd, &whole, &next), 0);
    ASSERT_EQ(whole, 16 + len[0] + len[1]);
    ASSERT_EQ(next, seq[1] + 1);
    ASSERT_EQ(ftruncate(fd, (off_t)whole), 0);
    /* the appender: a chunk numbered next, as codec.h says */
    uint8_t buf[4096];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, 3000000);
    for (int i = 0; i < 10; i++) {
        struct trace_record_mark m = trace_record_begin(&b, TRACE_PUSH);
        trace_put_u(&b, 1);
        trace_put_ts(&b, 3000000 + 100 * (uint64_t)i - (i % 2 ? 150 : 0));
        trace_put_i(&b, -i);
        trace_put_s(&b, "abc", 3);
        trace_put_f(&b, 2.5);
        ASSERT_EQ(trace_record_end(&b, m), 0);
    }
    b.seq = next;
    size_t n_bytes = trace_chunk_finish(&b);
    ASSERT_EQ(pwrite(fd, buf, n_bytes, (off_t)whole), (ssize_t)n_bytes);
    ASSERT_EQ(trace_file_last_chunk(fd, &whole, &next), 0);
    ASSERT_EQ(next, seq[1] + 2);
    close(fd);
    struct trace_reader r;
    int n;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    ASSERT_EQ(read_all(&r, &n), 0);
    ASSERT_EQ(n, 30);
    ASSERT_EQ(r.misordered_chunks, 1); /* chunk 2 lies before chunk 1 */
    trace_reader_close(&r);
    /* a version 4 file: -EPROTO */
    uint8_t header[16];
    trace_file_header(header);
    header[8] = 4;
    f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    fclose(f);
    fd = open(path, O_RDONLY);
    ASSERT_EQ(trace_file_last_chunk(fd, &whole, &next), -EPROTO);
    close(fd);
}

static void not_a_trace_is_refused(void)
{
    FILE *f = fopen(path, "wb");
    fwrite("SQLite format 3\0 and more bytes", 1, 32, f);
    fclose(f);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), -EBADMSG);
    ASSERT(strstr(r.damage, "not a Lantern raw trace") != NULL);
    trace_reader_close(&r);
}

static void record_that_does_not_fit_is_rolled_back(void)
{
    uint8_t buf[80];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, 0);
    struct trace_string s = {.id = 1,
                             .bytes = trace_cstr("0123456789012345678901234567890123456789")};
    ASSERT_EQ(trace_put_string(&b, &s), 0);
    ASSERT_EQ(trace_put_string(&b, &s), -ENOSPC);
    ASSERT_EQ(b.records, 1);
    ASSERT_EQ(b.len, TRACE_CHUNK_HEADER_SIZE + 4 + 1 + 1 + 40);
}

static void crc32c_matches_the_standard_check_value(void)
{
    /* RFC 3720 (iSCSI) check value of CRC32C over "123456789" */
    ASSERT_EQ(trace_crc32c(0, "123456789", 9), 0xE3069283u);
    /* incremental use equals one pass, across the 8-byte fast path and the tail */
    static const char text[] = "the quick brown fox jumps over the lazy dog, twice over";
    size_t n = sizeof text - 1;
    for (size_t cut = 0; cut <= n; cut++)
        ASSERT_EQ(trace_crc32c(trace_crc32c(0, text, cut), text + cut, n - cut),
                  trace_crc32c(0, text, n));
}

int main(int argc, char **argv)
{
    int fd = mkstemp(path);
    close(fd);
    static const struct test_case tests[] = {
        { "crc32c_matches_the_standard_check_value", crc32c_matches_the_standard_check_value },
        { "records_round_trip", records_round_trip },
        { "truncated_file_reads_up_to_damage", truncated_file_reads_up_to_damage },
        { "corrupt_chunk_is_detected", corrupt_chunk_is_detected },
        { "every_chunk_bit_flip_is_detected", every_chunk_bit_flip_is_detected },
        { "version_1_and_4_files_still_read", version_1_and_4_files_still_read },
        { "duplicated_chunk_is_read_once", duplicated_chunk_is_read_once },
        { "chunks_are_read_in_sequence_order", chunks_are_read_in_sequence_order },
        { "last_chunk_gives_where_an_appender_goes_on", last_chunk_gives_where_an_appender_goes_on },
        { "not_a_trace_is_refused", not_a_trace_is_refused },
        { "record_that_does_not_fit_is_rolled_back", record_that_does_not_fit_is_rolled_back },
        { 0, 0 },
    };
    int rc = test_main(tests, argc, argv);
    unlink(path);
    return rc;
}
