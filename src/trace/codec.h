/* Encoding and decoding of the raw trace format (src/trace/format.h; each record's fields in
 * records.def, encoded by records.h on top of this): varints, records,
 * chunks with CRC32C, and a reader that walks a file chunk by chunk and stops, with a
 * reason, at the first damage. Used by the agent's writer thread, the launcher and the
 * importer. Nothing here allocates on the encode path. */
#ifndef LANTERN_TRACE_CODEC_H
#define LANTERN_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* ---- encoding ---------------------------------------------------------------------- */

/* A chunk under construction in caller-owned memory. Records are appended to the body;
 * trace_chunk_finish() fills the 32-byte header in front of it.
 *
 * Chunk sequence numbers (the header's seq, format.h): a reader imports each seq of a file
 * once, in increasing order, and counts a repeated seq as a duplicated chunk (skipped) and a
 * seq below an earlier chunk's as a chunk out of order. trace_chunk_finish numbers a chunk
 * from one counter per process (1, 2, ...: a fork child goes on from its parent's count),
 * which suits a file written by one process: its numbers increase in the order the chunks
 * are finished. A process that APPENDS to another process's file (recovering a dead
 * process's unwritten events) continues that file's numbers instead:
 *   1. trace_file_last_chunk(fd, &whole, &next_seq): where the last whole chunk ends and the
 *      number after the highest seq of the file's whole chunks;
 *   2. ftruncate(fd, whole) (drop a partial chunk the dead writer left, or the reader stops
 *      there), then for each chunk: trace_chunk_begin, the records, b.seq = next_seq++,
 *      trace_chunk_finish, write at the end of the file.
 * Only a file of this format version (TRACE_FORMAT_VERSION) can be appended to. */
struct trace_chunk_builder {
    uint8_t *buf;        /* TRACE_CHUNK_HEADER_SIZE bytes of header, then the body */
    size_t cap;          /* bytes available at buf */
    size_t len;          /* bytes used, header included */
    uint32_t records;
    uint64_t base_ts;
    uint64_t prev_ts;
    uint64_t seq;        /* 0 (trace_chunk_begin sets it): the process's next number; an
                            appender sets its own before trace_chunk_finish */
    int overflow;        /* set when an append did not fit; the record was not added */
};

void trace_chunk_begin(struct trace_chunk_builder *b, uint8_t *buf, size_t cap, uint64_t base_ts);
/* Writes the header, numbering the chunk (b->seq, else the process's next number); returns
 * the total chunk size in bytes (header + body). */
size_t trace_chunk_finish(struct trace_chunk_builder *b);

/* Scans the whole, valid (length and CRC) chunks of an open raw file of this format version
 * from its start, with pread (the file offset is not moved). Sets *whole_bytes to the offset
 * where the last whole chunk ends (the header's 16 bytes when there is none; a partial or
 * corrupt chunk and anything after it lie beyond) and *next_seq to one more than the highest
 * seq among the whole chunks (1 when there is none). Returns 0, -EPROTO for a file that is not
 * a raw trace of version TRACE_FORMAT_VERSION (so cannot be appended to), or -errno. */
int trace_file_last_chunk(int fd, uint64_t *whole_bytes, uint64_t *next_seq);
static inline int trace_chunk_empty(const struct trace_chunk_builder *b) { return b->records == 0; }
/* A whole chunk of this version that another process made, taken into this process's own
 * file (the launcher relays its metric samplers' chunks): numbered as this process's next
 * chunk, its CRC made anew. */
void trace_chunk_renumber(uint8_t *chunk);

/* A record is built field by field between record_begin and record_end. If the record does
 * not fit, record_end rolls the chunk back to where the record began and returns -ENOSPC. */
struct trace_record_mark { size_t start; uint64_t prev_ts; };
struct trace_record_mark trace_record_begin(struct trace_chunk_builder *b, unsigned type);
void trace_put_u(struct trace_chunk_builder *b, uint64_t v);
void trace_put_i(struct trace_chunk_builder *b, int64_t v);
void trace_put_ts(struct trace_chunk_builder *b, uint64_t ts);
void trace_put_s(struct trace_chunk_builder *b, const void *bytes, size_t len);
void trace_put_f(struct trace_chunk_builder *b, double v);
int trace_record_end(struct trace_chunk_builder *b, struct trace_record_mark m);

/* The 16-byte file header. */
void trace_file_header(uint8_t out[16]);

uint32_t trace_crc32c(uint32_t crc, const void *data, size_t len);

/* ---- decoding ---------------------------------------------------------------------- */

/* A cursor over one record's body. Reading past the end yields 0 (absent trailing fields). */
struct trace_fields {
    const uint8_t *p, *end;
    uint64_t *prev_ts;   /* the chunk's running timestamp */
    int bad;             /* set on a malformed varint or string */
    /* set: no bytes but the record already decoded (a thread event: events.h), which
     * trace_get_<name> of decoded_type copies */
    const void *decoded;
    unsigned decoded_type;
};

uint64_t trace_get_u(struct trace_fields *f);
int64_t trace_get_i(struct trace_fields *f);
uint64_t trace_get_ts(struct trace_fields *f);
/* Points *bytes into the record (not NUL-terminated); returns the length. */
size_t trace_get_s(struct trace_fields *f, const uint8_t **bytes);
double trace_get_f(struct trace_fields *f);

/* A reader over a whole file held in memory (mapped read-only). Its first
 * trace_reader_next scans the file's chunk headers up to the first damage, then returns the
 * chunks' records in seq order (version 5; older files: in file order), each seq once. */
struct trace_reader {
    const uint8_t *data;
    size_t size;
    size_t pos;               /* offset after the current chunk */
    int fd;
    void *map;
    uint32_t version;         /* the file's format version (what its chunk CRC covers) */
    /* the current chunk */
    const uint8_t *rec, *rec_end;
    uint64_t prev_ts;
    uint64_t chunk_index;
    /* the whole chunks, in the order they are read (the first scan) */
    struct trace_chunk_ref *chunks;
    size_t nchunks, next_chunk;
    int scanned;
    uint64_t duplicate_chunks;  /* chunks skipped: their seq came earlier in the file */
    uint64_t misordered_chunks; /* chunks whose seq is below an earlier chunk's */
    /* when the reader stopped early: what went wrong and how many bytes were not read */
    char damage[200];
    size_t bytes_lost;
    int not_a_trace;          /* open refused: not a regular file (a link, FIFO, device) */
};

/* Opens and validates the file header. Returns 0, or a negative errno with damage[] saying why
 * (-EBADMSG: not a raw trace; -EPROTO: a format version this build does not read; -EINVAL:
 * not a regular file). Only a regular file is read: a symbolic link, FIFO or device is refused
 * without blocking. */
int trace_reader_open(struct trace_reader *r, const char *path);
void trace_reader_close(struct trace_reader *r);

/* Next record of the file: returns 1 and fills *type and *fields, 0 at a clean end of file,
 * -EBADMSG at damage (truncated or corrupt chunk, malformed record): damage[] and bytes_lost
 * describe it, and every chunk before the damaged one has been returned (-ENOMEM: the chunk
 * list could not be allocated, said in damage[]). */
int trace_reader_next(struct trace_reader *r, unsigned *type, struct trace_fields *fields);

#endif
