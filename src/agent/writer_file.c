/* The trace file the writer writes (writer_file.h): its descriptor, kept high and checked
 * before each use (a program that closes every descriptor and opens its own files never gets
 * trace chunks); whole chunks written with the buffer file told how far the file holds each
 * thread's stream (trace/pool_file.h); a failed write (a full disk) cut back to the last whole
 * chunk and counted; --ring's segment files; and the records that name no string: the
 * threads' events byte for byte, calibration points, drops, threads, the end. */
#include "agent/writer_file.h"

#include "agent/clock.h"
#include "agent/ring.h"
#include "trace/environment.h"
#include "trace/events.h"
#include "trace/records.h"
#include "trace/segments.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Disk space kept allocated past the end of the file (fallocate, KEEP_SIZE) so that when the
 * disk fills up, the record saying so and the end record still fit. */
#define WRITER_END_RESERVE 4096u

struct writer_state writer = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};
struct writer_ring_state writer_ring = {.fd = -1};

/* ---- the file ---- */

/* The lowest number the file's descriptor is moved to: far above the few a program that
 * closed everything opens next, and below every usual RLIMIT_NOFILE. */
#define WRITER_FD_FLOOR 800

/* Moves fd to a high number (closing fd); returns the new one, or fd where none is free. */
int writer_fd_high(int fd)
{
    struct rlimit limit;
    long floor = WRITER_FD_FLOOR;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        (long)limit.rlim_cur / 2 < floor)
        floor = (long)limit.rlim_cur / 2;
    if (fd >= floor)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

/* The file's descriptor, checked: when the program closed it (close_range, a loop of
 * close) or its number now names another file, the file is opened again by its path (never
 * closing the program's descriptor) and must be the same file. -errno (errno set too) when
 * that fails (then writing stops, as after a failed write). */
static int writer_checked(int *fdp, dev_t dev, ino_t ino, const char *path)
{
    struct stat st;
    if (*fdp >= 0 && fstat(*fdp, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        return *fdp;
    *fdp = -1; /* not ours any more: never closed here */
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
        close(fd);
        errno = ESTALE;
        return -ESTALE;
    }
    *fdp = writer_fd_high(fd);
    return *fdp;
}

static int writer_checked_fd(void)
{
    return writer_checked(&writer.fd, writer.fd_dev, writer.fd_ino, writer.path);
}

/* Writes len bytes to fd (a descriptor, or writer_checked's -errno, returned as is). 0, or a
 * negative errno with errno set (-EIO for a write that wrote nothing, errno left as it was). */
static int writer_write_fd(int fd, const uint8_t *p, size_t len)
{
    return fd < 0 ? fd : trace_write_all(fd, p, len);
}

int writer_write_all(const uint8_t *p, size_t len)
{
    return writer_write_fd(writer_checked_fd(), p, len);
}

/* The events of the chunk being built (every record but strings, thread descriptions and
 * names, drop counts, calibration and the process records; a TRACE_THREAD_EVENTS record counts
 * its events): what is lost when it cannot be written. */
static uint64_t writer_stream_events(const uint8_t *body, const uint8_t *end)
{
    struct trace_thread_events r;
    uint64_t prev_ts = 0, ticks = 0, events = 0;
    struct trace_fields f = {.p = body, .end = end, .prev_ts = &prev_ts};
    if (trace_get_thread_events(&f, &r) < 0)
        return 0;
    static struct trace_events_reader reader; /* 8 KiB: not on the stack (lock held) */
    trace_events_begin(&reader, r.events.bytes, r.events.len, r.thread_idx, &ticks, NULL);
    unsigned type;
    struct trace_fields ev;
    while (trace_events_next(&reader, &type, &ev) == 1)
        events += type != TRACE_STRING;
    return events;
}

static uint64_t writer_chunk_events(void)
{
    uint64_t prev_ts = 0, events = 0;
    struct trace_fields f = {.p = writer.chunk.buf + TRACE_CHUNK_HEADER_SIZE,
                             .end = writer.chunk.buf + writer.chunk.len,
                             .prev_ts = &prev_ts};
    while (f.p < f.end && !f.bad) {
        uint64_t type = trace_get_u(&f), len = trace_get_u(&f);
        if (len > (uint64_t)(f.end - f.p))
            break;
        if (type == TRACE_THREAD_EVENTS)
            events += writer_stream_events(f.p, f.p + len);
        f.p += len;
        events += type != TRACE_STRING && type != TRACE_THREAD && type != TRACE_DROPPED &&
                  type != TRACE_PROCESS && type != TRACE_PROCESS_END &&
                  type != TRACE_THREAD_OS_NAME && type != TRACE_THREAD_PYTHON_NAME &&
                  type != TRACE_PROCESS_INFO && type != TRACE_CLOCK &&
                  type != TRACE_THREAD_EVENTS;
    }
    return events;
}

/* Keeps WRITER_END_RESERVE bytes allocated past the end of the file (where supported). */
void writer_keep_reserve(void)
{
    int fd = writer_checked_fd();
    if (fd >= 0)
        fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)writer.file_bytes, WRITER_END_RESERVE);
}

