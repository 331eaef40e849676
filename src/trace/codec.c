/* Varints, records, chunks and the damage-tolerant file reader of the raw trace format.
 * The layout is specified in docs/trace-format.md, src/trace/format.h and records.def. */
#include "trace/codec.h"
#include "trace/format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- CRC32C (Castagnoli) ------------------------------------------------------------
 * The SSE4.2 crc32 instruction does 8 bytes a cycle or so; the table fallback does one byte
 * per ~2 ns and was a large share of the writer's and the importer's CPU time. */

static uint32_t crc_table[256];
static int crc_ready;    /* 1: table built; 2: table built and the CPU has SSE4.2 */

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
    int ready = 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        ready = 2;
#endif
    __atomic_store_n(&crc_ready, ready, __ATOMIC_RELEASE);
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p,
                                                               size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; len; p++, len--)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

uint32_t trace_crc32c(uint32_t crc, const void *data, size_t len)
{
    int ready = __atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE);
    if (!ready) {
        crc_init(); /* idempotent: racing initialisers write identical values */
        ready = __atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE);
    }
#if defined(__x86_64__)
    if (ready == 2)
        return ~crc32c_sse42(~crc, data, len);
#endif
    return ~crc32c_table(~crc, data, len);
}

/* ---- encoding ---------------------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void trace_file_header(uint8_t out[16])
{
    memcpy(out, TRACE_FILE_MAGIC, 8);
    put_le32(out + 8, TRACE_FORMAT_VERSION);
    put_le32(out + 12, 0);
}

void trace_chunk_begin(struct trace_chunk_builder *b, uint8_t *buf, size_t cap, uint64_t base_ts)
{
    b->buf = buf;
    b->cap = cap;
    b->len = TRACE_CHUNK_HEADER_SIZE;
    b->records = 0;
    b->base_ts = base_ts;
    b->prev_ts = base_ts;
    b->seq = 0;
    b->overflow = 0;
}

/* The chunk header's size in a file of this version: seq came with version 5. */
static size_t chunk_header_size(uint32_t version)
{
    return version >= 5 ? TRACE_CHUNK_HEADER_SIZE : TRACE_CHUNK_HEADER_SIZE_V4;
}

/* The chunk CRC of format version 2 on: the header after the crc (body_len, then
 * record_count, base_ts and from version 5 seq), then the body. */
static uint32_t chunk_crc(const uint8_t *chunk, size_t header_size, uint32_t body_len)
{
    uint32_t crc = trace_crc32c(0, chunk + 4, 4);
    crc = trace_crc32c(crc, chunk + 12, header_size - 12);
    return trace_crc32c(crc, chunk + header_size, body_len);
}

/* The process's last chunk number (codec.h: numbered in the order chunks are finished). */
static uint64_t chunk_seq_last;

size_t trace_chunk_finish(struct trace_chunk_builder *b)
{
    uint32_t body_len = (uint32_t)(b->len - TRACE_CHUNK_HEADER_SIZE);
    if (!b->seq)
        b->seq = __atomic_add_fetch(&chunk_seq_last, 1, __ATOMIC_RELAXED);
    put_le32(b->buf, TRACE_CHUNK_MAGIC);
    put_le32(b->buf + 4, body_len);
    put_le32(b->buf + 12, b->records);
    put_le64(b->buf + 16, b->base_ts);
    put_le64(b->buf + 24, b->seq);
    put_le32(b->buf + 8, chunk_crc(b->buf, TRACE_CHUNK_HEADER_SIZE, body_len));
    return b->len;
}

static void put_varint(struct trace_chunk_builder *b, uint64_t v)
{
    if (b->cap - b->len < 10) {
        b->overflow = 1;
        return;
    }
    uint8_t *p = b->buf + b->len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    b->len = (size_t)(p - b->buf);
}

/* A record's body length is not known until its end, so the header reserves a fixed
 * 1 or 2 + 3 bytes: the type as a varint (one byte below 128, two below 16384) and a 3-byte
 * padded varint length (bodies < 2 MiB, or the record is refused). Padded varints are valid
 * LEB128. */
#define RECORD_LEN_BYTES 3
#define RECORD_MAX_BODY ((1u << (7 * RECORD_LEN_BYTES)) - 1)
#define RECORD_MAX_TYPE ((1u << 14) - 1)

