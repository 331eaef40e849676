/* The raw trace codec: records round-trip exactly, and a damaged file yields everything
 * before the damage and a reason. */
#include "harness.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/records.h"

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
    ASSERT_EQ(read_all(&r, &n), -1);
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
    ASSERT_EQ(read_all(&r, &n), -1);
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
        if (trace_reader_next(&r, &type, &fl) != -1) {
            fprintf(stderr, "flip of bit %zu (byte %zu) not detected\n", bit % 8, bit / 8);
            ASSERT(0);
        }
        trace_reader_close(&r);
    }
}

/* Files of the previous format version (CRC over the body only) still read. */
static void version_1_files_still_read(void)
{
    uint8_t header[16], chunk[4096];
    trace_file_header(header);
    header[8] = 1;
    size_t len = build_chunk(chunk, sizeof chunk, 1000000, 10);
    uint32_t crc = trace_crc32c(0, chunk + TRACE_CHUNK_HEADER_SIZE, len - TRACE_CHUNK_HEADER_SIZE);
    for (int i = 0; i < 4; i++)
        chunk[8 + i] = (uint8_t)(crc >> (8 * i));
    FILE *f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    fwrite(chunk, 1, len, f);
    fclose(f);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), 0);
    ASSERT_EQ(r.version, 1);
    int n;
    ASSERT_EQ(read_all(&r, &n), 0);
    ASSERT_EQ(n, 10);
    trace_reader_close(&r);
    /* ... and a newer version than this reader knows is refused, saying so */
    header[8] = TRACE_FORMAT_VERSION + 1;
    f = fopen(path, "wb");
    fwrite(header, 1, 16, f);
    fclose(f);
    ASSERT_EQ(trace_reader_open(&r, path), -1);
    char expected[64];
    snprintf(expected, sizeof expected, "unsupported trace format version %u",
             TRACE_FORMAT_VERSION + 1);
    ASSERT(strstr(r.damage, expected) != NULL);
    trace_reader_close(&r);
}

static void not_a_trace_is_refused(void)
{
    FILE *f = fopen(path, "wb");
    fwrite("SQLite format 3\0 and more bytes", 1, 32, f);
    fclose(f);
    struct trace_reader r;
    ASSERT_EQ(trace_reader_open(&r, path), -1);
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
    ASSERT_EQ(trace_put_string(&b, &s), -1);
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
        { "version_1_files_still_read", version_1_files_still_read },
        { "not_a_trace_is_refused", not_a_trace_is_refused },
        { "record_that_does_not_fit_is_rolled_back", record_that_does_not_fit_is_rolled_back },
        { 0, 0 },
    };
    int rc = test_main(tests, argc, argv);
    unlink(path);
    return rc;
}