/* Cuts the file back to its whole chunks (after a failed write). */
void writer_truncate(void)
{
    int fd = writer_checked_fd();
    if (fd >= 0 && ftruncate(fd, (off_t)writer.file_bytes) < 0) {
        /* the reader then stops at the partial chunk, as after a kill */
    }
}

/* A write failed (a full disk, a quota): the file is cut back to its last whole chunk, which
 * also frees the space the partial chunk took, the chunk's events are counted as dropped, and
 * writing stops; later events are counted, and writer_end() says why in the file. */
void writer_write_failed(int err)
{
    writer.write_failed = 1;
    writer.write_errno = err;
    writer_truncate();
    writer.dropped_total += writer_chunk_events();
    agent_warn("cannot write '%s': %s; tracing stops, later events are counted as dropped",
               writer.path, strerror(err));
}

/* Writes the finished chunk of len bytes: the buffer file says, while it is written, how
 * long the trace file is once it is whole, and the threads' durable cursors catch up after
 * (trace/pool_file.h). 0, or a negative errno with errno set. */
static int writer_write_chunk(size_t len)
{
    struct pool_header *h = ring_pool.header;
    if (h)
        __atomic_store_n(&h->commit_end, writer.file_bytes + len, __ATOMIC_RELEASE);
    int rc = writer_write_all(writer.chunk_buf, len);
    int err = errno;
    if (rc == 0) {
        writer.file_bytes += len;
        ring_durable();
    }
    if (h)
        __atomic_store_n(&h->commit_end, 0, __ATOMIC_RELEASE);
    errno = err;
    return rc;
}

/* ---- the flight recorder's segments (--ring, trace/segments.h) ---- */

/* A chunk of events into the current segment: as writer_write_chunk, the buffer file's
 * commit_end naming the segment's length (a salvage appends to the newest segment). */
static int writer_ring_write_events(const uint8_t *buf, size_t len)
{
    struct pool_header *h = ring_pool.header;
    if (h)
        __atomic_store_n(&h->commit_end, writer_ring.file_bytes + len, __ATOMIC_RELEASE);
    int fd = writer_checked(&writer_ring.fd, writer_ring.fd_dev, writer_ring.fd_ino,
                            writer_ring.path);
    int rc = writer_write_fd(fd, buf, len);
    int err = errno;
    if (rc == 0) {
        writer_ring.file_bytes += len;
        ring_durable();
    }
    if (h)
        __atomic_store_n(&h->commit_end, 0, __ATOMIC_RELEASE);
    errno = err;
    return rc;
}

/* The chunk built so far: its definitions into the .lrt (while it holds less than
 * TRACE_SEGMENT_DEFINITIONS_MAX), the rest into the segment. 0, or a negative errno with
 * errno set. */
