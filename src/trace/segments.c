/* The flight recorder's raw files (segments.h): naming, the table of definition records, the
 * split of a chunk into definitions and events (each record re-encoded from its records.def
 * layout, so that its timestamps stay a chain in its new chunk), and the join of a dump. */
#include "trace/segments.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t trace_segment_ns(uint64_t ring_ns)
{
    uint64_t ns = ring_ns / 4;
    if (ns < TRACE_SEGMENT_MIN_NS)
        ns = TRACE_SEGMENT_MIN_NS;
    if (ns > TRACE_SEGMENT_MAX_NS)
        ns = TRACE_SEGMENT_MAX_NS;
    return ns;
}

uint64_t trace_segments_kept(uint64_t ring_ns)
{
    uint64_t seg = trace_segment_ns(ring_ns);
    return (ring_ns + seg - 1) / seg + 1;
}

int trace_segment_path(char *out, size_t cap, const char *lrt_path, uint64_t number)
{
    size_t len = strlen(lrt_path);
    if (len < 4 || strcmp(lrt_path + len - 4, ".lrt") != 0)
        return -EINVAL;
    int n = snprintf(out, cap, "%.*s.%06" PRIu64 TRACE_SEGMENT_SUFFIX, (int)(len - 4), lrt_path,
                     number);
    return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int trace_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int trace_segment_create(int dir_fd, const char *path)
{
    int fd =
        openat(dir_fd, path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    int rc = trace_write_all(fd, header, sizeof header);
    if (rc < 0) {
        int err = errno;
        close(fd);
        unlinkat(dir_fd, path, 0);
        errno = err;
        return rc;
    }
    return fd;
}

uint64_t trace_segment_number(const char *name, const char *lrt_name)
{
    size_t stem = strlen(lrt_name);
    if (stem < 4 || strcmp(lrt_name + stem - 4, ".lrt") != 0)
        return 0;
    stem -= 4;
    if (strncmp(name, lrt_name, stem) != 0 || name[stem] != '.')
        return 0;
    char *end;
    unsigned long long n = strtoull(name + stem + 1, &end, 10);
    return end != name + stem + 1 && !strcmp(end, TRACE_SEGMENT_SUFFIX) ? n : 0;
}

/* Records that later records refer to, or that describe the whole process: kept in the .lrt.
 * Every other record is an event of its segment's time. A new source lists its definitions
 * here (docs/trace-format.md, "Segments (--ring)"). */
static const unsigned trace_definitions[] = {
    TRACE_PROCESS,
    TRACE_PROCESS_END,
    TRACE_THREAD,
    TRACE_THREAD_NAME,
    TRACE_STRING,
    TRACE_WRITE_ERROR,
    TRACE_THREAD_OS_NAME,
    TRACE_THREAD_PYTHON_NAME,
    TRACE_PROCESS_INFO,
    TRACE_CHILD_EXIT,
    TRACE_PROCESS_PYTHON_NAME,
    TRACE_TABLE_CUT,
    TRACE_DOMAIN,
    TRACE_CATEGORY,
    TRACE_NAME_RESOURCE,
    TRACE_PAYLOAD_SCHEMA,
    TRACE_PAYLOAD_ENTRY,
    TRACE_PAYLOAD_ENUM,
    TRACE_PAYLOAD_ENUM_VALUE,
    TRACE_CUDA_DEVICE,
    TRACE_CUDA_CONTEXT,
    TRACE_CUDA_STREAM,
    TRACE_CUDA_STREAM_HANDLE,
    TRACE_CUDA_CAPTURE,
    TRACE_CUDA_CONTEXT_HANDLE,
    TRACE_NVML_GPU,
    TRACE_NVML_DISABLED,
    TRACE_NVML_SAMPLER,
    TRACE_GPU_METRIC_SET,
    TRACE_GPU_METRIC_STATUS,
    TRACE_GPU_METRIC_SAMPLER,
    TRACE_GPU_METRIC_RELAY,
    TRACE_CPU_SAMPLING, /* CPU samples: the status, and the mappings and stacks they refer to */
    TRACE_CPU_MAPPING,
    TRACE_CPU_STACK,
    TRACE_CPU_SAMPLER,
    TRACE_PY_FRAME, /* Python stacks: the functions and stacks the looks refer to */
    TRACE_PY_STACK,
    TRACE_OSRT_SETTINGS,
    TRACE_OSRT_TOTALS,
};

int trace_record_is_definition(unsigned type)
{
    for (size_t i = 0; i < sizeof trace_definitions / sizeof trace_definitions[0]; i++)
        if (trace_definitions[i] == type)
            return 1;
    return 0;
}

/* A record header of the chunk being built: the codec writes a varint type (two bytes from
 * 128) and a varint length (docs/trace-format.md); *type, *body, *body_len; 0 at the end or
 * on damage. */
static int chunk_next_record(const uint8_t **p, const uint8_t *end, unsigned *type,
                             const uint8_t **body, uint64_t *body_len)
{
    if (*p >= end)
        return 0;
    uint64_t prev = 0;
    struct trace_fields f = {.p = *p, .end = end, .prev_ts = &prev};
    *type = (unsigned)trace_get_u(&f);
    *body_len = trace_get_u(&f);
    if (f.bad || *body_len > (uint64_t)(end - f.p))
        return 0;
    *body = f.p;
    *p = f.p + *body_len;
    return 1;
}

int trace_chunk_has_definition(const struct trace_chunk_builder *b)
{
    const uint8_t *p = b->buf + TRACE_CHUNK_HEADER_SIZE, *end = b->buf + b->len, *body;
    unsigned type;
    uint64_t len;
    while (chunk_next_record(&p, end, &type, &body, &len))
        if (trace_record_is_definition(type))
            return 1;
    return 0;
}

static const struct trace_record_spec *spec_of(unsigned type)
{
    for (size_t i = 0; i < trace_record_spec_count; i++)
        if (trace_record_specs[i].type == type)
            return &trace_record_specs[i];
    return NULL;
}

/* One record, field by field from its layout: a ts becomes absolute through the source
 * chunk's chain (*prev) and is written into the destination's. A type without a layout is
 * copied as it is (it has no ts: an importer could not read it otherwise). */
static int transfer_record(struct trace_chunk_builder *to, unsigned type, const uint8_t *body,
                           uint64_t len, uint64_t *prev)
{
    struct trace_fields f = {.p = body, .end = body + len, .prev_ts = prev};
    struct trace_record_mark m = trace_record_begin(to, type);
    const struct trace_record_spec *spec = spec_of(type);
    for (size_t i = 0; spec && i < spec->field_count && f.p < f.end; i++) {
        const char *kind = spec->fields[i].kind;
        const uint8_t *bytes;
        if (!strcmp(kind, "ts")) {
            trace_put_ts(to, trace_get_ts(&f));
        } else if (!strcmp(kind, "i")) {
            trace_put_i(to, trace_get_i(&f));
        } else if (kind[0] == 's' || !strcmp(kind, "os")) {
            size_t n = trace_get_s(&f, &bytes);
            trace_put_s(to, bytes, n);
        } else if (!strcmp(kind, "ul")) {
            uint64_t count = trace_get_u(&f);
            trace_put_u(to, count);
            for (uint64_t k = 0; k < count && f.p < f.end; k++)
                trace_put_u(to, trace_get_u(&f));
        } else { /* u, ou, f (a double's bits) */
            trace_put_u(to, trace_get_u(&f));
        }
    }
    size_t rest = (size_t)(f.end - f.p); /* fields past the layout (or no layout): as they are */
    if (rest && !to->overflow && to->cap - to->len >= rest) {
        memcpy(to->buf + to->len, f.p, rest);
        to->len += rest;
    } else if (rest) {
        to->overflow = 1;
    }
    return f.bad ? -EBADMSG : trace_record_end(to, m);
}

int trace_chunk_split(const struct trace_chunk_builder *in, struct trace_chunk_builder *defs,
                      struct trace_chunk_builder *events)
{
    const uint8_t *p = in->buf + TRACE_CHUNK_HEADER_SIZE, *end = in->buf + in->len, *body;
    uint64_t prev = in->base_ts, len;
    unsigned type;
    int rc = 0;
    while (rc == 0 && chunk_next_record(&p, end, &type, &body, &len))
        rc = transfer_record(trace_record_is_definition(type) ? defs : events, type, body, len,
                             &prev);
    return rc;
}

/* A whole chunk of one of the joined files. */
struct join_chunk {
    size_t file;
    uint64_t offset, len, seq;
};

static int join_compare(const void *a, const void *b)
{
    const struct join_chunk *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static uint64_t join_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A failed call's -errno, errno kept (a short read sets none: -EIO). */
static int join_error(void)
{
    if (!errno)
        errno = EIO;
    return -errno;
}

/* Lists the whole chunks of fd (its header checked by trace_file_last_chunk) into *chunks. A
 * file shorter than its header is a segment the writer had just created when its process
 * died (writer_ring_open): it holds nothing. */
static int join_list(int fd, size_t file, struct join_chunk **chunks, size_t *count, size_t *cap)
{
    uint64_t whole, next_seq;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < TRACE_FILE_HEADER_SIZE)
        return 0;
    if (trace_file_last_chunk(fd, &whole, &next_seq) < 0) {
        errno = EPROTO;
        return -EPROTO;
    }
    uint8_t h[TRACE_CHUNK_HEADER_SIZE];
    for (uint64_t at = TRACE_FILE_HEADER_SIZE; at < whole;) {
        if (pread(fd, h, sizeof h, (off_t)at) != (ssize_t)sizeof h)
            return join_error();
        uint64_t len = TRACE_CHUNK_HEADER_SIZE + join_le(h + 4, 4);
        if (*count == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            struct join_chunk *grown = realloc(*chunks, *cap * sizeof *grown);
            if (!grown)
                return join_error();
            *chunks = grown;
        }
        (*chunks)[(*count)++] = (struct join_chunk){file, at, len, join_le(h + 24, 8)};
        at += len;
    }
    return 0;
}

int trace_files_join(int out_fd, const char *const *paths, size_t count)
{
    int *fds = calloc(count ? count : 1, sizeof *fds);
    struct join_chunk *chunks = NULL;
    size_t n = 0, cap = 0, buf_cap = 0;
    uint8_t *buf = NULL;
    int rc = fds ? 0 : join_error();
    for (size_t i = 0; rc == 0 && i < count; i++) {
        fds[i] = open(paths[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fds[i] < 0 && errno != ENOENT)
            rc = join_error();
        else if (fds[i] >= 0)
            rc = join_list(fds[i], i, &chunks, &n, &cap);
    }
    if (rc == 0)
        qsort(chunks, n, sizeof *chunks, join_compare);
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    if (rc == 0 && write(out_fd, header, sizeof header) != (ssize_t)sizeof header)
        rc = join_error();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (chunks[i].len > buf_cap) {
            uint8_t *grown = realloc(buf, (size_t)chunks[i].len);
            if (!grown) {
                rc = join_error();
                break;
            }
            buf = grown;
            buf_cap = (size_t)chunks[i].len;
        }
        if (pread(fds[chunks[i].file], buf, (size_t)chunks[i].len, (off_t)chunks[i].offset) !=
                (ssize_t)chunks[i].len ||
            write(out_fd, buf, (size_t)chunks[i].len) != (ssize_t)chunks[i].len)
            rc = join_error();
    }
    for (size_t i = 0; fds && i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    free(chunks);
    free(buf);
    return rc;
}