/* The type's bytes at the start of a record the builder began. */
static size_t record_type_bytes(const uint8_t *record)
{
    return record[0] & 0x80 ? 2 : 1;
}

struct trace_record_mark trace_record_begin(struct trace_chunk_builder *b, unsigned type)
{
    struct trace_record_mark m = { b->len, b->prev_ts };
    size_t type_bytes = type < 128 ? 1 : 2;
    if (b->overflow || type > RECORD_MAX_TYPE ||
        b->cap - b->len < type_bytes + RECORD_LEN_BYTES) {
        b->overflow = 1;
        return m;
    }
    if (type_bytes == 1) {
        b->buf[b->len] = (uint8_t)type;
    } else {
        b->buf[b->len] = (uint8_t)(type | 0x80);
        b->buf[b->len + 1] = (uint8_t)(type >> 7);
    }
    b->len += type_bytes + RECORD_LEN_BYTES;
    return m;
}

int trace_record_end(struct trace_chunk_builder *b, struct trace_record_mark m)
{
    size_t header = b->overflow ? 0 : record_type_bytes(b->buf + m.start) + RECORD_LEN_BYTES;
    size_t body = b->len - m.start - header;
    if (b->overflow || body > RECORD_MAX_BODY) {
        b->len = m.start;
        b->prev_ts = m.prev_ts;
        b->overflow = 0;
        return -ENOSPC;
    }
    uint8_t *p = b->buf + m.start + header - RECORD_LEN_BYTES;
    p[0] = (uint8_t)(body | 0x80);
    p[1] = (uint8_t)((body >> 7) | 0x80);
    p[2] = (uint8_t)(body >> 14);
    b->records++;
    return 0;
}

void trace_put_u(struct trace_chunk_builder *b, uint64_t v) { put_varint(b, v); }

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

void trace_put_i(struct trace_chunk_builder *b, int64_t v) { put_varint(b, zigzag(v)); }

void trace_put_ts(struct trace_chunk_builder *b, uint64_t ts)
{
    put_varint(b, zigzag((int64_t)(ts - b->prev_ts)));
    b->prev_ts = ts;
}

void trace_put_s(struct trace_chunk_builder *b, const void *bytes, size_t len)
{
    put_varint(b, len);
    if (b->overflow || b->cap - b->len < len) {
        b->overflow = 1;
        return;
    }
    if (len)
        memcpy(b->buf + b->len, bytes, len);
    b->len += len;
}

void trace_put_f(struct trace_chunk_builder *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_varint(b, bits);
}

/* ---- decoding ---------------------------------------------------------------------- */

static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return -EBADMSG;
        uint8_t byte = *p++;
        v |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -EBADMSG;
}

uint64_t trace_get_u(struct trace_fields *f)
{
    uint64_t v = 0;
    if (f->p >= f->end)
        return 0;
    if (get_varint(&f->p, f->end, &v) < 0) {
        f->bad = 1;
        f->p = f->end;
        return 0;
    }
    return v;
}

int64_t trace_get_i(struct trace_fields *f) { return unzigzag(trace_get_u(f)); }

uint64_t trace_get_ts(struct trace_fields *f)
{
    if (f->p >= f->end)
        return 0;
    *f->prev_ts += (uint64_t)unzigzag(trace_get_u(f));
    return *f->prev_ts;
}

size_t trace_get_s(struct trace_fields *f, const uint8_t **bytes)
{
    uint64_t len = trace_get_u(f);
    if (len > (uint64_t)(f->end - f->p)) {
        f->bad = 1;
        f->p = f->end;
        *bytes = f->end;
        return 0;
    }
    *bytes = f->p;
    f->p += len;
    return (size_t)len;
}