static int writer_ring_write(void)
{
    struct trace_chunk_builder *events = &writer.chunk;
    if (writer_ring.definition_bytes < TRACE_SEGMENT_DEFINITIONS_MAX &&
        trace_chunk_has_definition(&writer.chunk)) {
        if (writer_ring.split_cap < writer.chunk_cap) {
            uint8_t *d = realloc(writer_ring.defs_buf, writer.chunk_cap + 4096);
            if (d)
                writer_ring.defs_buf = d;
            uint8_t *e = d ? realloc(writer_ring.events_buf, writer.chunk_cap + 4096) : NULL;
            if (e)
                writer_ring.events_buf = e;
            if (d && e)
                writer_ring.split_cap = writer.chunk_cap + 4096;
        }
        if (writer_ring.split_cap >= writer.chunk_cap) {
            trace_chunk_begin(&writer_ring.defs, writer_ring.defs_buf, writer_ring.split_cap,
                              writer.chunk.base_ts);
            trace_chunk_begin(&writer_ring.events, writer_ring.events_buf, writer_ring.split_cap,
                              writer.chunk.base_ts);
            if (trace_chunk_split(&writer.chunk, &writer_ring.defs, &writer_ring.events) == 0) {
                size_t len = trace_chunk_finish(&writer_ring.defs);
                int rc = writer_write_all(writer_ring.defs_buf, len);
                if (rc < 0)
                    return rc;
                writer.file_bytes += len;
                writer_ring.definition_bytes += len;
                events = &writer_ring.events;
            }
        }
    }
    if (trace_chunk_empty(events)) {
        ring_durable();
        return 0;
    }
    size_t len = trace_chunk_finish(events);
    return writer_ring_write_events(events->buf, len);
}

/* Opens segment number n (lock held): its header, then TRACE_SEGMENT first in the chunk. */
int writer_ring_open(uint64_t n)
{
    char path[sizeof writer_ring.path];
    int rc = trace_segment_path(path, sizeof path, writer.path, n);
    if (rc < 0)
        return rc;
    int fd = trace_segment_create(AT_FDCWD, path);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        unlink(path);
        errno = err;
        fd = -err;
    }
    if (fd < 0)
        return fd;
    writer_ring.fd = writer_fd_high(fd);
    writer_ring.fd_dev = st.st_dev;
    writer_ring.fd_ino = st.st_ino;
    memcpy(writer_ring.path, path, sizeof path);
    writer_ring.file_bytes = TRACE_FILE_HEADER_SIZE;
    writer_ring.number = n;
    writer_ring.started_ns = clock_mono_ns();
    struct trace_segment r = {.number = n, .start = writer_ring.started_ns};
    writer_reserve_locked(32);
    trace_put_segment(&writer.chunk, &r);
    return 0;
}

void writer_ring_close(void)
{
    struct stat st;
    if (writer_ring.fd >= 0 && fstat(writer_ring.fd, &st) == 0 &&
        st.st_dev == writer_ring.fd_dev && st.st_ino == writer_ring.fd_ino)
        close(writer_ring.fd);
    writer_ring.fd = -1;
}

/* At the file's start (lock held, TRACE_PROCESS written): segment 1, with LANTERN_RING_NS. */
int writer_ring_start(void)
{
    const char *env = getenv(trace_env_name(TRACE_ENV_RING_NS));
    uint64_t ring_ns = env ? strtoull(env, NULL, 10) : 0;
    writer_ring.number = 0;
    if (!ring_ns)
        return 0;
    writer_ring.ring_ns = ring_ns;
    writer_ring.segment_ns = trace_segment_ns(ring_ns);
    writer_ring.kept = trace_segments_kept(ring_ns);
    writer_ring.definition_bytes = writer.file_bytes;
    int rc = writer_ring_open(1);
    if (rc < 0) {
        agent_warn("cannot create the ring's segment files beside '%s': %s; tracing disabled",
                   writer.path, strerror(errno));
        return rc;
    }
    __atomic_add_fetch(&ring_segment, 1, __ATOMIC_RELEASE);
    return 0;
}

/* ---- the chunk ---- */

int writer_flush_locked(void)
{
    int rc = 0;
    if (!trace_chunk_empty(&writer.chunk) && writer.opened && writer.write_failed) {
        writer.dropped_total += writer_chunk_events(); /* nothing more is written */
        ring_durable();                                /* counted: not salvaged again */
    } else if (!trace_chunk_empty(&writer.chunk) && writer.opened) {
        rc = writer_ring.number ? writer_ring_write()
                                : writer_write_chunk(trace_chunk_finish(&writer.chunk));
        if (rc < 0) {
            writer_write_failed(errno);
            ring_durable();
        } else {
            writer_keep_reserve();
        }
    } else if (writer.opened) {
        ring_durable(); /* nothing consumed since the last chunk: releases exited threads */
    }
    writer.last_flush_ns = clock_mono_ns();
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, writer.last_flush_ns);
    return rc;
}