double trace_get_f(struct trace_fields *f)
{
    uint64_t bits = trace_get_u(f);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

void trace_chunk_renumber(uint8_t *chunk)
{
    uint32_t body_len = get_le32(chunk + 4);
    put_le64(chunk + 24, __atomic_add_fetch(&chunk_seq_last, 1, __ATOMIC_RELAXED));
    put_le32(chunk + 8, chunk_crc(chunk, TRACE_CHUNK_HEADER_SIZE, body_len));
}

int trace_reader_open(struct trace_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a link is not ours */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        int error = errno;
        r->not_a_trace = error == ELOOP;
        snprintf(r->damage, sizeof r->damage, "cannot open: %s",
                 error == ELOOP ? "a symbolic link" : strerror(error));
        return -error;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int error = errno;
        snprintf(r->damage, sizeof r->damage, "cannot stat: %s", strerror(error));
        close(fd);
        return -error;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(r->damage, sizeof r->damage, "not a regular file");
        r->not_a_trace = 1;
        close(fd);
        return -EINVAL;
    }
    r->fd = fd;
    r->size = (size_t)st.st_size;
    if (r->size < TRACE_FILE_HEADER_SIZE) {
        snprintf(r->damage, sizeof r->damage, "file too short for a trace header (%zu bytes)", r->size);
        r->bytes_lost = r->size;
        return -EBADMSG;
    }
    r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        int error = errno;
        snprintf(r->damage, sizeof r->damage, "cannot map: %s", strerror(error));
        return -error;
    }
    r->data = r->map;
    if (memcmp(r->data, TRACE_FILE_MAGIC, 8) != 0) {
        snprintf(r->damage, sizeof r->damage, "not a Lantern raw trace (bad magic)");
        r->bytes_lost = r->size;
        return -EBADMSG;
    }
    uint32_t version = get_le32(r->data + 8);
    if (version < TRACE_FORMAT_VERSION_MIN || version > TRACE_FORMAT_VERSION) {
        snprintf(r->damage, sizeof r->damage, "unsupported trace format version %u", version);
        r->bytes_lost = r->size;
        return -EPROTO;
    }
    r->version = version;
    r->pos = TRACE_FILE_HEADER_SIZE;
    return 0;
}

void trace_reader_close(struct trace_reader *r)
{
    if (r->map)
        munmap(r->map, r->size);
    if (r->fd >= 0)
        close(r->fd);
    free(r->chunks);
    r->chunks = NULL;
    r->map = NULL;
    r->fd = -1;
}

/* A whole chunk of the file, as the first scan found it. */
struct trace_chunk_ref {
    size_t offset;
    uint64_t seq;   /* version 5: the header's; older files: the chunk's index */
    uint64_t index; /* its place in the file, 0.. */
};

/* Whether the chunk at `start` is whole and valid: NULL and its body length, or what is
 * wrong with it. */
static const char *chunk_check(const uint8_t *data, size_t size, size_t start, uint32_t version,
                               uint32_t *body_len)
{
    size_t header_size = chunk_header_size(version), left = size - start;
    if (left < header_size)
        return "truncated chunk header";
    const uint8_t *h = data + start;
    if (get_le32(h) != TRACE_CHUNK_MAGIC)
        return "bad chunk magic";
    *body_len = get_le32(h + 4);
    if (*body_len > TRACE_CHUNK_MAX_BODY)
        return "chunk length out of range";
    if (*body_len > left - header_size)
        return "truncated chunk (the writer was stopped mid-write, or its disk was full)";
    uint32_t crc = version == 1 ? trace_crc32c(0, h + header_size, *body_len)
                                : chunk_crc(h, header_size, *body_len);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* fuzzing: reach the decoders past the CRC */
    if (crc != get_le32(h + 8))
        return "checksum mismatch (corrupt chunk)";
#else
    (void)crc;
#endif
    return NULL;
}

static int reader_fail(struct trace_reader *r, size_t chunk_start, const char *why)
{
    snprintf(r->damage, sizeof r->damage, "chunk %llu at offset %zu: %s",
             (unsigned long long)r->chunk_index, chunk_start, why);
    r->bytes_lost = r->size - chunk_start;
    return -EBADMSG;
}