int writer_reserve_locked(size_t bytes)
{
    if (writer.chunk_cap - writer.chunk.len >= bytes)
        return 0;
    writer_flush_locked();
    size_t need = TRACE_CHUNK_HEADER_SIZE + bytes;
    if (writer.chunk_cap >= need)
        return 0;
    size_t cap = writer.chunk_cap;
    while (cap < need)
        cap *= 2;
    uint8_t *buf = realloc(writer.chunk_buf, cap);
    if (!buf)
        return -ENOMEM;
    writer.chunk_buf = buf;
    writer.chunk_cap = cap;
    trace_chunk_begin(&writer.chunk, buf, cap, writer.last_flush_ns);
    return 0;
}

struct trace_chunk_builder *writer_chunk_locked(void)
{
    return &writer.chunk;
}

/* ---- the records that name no string ---- */

/* One span of a thread's stream, as the thread encoded it. */
void writer_put_events(struct agent_thread *t, const uint8_t *bytes, size_t len, void *ctx)
{
    (void)ctx;
    writer_reserve_locked(len + 32);
    struct trace_thread_events r = {.thread_idx = t->thread_idx,
                                    .events = trace_bytes(bytes, len)};
    trace_put_thread_events(&writer.chunk, &r);
}

/* The calibration the events after it are converted with (the agent's own: clock.h). */
void writer_put_clock(void)
{
    struct trace_clock_line line = clock_line(&writer.calibration);
    if (!line.set)
        return; /* ticks are ns: no TRACE_CLOCK means that */
    uint64_t bits;
    memcpy(&bits, &line.ns_per_tick, sizeof bits);
    struct trace_clock r = {.tsc = line.tsc, .ts = line.ns, .ns_per_tick = bits};
    writer_reserve_locked(48);
    trace_put_clock(&writer.chunk, &r);
}

void writer_put_dropped(uint64_t thread_idx, uint64_t count)
{
    struct trace_dropped r = {.thread_idx = thread_idx, .count = count};
    writer_reserve_locked(32);
    trace_put_dropped(&writer.chunk, &r);
    writer.dropped_total += count;
}

void writer_put_thread(uint64_t thread_idx, uint32_t os_tid, uint64_t first_seen_ns)
{
    struct trace_thread r = {
        .thread_idx = thread_idx, .os_tid = os_tid, .first_seen = first_seen_ns};
    writer_reserve_locked(48);
    trace_put_thread(&writer.chunk, &r);
}

/* The last chunk, alone: TRACE_WRITE_ERROR if a write failed, then TRACE_PROCESS_END. */
void writer_put_end(int clean)
{
    uint64_t now = clock_mono_ns();
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, now);
    if (writer.write_failed) {
        struct trace_write_error error = {.error = (uint64_t)writer.write_errno,
                                          .file_bytes = writer.file_bytes,
                                          .reason = trace_cstr(strerror(writer.write_errno))};
        trace_put_write_error(&writer.chunk, &error);
    }
    struct trace_process_end end = {
        .end = now, .dropped_total = writer.dropped_total, .clean = (uint64_t)clean};
    trace_put_process_end(&writer.chunk, &end);
}

/* Writes the end chunk even after a failure (it fits in the space writer_write_failed freed
 * and the reserve kept); 0, or a negative errno with errno set and the file cut back to its
 * whole chunks. */
int writer_write_end_chunk(void)
{
    size_t len = trace_chunk_finish(&writer.chunk);
    int rc = writer_write_chunk(len);
    if (rc < 0) {
        int err = errno;
        writer_truncate();
        errno = err;
        return rc;
    }
    return 0;
}

/* Closes the file's descriptor if it is still ours. */
void writer_close(void)
{
    struct stat st;
    if (writer.fd >= 0 && fstat(writer.fd, &st) == 0 && st.st_dev == writer.fd_dev &&
        st.st_ino == writer.fd_ino)
        close(writer.fd);
    writer.fd = -1;
    writer.opened = 0;
}