static int by_seq_then_offset(const void *pa, const void *pb)
{
    const struct trace_chunk_ref *a = pa, *b = pb;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* The first read: the whole chunks up to the first damage, in seq order, each seq once (the
 * first copy in the file); counts the duplicates and the chunks that lie before a chunk
 * numbered lower. */
static int reader_scan(struct trace_reader *r)
{
    size_t cap = 0, header_size = chunk_header_size(r->version);
    r->scanned = 1;
    for (size_t pos = r->pos; pos < r->size; r->chunk_index++) {
        uint32_t body_len;
        const char *why = chunk_check(r->data, r->size, pos, r->version, &body_len);
        if (why) {
            reader_fail(r, pos, why);
            break;
        }
        if (r->nchunks == cap) {
            cap = cap ? cap * 2 : 64;
            struct trace_chunk_ref *chunks = realloc(r->chunks, cap * sizeof *chunks);
            if (!chunks) {
                snprintf(r->damage, sizeof r->damage, "out of memory listing the chunks");
                r->bytes_lost = r->size;
                r->nchunks = 0;
                return -ENOMEM;
            }
            r->chunks = chunks;
        }
        uint64_t seq = r->version >= 5 ? get_le64(r->data + pos + 24) : r->chunk_index;
        r->chunks[r->nchunks++] = (struct trace_chunk_ref){pos, seq, r->chunk_index};
        pos += header_size + body_len;
    }
    if (r->nchunks) /* chunks is NULL without any: qsort(NULL) is undefined */
        qsort(r->chunks, r->nchunks, sizeof *r->chunks, by_seq_then_offset);
    size_t kept = 0;
    uint64_t latest_index = 0;
    for (size_t i = 0; i < r->nchunks; i++) {
        if (kept && r->chunks[kept - 1].seq == r->chunks[i].seq) {
            r->duplicate_chunks++;
            continue;
        }
        if (kept && r->chunks[i].index < latest_index)
            r->misordered_chunks++;
        if (r->chunks[i].index > latest_index)
            latest_index = r->chunks[i].index;
        r->chunks[kept++] = r->chunks[i];
    }
    r->nchunks = kept;
    return 0;
}

static void reader_load_chunk(struct trace_reader *r, const struct trace_chunk_ref *c)
{
    size_t header_size = chunk_header_size(r->version);
    const uint8_t *h = r->data + c->offset;
    uint32_t body_len = get_le32(h + 4);
    r->rec = h + header_size;
    r->rec_end = r->rec + body_len;
    r->prev_ts = get_le64(h + 16);
    r->pos = c->offset + header_size + body_len;
    r->chunk_index = c->index;
}

int trace_reader_next(struct trace_reader *r, unsigned *type, struct trace_fields *fields)
{
    int rc;
    if (!r->scanned && (rc = reader_scan(r)) < 0)
        return rc;
    while (!r->rec || r->rec >= r->rec_end) {
        r->rec = NULL;
        if (r->next_chunk == r->nchunks)
            return r->damage[0] ? -EBADMSG : 0;
        reader_load_chunk(r, &r->chunks[r->next_chunk++]);
    }
    uint64_t t, len;
    const uint8_t *p = r->rec;
    if (get_varint(&p, r->rec_end, &t) < 0 || get_varint(&p, r->rec_end, &len) < 0 ||
        len > (uint64_t)(r->rec_end - p)) {
        snprintf(r->damage, sizeof r->damage, "chunk %llu: malformed record at offset %zu",
                 (unsigned long long)r->chunk_index, (size_t)(r->rec - r->data));
        r->bytes_lost = r->size - (size_t)(r->rec - r->data);
        r->rec = r->rec_end = NULL;
        r->next_chunk = r->nchunks;
        return -EBADMSG;
    }
    *type = (unsigned)t;
    fields->p = p;
    fields->end = p + len;
    fields->prev_ts = &r->prev_ts;
    fields->bad = 0;
    fields->decoded = NULL;
    r->rec = p + len;
    return 1;
}

int trace_file_last_chunk(int fd, uint64_t *whole_bytes, uint64_t *next_seq)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    size_t size = (size_t)st.st_size;
    if (!S_ISREG(st.st_mode) || size < TRACE_FILE_HEADER_SIZE)
        return -EPROTO;
    uint8_t *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED)
        return -errno;
    int rc = 0;
    if (memcmp(data, TRACE_FILE_MAGIC, 8) != 0 || get_le32(data + 8) != TRACE_FORMAT_VERSION) {
        rc = -EPROTO;
        goto out;
    }
    size_t pos = TRACE_FILE_HEADER_SIZE;
    uint64_t highest = 0;
    uint32_t body_len;
    while (pos < size && !chunk_check(data, size, pos, TRACE_FORMAT_VERSION, &body_len)) {
        uint64_t seq = get_le64(data + pos + 24);
        if (seq > highest)
            highest = seq;
        pos += TRACE_CHUNK_HEADER_SIZE + body_len;
    }
    *whole_bytes = pos;
    *next_seq = highest + 1;
out:
    munmap(data, size);
    return rc;
}
