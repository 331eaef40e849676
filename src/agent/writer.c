/* The writer thread and the trace file: every 10 ms (sooner when a thread has filled
 * RING_WAKE_BLOCKS blocks) it writes a calibration point (TRACE_CLOCK) and copies each
 * thread's new events into TRACE_THREAD_EVENTS records byte for byte (the threads encoded
 * them: trace/events.h), and write()s whole chunks at least every 50 ms. The threads' buffers
 * are a shared mapping of the buffer file (trace/pool_file.h): around each chunk it writes, the
 * writer records there how far the file holds each thread's stream, so that whatever the
 * process did not write when it ended (_exit, exec, a signal, events after its exit hooks) is
 * appended after its death by the launcher. It interns the strings of the locked interface
 * (CUPTI's records). The file's descriptor is kept high and checked before each use: a
 * program that closes every descriptor and opens its own files never gets trace chunks. */
#include "agent/writer.h"
#include "agent/clock.h"
#include "agent/names.h"
#include "agent/ring.h"
#include "trace/environment.h"
#include "trace/events.h"
#include "trace/process.h"
#include "trace/rank.h"
#include "trace/records.h"
#include "trace/segments.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#define WRITER_DRAIN_PERIOD_NS 10000000u /* 10 ms */
#define WRITER_FLUSH_PERIOD_NS                                                                     \
    50000000u                         /* 50 ms: with the drain period, SIGKILL loses <= ~100 ms */
#define WRITER_CHUNK_BYTES (1u << 20) /* grows for a record larger than this */
#define WRITER_INTERN_MAX                                                                          \
    (1u << 20) /* distinct strings remembered per file; more are not deduplicated */
#define WRITER_INTERN_BYTES_MAX                                                                    \
    (64u << 20) /* ... and their bytes: the writer's memory stays bounded */
/* Disk space kept allocated past the end of the file (fallocate, KEEP_SIZE) so that when the
 * disk fills up, the record saying so and the end record still fit. */
#define WRITER_END_RESERVE 4096u

struct writer_string {
    uint64_t hash;
    uint64_t id;
    char *bytes;
    size_t len;
};

static struct {
    pthread_mutex_t lock;
    int open; /* a file is open and records are accepted; 0 once TRACE_PROCESS_END is out */
    int write_failed;
    int write_errno;     /* why the first failed write failed */
    uint64_t file_bytes; /* bytes of the file known whole: its header and whole chunks */
    char path[PATH_MAX + 64];
    int opened; /* the file was made: fd (checked before each use) writes to it */
    int fd;
    dev_t fd_dev; /* the file's identity: the descriptor is ours only while it names it */
    ino_t fd_ino;
    uint32_t agent_flags;
    char session_dir[PATH_MAX];
    struct trace_chunk_builder chunk;
    uint8_t *chunk_buf;
    size_t chunk_cap;
    uint64_t last_flush_ns;
    struct clock_calibration calibration;
    /* strings of the current file */
    struct writer_string *strings;
    size_t strings_cap, strings_used, strings_bytes;
    /* fork children's forgotten tables, kept (reachable, untouched) rather than freed */
    struct writer_string *strings_retired[8];
    size_t strings_retired_cap[8];
    char *cut; /* a string cut to TRACE_STRING_MAX (allocated on first need) */
    uint64_t dropped_total;
    pthread_t thread;
} writer = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* --ring SEC (LANTERN_RING_NS): the events go to segment files, the definitions to the .lrt
 * (trace/segments.h). number 0: not a ring. */
static struct {
    uint64_t ring_ns, segment_ns, kept;
    uint64_t number;     /* the segment being written (1..) */
    uint64_t started_ns; /* when it began */
    char path[PATH_MAX + 96];
    int fd;
    dev_t fd_dev;
    ino_t fd_ino;
    uint64_t file_bytes;       /* its header and whole chunks */
    uint64_t definition_bytes; /* what the .lrt holds */
    struct trace_chunk_builder defs, events;
    uint8_t *defs_buf, *events_buf;
    size_t split_cap;
} writer_ring = {.fd = -1};

static _Atomic int writer_stop;
static void (*writer_periodic)(void);
static void (*writer_drain_hook)(int final);
static _Atomic uint32_t writer_tid;
static void (*writer_poll)(void);
static uint64_t writer_periodic_ns;
static _Atomic int writer_thread_wanted; /* a fork child starts its thread on its next event */
/* 1 while a writer thread was created and has not yet reached writer_main (fork waits) */
static _Atomic int writer_thread_starting;
static _Atomic int writer_end_requested; /* by a signal handler: end the file now */
static _Atomic int writer_ended;         /* TRACE_PROCESS_END is written */

static void writer_end(int clean);
static void writer_strings_clear(void);
static size_t writer_read_file(const char *path, char *buf, size_t cap);

/* ---- the file ---- */

/* The lowest number the file's descriptor is moved to: far above the few a program that
 * closed everything opens next, and below every usual RLIMIT_NOFILE. */
#define WRITER_FD_FLOOR 800

/* Moves fd to a high number (closing fd); returns the new one, or fd where none is free. */
static int writer_fd_high(int fd)
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
 * closing the program's descriptor) and must be the same file. -1 when that fails (then
 * writing stops, as after a failed write). */
static int writer_checked(int *fdp, dev_t dev, ino_t ino, const char *path)
{
    struct stat st;
    if (*fdp >= 0 && fstat(*fdp, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        return *fdp;
    *fdp = -1; /* not ours any more: never closed here */
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    *fdp = writer_fd_high(fd);
    return *fdp;
}

static int writer_checked_fd(void)
{
    return writer_checked(&writer.fd, writer.fd_dev, writer.fd_ino, writer.path);
}

static int writer_write_fd(int fd, const uint8_t *p, size_t len)
{
    if (fd < 0)
        return -1;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int writer_write_all(const uint8_t *p, size_t len)
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
static void writer_keep_reserve(void)
{
    int fd = writer_checked_fd();
    if (fd >= 0)
        fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)writer.file_bytes, WRITER_END_RESERVE);
}

/* Cuts the file back to its whole chunks (after a failed write). */
static void writer_truncate(void)
{
    int fd = writer_checked_fd();
    if (fd >= 0 && ftruncate(fd, (off_t)writer.file_bytes) < 0) {
        /* the reader then stops at the partial chunk, as after a kill */
    }
}

/* A write failed (a full disk, a quota): the file is cut back to its last whole chunk, which
 * also frees the space the partial chunk took, the chunk's events are counted as dropped, and
 * writing stops; later events are counted, and writer_end() says why in the file. */
static void writer_write_failed(int err)
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
 * (trace/pool_file.h). 0, or -1 with errno set. */
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
 * TRACE_SEGMENT_DEFINITIONS_MAX), the rest into the segment. 0, or -1 with errno set. */
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
                if (writer_write_all(writer_ring.defs_buf, len) < 0)
                    return -1;
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
static int writer_ring_open(uint64_t n)
{
    char path[sizeof writer_ring.path];
    if (trace_segment_path(path, sizeof path, writer.path, n) < 0)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st;
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    if (fd < 0 || fstat(fd, &st) != 0 || writer_write_fd(fd, header, sizeof header) < 0) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        errno = err;
        return -1;
    }
    writer_ring.fd = writer_fd_high(fd);
    writer_ring.fd_dev = st.st_dev;
    writer_ring.fd_ino = st.st_ino;
    memcpy(writer_ring.path, path, sizeof path);
    writer_ring.file_bytes = sizeof header;
    writer_ring.number = n;
    writer_ring.started_ns = clock_mono_ns();
    struct trace_segment r = {.number = n, .start = writer_ring.started_ns};
    writer_reserve_locked(32);
    trace_put_segment(&writer.chunk, &r);
    return 0;
}

static void writer_ring_close(void)
{
    struct stat st;
    if (writer_ring.fd >= 0 && fstat(writer_ring.fd, &st) == 0 &&
        st.st_dev == writer_ring.fd_dev && st.st_ino == writer_ring.fd_ino)
        close(writer_ring.fd);
    writer_ring.fd = -1;
}

/* Begins the next segment once the current one is segment_ns old (lock held): the chunk so
 * far ends the current one, the threads' streams start over in the new one (ring_segment),
 * and the segment that fell out of the ring is deleted. */
static void writer_ring_rotate(uint64_t now_ns)
{
    if (!writer_ring.number || writer.write_failed ||
        now_ns - writer_ring.started_ns < writer_ring.segment_ns)
        return;
    writer_flush_locked();
    uint64_t n = writer_ring.number + 1;
    writer_ring_close();
    if (writer_ring_open(n) < 0) {
        writer_write_failed(errno);
        return;
    }
    __atomic_add_fetch(&ring_segment, 1, __ATOMIC_RELEASE);
    if (writer_ring.definition_bytes >= TRACE_SEGMENT_DEFINITIONS_MAX)
        writer_strings_clear(); /* its strings are defined again in the segments that use them */
    if (n > writer_ring.kept + 1) {
        char old[sizeof writer_ring.path];
        if (trace_segment_path(old, sizeof old, writer.path, n - writer_ring.kept - 1) == 0)
            unlink(old);
    }
}

/* At the file's start (lock held, TRACE_PROCESS written): segment 1, with LANTERN_RING_NS. */
static int writer_ring_start(void)
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
    if (writer_ring_open(1) < 0) {
        agent_warn("cannot create the ring's segment files beside '%s': %s; tracing disabled",
                   writer.path, strerror(errno));
        return -1;
    }
    __atomic_add_fetch(&ring_segment, 1, __ATOMIC_RELEASE);
    return 0;
}

int writer_flush_locked(void)
{
    int rc = 0;
    if (!trace_chunk_empty(&writer.chunk) && writer.opened && writer.write_failed) {
        writer.dropped_total += writer_chunk_events(); /* nothing more is written */
        ring_durable();                                /* counted: not salvaged again */
    } else if (!trace_chunk_empty(&writer.chunk) && writer.opened) {
        if ((writer_ring.number ? writer_ring_write()
                                : writer_write_chunk(trace_chunk_finish(&writer.chunk))) < 0) {
            writer_write_failed(errno);
            ring_durable();
            rc = -1;
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
        return -1;
    writer.chunk_buf = buf;
    writer.chunk_cap = cap;
    trace_chunk_begin(&writer.chunk, buf, cap, writer.last_flush_ns);
    return 0;
}

/* ---- strings ---- */

static uint64_t writer_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3u;
    return h | 1; /* 0 marks an empty slot */
}

static void writer_emit_string(uint64_t id, const char *s, size_t len, size_t original_len)
{
    struct trace_string r = {.id = id,
                             .bytes = trace_bytes(s, len),
                             .original_len = original_len != len ? original_len : 0};
    writer_reserve_locked(len + 32);
    trace_put_string(&writer.chunk, &r);
}

/* A string longer than TRACE_STRING_MAX, cut at a UTF-8 character boundary and marked;
 * *len becomes the cut length. NULL if out of memory. */
static const char *writer_cut_string(const char *s, size_t *len)
{
    static const char mark[] = TRACE_STRING_CUT_MARK;
    if (!writer.cut && !(writer.cut = malloc(TRACE_STRING_MAX)))
        return NULL;
    size_t keep = TRACE_STRING_MAX - (sizeof mark - 1);
    while (keep && ((unsigned char)s[keep] & 0xC0) == 0x80) /* s[keep] continues a character */
        keep--;
    memcpy(writer.cut, s, keep);
    memcpy(writer.cut + keep, mark, sizeof mark - 1);
    *len = keep + sizeof mark - 1;
    return writer.cut;
}

static int writer_strings_grow(void)
{
    size_t cap = writer.strings_cap ? writer.strings_cap * 2 : 4096;
    struct writer_string *table = calloc(cap, sizeof(*table));
    if (!table)
        return -1;
    for (size_t i = 0; i < writer.strings_cap; i++) {
        struct writer_string *old = &writer.strings[i];
        if (!old->hash)
            continue;
        size_t j = old->hash & (cap - 1);
        while (table[j].hash)
            j = (j + 1) & (cap - 1);
        table[j] = *old;
    }
    free(writer.strings);
    writer.strings = table;
    writer.strings_cap = cap;
    return 0;
}

uint64_t writer_intern(const char *s, size_t len)
{
    size_t original_len = len;
    if (len > TRACE_STRING_MAX && !(s = writer_cut_string(s, &len)))
        return 0;
    uint64_t hash = writer_hash(s, len);
    if (writer.strings_used * 2 >= writer.strings_cap && writer.strings_used < WRITER_INTERN_MAX)
        writer_strings_grow();
    struct writer_string *slot = NULL;
    if (writer.strings_cap) { /* at most half full, so the probe ends */
        size_t mask = writer.strings_cap - 1, j = hash & mask;
        for (; writer.strings[j].hash; j = (j + 1) & mask) {
            struct writer_string *e = &writer.strings[j];
            if (e->hash == hash && e->len == len && memcmp(e->bytes, s, len) == 0)
                return e->id;
        }
        slot = &writer.strings[j];
    }
    uint64_t id = writer_new_string_id();
    /* past the caps a string is written again on each use instead of being remembered */
    if (slot && writer.strings_used * 2 < writer.strings_cap &&
        writer.strings_bytes + len <= WRITER_INTERN_BYTES_MAX) {
        char *copy = malloc(len ? len : 1);
        if (copy) {
            memcpy(copy, s, len);
            *slot = (struct writer_string){hash, id, copy, len};
            writer.strings_used++;
            writer.strings_bytes += len;
        }
    }
    writer_emit_string(id, s, len, original_len);
    return id;
}

/* The string table forgotten for a fork child's new file: retired, not freed (free() there
 * may wait for the allocator lock of a parent thread that is not in the child; the copies stay
 * untouched and reachable); the next string makes a new table. Past 8 generations of forks
 * the oldest is freed. */
static void writer_strings_forget(void)
{
    size_t n = sizeof writer.strings_retired / sizeof writer.strings_retired[0];
    struct writer_string *oldest = writer.strings_retired[n - 1];
    for (size_t i = 0; oldest && i < writer.strings_retired_cap[n - 1]; i++)
        free(oldest[i].bytes);
    free(oldest);
    memmove(writer.strings_retired + 1, writer.strings_retired,
            (n - 1) * sizeof writer.strings_retired[0]);
    memmove(writer.strings_retired_cap + 1, writer.strings_retired_cap,
            (n - 1) * sizeof writer.strings_retired_cap[0]);
    writer.strings_retired[0] = writer.strings;
    writer.strings_retired_cap[0] = writer.strings_cap;
    writer.strings = NULL;
    writer.strings_cap = writer.strings_used = writer.strings_bytes = 0;
}

/* Forgets the string table, freed (the writer thread, lock held: not in a fork child). */
static void writer_strings_clear(void)
{
    for (size_t i = 0; i < writer.strings_cap; i++)
        free(writer.strings[i].bytes);
    free(writer.strings);
    writer.strings = NULL;
    writer.strings_cap = writer.strings_used = writer.strings_bytes = 0;
}

/* Kept in the buffer file, so that the launcher's salvage continues the file's numbering. */
uint64_t writer_new_string_id(void)
{
    static _Atomic uint64_t unmapped = 1; /* before the pool exists (never in practice) */
    struct pool_header *h = __atomic_load_n(&ring_pool.header, __ATOMIC_ACQUIRE);
    return __atomic_fetch_add(h ? &h->next_string_id : &unmapped, 1, __ATOMIC_RELAXED);
}

/* wchar_t is UTF-32 on Linux; invalid code points become U+FFFD. */
size_t writer_wide_to_utf8(const wchar_t *w, size_t units, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < units; i++) {
        uint32_t c = (uint32_t)w[i];
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xC0 | (c >> 6));
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[n++] = (char)(0xE0 | (c >> 12));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | (c >> 18));
            out[n++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (c & 0x3F));
        }
    }
    return n;
}

/* ---- the threads' events ---- */

/* One span of a thread's stream, as the thread encoded it. */
static void writer_put_events(struct agent_thread *t, const uint8_t *bytes, size_t len, void *ctx)
{
    (void)ctx;
    writer_reserve_locked(len + 32);
    struct trace_thread_events r = {.thread_idx = t->thread_idx,
                                    .events = trace_bytes(bytes, len)};
    trace_put_thread_events(&writer.chunk, &r);
}

/* The calibration the events after it are converted with (the agent's own: clock.h). */
static void writer_put_clock(void)
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

/* Where names.c writes thread names. */
static const struct names_out writer_names = {&writer.chunk, writer_intern, writer_reserve_locked};

void writer_put_names(void)
{
    if (!writer_lock())
        return;
    names_drain_locked(&writer_names, 0);
    writer_unlock_durable();
}

void writer_note_tid_locked(uint32_t os_tid)
{
    names_note_tid_locked(&writer_names, os_tid);
}

static void writer_put_thread(uint64_t thread_idx, uint32_t os_tid, uint64_t first_seen_ns)
{
    struct trace_thread r = {
        .thread_idx = thread_idx, .os_tid = os_tid, .first_seen = first_seen_ns};
    writer_reserve_locked(48);
    trace_put_thread(&writer.chunk, &r);
}

/* What a drain covers: `final` for the last one before the file ends (the OS names of live
 * threads are read once more, from /proc: the writer cannot ask them); a non-zero quota stops
 * it once that many blocks went back to the pool (a thread's help, writer_help). */
struct writer_drain {
    int final;
    uint32_t quota, freed;
};

static void writer_drain_thread(struct agent_thread *t, int exited, void *ctx)
{
    struct writer_drain *d = ctx;
    struct pool_slot *s = t->slot;
    if (!s)
        return; /* no slot: its events are counted in the header's lost */
    if (!exited && d->quota && d->freed >= d->quota)
        return; /* an exited thread is always drained: it is freed after this */
    if (!s->pending_announced) {
        writer_put_thread(t->thread_idx, t->os_tid,
                          clock_ticks_to_ns(&writer.calibration, t->first_ticks));
        s->pending_announced = 1;
        names_put_os_name(&writer_names, t->os_tid, t->first_name, t->name_written);
    }
    d->freed += ring_consume(t, writer_put_events, NULL);
    char comm[RING_THREAD_NAME_BYTES];
    if (exited)
        names_put_os_name(&writer_names, t->os_tid, t->exit_name, t->name_written);
    else if (d->final && names_read_comm(t->os_tid, comm))
        names_put_os_name(&writer_names, t->os_tid, comm, t->name_written);
    uint64_t dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
    if (dropped != s->pending_dropped) {
        writer_put_dropped(t->thread_idx, dropped - s->pending_dropped);
        s->pending_dropped = dropped;
    }
}

/* Returns how many blocks the drain left behind (they go back once the chunk is written). */
static uint32_t writer_drain_some_locked(int final, uint32_t quota)
{
    clock_calibration_update(&writer.calibration);
    writer_put_clock();
    /* events of threads that found no slot, counted in the buffer file's header */
    struct pool_header *h = ring_pool.header;
    uint64_t lost = h ? __atomic_load_n(&h->lost, __ATOMIC_RELAXED) : 0;
    if (h && lost != h->lost_pending) {
        writer_put_dropped(0, lost - h->lost_pending);
        h->lost_pending = lost;
    }
    names_drain_locked(&writer_names, final);
    writer_reserve_locked(128);
    agent_tables_put_cuts_locked(&writer.chunk);
    struct writer_drain d = {final, quota, 0};
    ring_for_each_thread(writer_drain_thread, &d);
    if (writer_drain_hook)
        writer_drain_hook(final);
    return d.freed;
}

static uint32_t writer_drain_locked(int final)
{
    return writer_drain_some_locked(final, 0);
}

/* ---- the locked interface ---- */


struct trace_chunk_builder *writer_lock(void)
{
    agent_busy++; /* until writer_unlock */
    writer_start_wanted();
    pthread_mutex_lock(&writer.lock);
    if (writer.open)
        return &writer.chunk;
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
    return NULL;
}

void writer_unlock(void)
{
    if (writer.chunk.len * 2 > writer.chunk_cap)
        writer_flush_locked();
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
}

void writer_unlock_durable(void)
{
    writer_flush_locked();
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
}

/* ---- a thread that found the buffer pool empty ---- */

/* A thread that finds the pool empty tries the writer lock for at most WRITER_HELP_SLICE_NS
 * at a time (ring.c calls again, up to RING_HELP_WAIT_NS, before it drops an event). */
#define WRITER_HELP_SLICE_NS 50000000u /* 50 ms */

static struct timespec writer_realtime_in(uint64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    ns += (uint64_t)t.tv_nsec;
    t.tv_sec += (time_t)(ns / 1000000000u);
    t.tv_nsec = (long)(ns % 1000000000u);
    return t;
}

/* The writer thread is behind (many threads at full speed starve it of CPU): the thread waits
 * for the writer lock, asleep, so that the CPU goes to whoever drains, then drains until a
 * sixteenth of the pool is back (unless the one before it left blocks) and writes the chunk,
 * which gives those blocks back, so that the lock is held briefly. A mutex is not fair: a
 * waiter may lose it many times, and another thread may take the blocks it gave back; ring.c
 * calls again until its wait is over. Returns 0 when helping cannot help: no file to write, or
 * nothing to give back (every block is a live thread's current one). */
static int writer_help(void)
{
    struct timespec slice = writer_realtime_in(WRITER_HELP_SLICE_NS);
    if (pthread_mutex_timedlock(&writer.lock, &slice) != 0)
        return 1;
    int progress = ring_pool_has_free_block();
    if (!progress && writer.open && !writer.write_failed) {
        progress = writer_drain_some_locked(0, ring_pool.blocks / 16 + 1) > 0;
        writer_flush_locked();
    }
    pthread_mutex_unlock(&writer.lock);
    return progress;
}

/* ---- the thread ---- */

/* How often the writer looks whether it is the process's last thread (main called
 * pthread_exit and the others ended): then it ends too, and the process exits as it would
 * without Lantern (status 0, atexit handlers run, the agent's among them). */
#define WRITER_ALONE_CHECK_NS 100000000u /* 100 ms */

/* Whether the writer is the process's last thread: /proc/self/stat counts one thread, or two
 * with the leader (main) a zombie after its pthread_exit (it stays in the count until the
 * whole group ends). */
static int writer_alone(void)
{
    static char stat[1024];
    size_t len = writer_read_file("/proc/self/stat", stat, sizeof stat - 1);
    stat[len] = '\0';
    char *close = strrchr(stat, ')'); /* comm may hold spaces and parentheses */
    char state = 0;
    long threads = 0;
    if (!close || sscanf(close + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                                    "%*d %*d %ld",
                         &state, &threads) != 2)
        return 0;
    return threads == 1 || (threads == 2 && state == 'Z');
}

void writer_set_drain(void (*fn)(int final))
{
    writer_drain_hook = fn;
}

struct trace_chunk_builder *writer_chunk_locked(void)
{
    return &writer.chunk;
}

uint32_t writer_thread_tid(void)
{
    return __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE);
}

void writer_set_poll(void (*fn)(void))
{
    writer_poll = fn;
}

void writer_set_periodic(void (*fn)(void), unsigned period_ms)
{
    writer_periodic_ns = (uint64_t)period_ms * 1000000u;
    writer_periodic = fn;
}

static void *writer_main(void *arg)
{
    (void)arg;
    agent_busy = 1; /* the agent's own thread: -t osrt never times its calls */
    __atomic_store_n(&writer_thread_starting, 0, __ATOMIC_RELEASE);
    prctl(PR_SET_NAME, "lantern-writer");
    __atomic_store_n(&writer_tid, ring_gettid(), __ATOMIC_RELEASE);
    uint32_t seen = ring_wake_count();
    uint64_t alone_checked = clock_mono_ns(), periodic_ran = alone_checked;
    while (!__atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE)) {
        ring_consumer_wait(seen, WRITER_DRAIN_PERIOD_NS);
        seen = ring_wake_count();
        uint64_t now_ns = clock_mono_ns();
        if (writer_poll)
            writer_poll();
        if (writer_periodic && now_ns - periodic_ran >= writer_periodic_ns) {
            periodic_ran = now_ns;
            writer_periodic();
        }
        if (now_ns - alone_checked >= WRITER_ALONE_CHECK_NS) {
            alone_checked = now_ns;
            if (writer_alone())
                break; /* the last thread: glibc's exit(0) follows, with agent_exit */
        }
        if (__atomic_load_n(&writer_end_requested, __ATOMIC_ACQUIRE)) {
            writer_end(0); /* the process is being killed: not a clean exit */
            break;
        }
        pthread_mutex_lock(&writer.lock);
        if (writer.open) {
            /* blocks left behind go back to the pool only once the chunk holding their
             * events is written: then it is written at once */
            uint32_t passed = writer_drain_locked(0);
            uint64_t now = clock_mono_ns();
            int due = now - writer.last_flush_ns >= WRITER_FLUSH_PERIOD_NS;
            if (!trace_chunk_empty(&writer.chunk) &&
                (due || passed || writer.chunk.len * 2 > writer.chunk_cap))
                writer_flush_locked();
            writer_ring_rotate(now);
        }
        pthread_mutex_unlock(&writer.lock);
    }
    return NULL;
}

/* The writer must never take the application's signals. */
static int writer_start_thread(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&writer_stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&writer_thread_starting, 1, __ATOMIC_RELEASE);
    int rc = pthread_create(&writer.thread, NULL, writer_main, NULL);
    if (rc != 0)
        __atomic_store_n(&writer_thread_starting, 0, __ATOMIC_RELEASE);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    pthread_detach(writer.thread);
    return 0;
}

/* A fork child's thread starts once it has filled RING_WAKE_BLOCKS blocks, or at its first
 * locked write (CUDA), or at its first event in a session cut into windows (control.c), never
 * inside the atfork handler (a thread made there hangs sanitized programs); a short-lived
 * child makes none. */
void writer_start_wanted(void)
{
    if (__atomic_load_n(&writer_thread_wanted, __ATOMIC_ACQUIRE) &&
        __atomic_exchange_n(&writer_thread_wanted, 0, __ATOMIC_ACQ_REL)) {
        agent_busy++; /* a program thread may start it: -t osrt times none of its calls */
        writer_run();
        agent_busy--;
    }
}

/* ---- the process record and the file ---- */

static size_t writer_read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ssize_t n;
    while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
        len += (size_t)n;
    close(fd);
    return len;
}

/* The parent of pid from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold
 * spaces and parentheses, so read after the last ')'); 0 if unknown. */
static uint64_t writer_parent_of(uint64_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    size_t len = writer_read_file(path, stat, sizeof stat - 1);
    stat[len] = '\0';
    char *close = strrchr(stat, ')');
    unsigned long long ppid = 0;
    if (!close || sscanf(close + 1, " %*c %llu", &ppid) != 1)
        return 0;
    return ppid;
}

/* TRACE_PROCESS_INFO: the rank from the job launcher's variables (trace/rank.h) and the
 * ancestors above the parent, so that the importer links a process to the traced process
 * that started it even through an untraced shell in between. */
static void writer_put_process_info(void)
{
    const char *rank_var = "", *local_var = "";
    long long rank = trace_env_rank(trace_rank_variables, &rank_var);
    long long local = trace_env_rank(trace_local_rank_variables, &local_var);
    struct trace_process_info r = {.rank = (uint64_t)(rank + 1),
                                   .local_rank = (uint64_t)(local + 1),
                                   .rank_variable = trace_cstr(rank >= 0 ? rank_var : local_var)};
    for (uint64_t pid = (uint64_t)getppid(); pid > 1 && r.ancestors.count < TRACE_MAX_ANCESTORS;) {
        pid = writer_parent_of(pid);
        if (!pid)
            break;
        r.ancestors.values[r.ancestors.count++] = pid;
    }
    trace_put_process_info(&writer.chunk, &r);
}

static void writer_put_process(uint64_t start_ns)
{
    static char cmdline[16384];
    size_t cmd_len = writer_read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
    if (cmd_len && cmdline[cmd_len - 1] == '\0')
        cmd_len--; /* the format separates arguments by NUL; no terminator */
    trace_put_process_self(&writer.chunk, start_ns, cmdline, cmd_len, writer.agent_flags, "");
    writer_put_process_info();
    /* a multiprocessing child named before its first event: in the first chunk, which is
     * written at once (the child may _exit before any drain) */
    names_put_process_locked(&writer_names);
}

/* Closes the file's descriptor if it is still ours. */
static void writer_close(void)
{
    struct stat st;
    if (writer.fd >= 0 && fstat(writer.fd, &st) == 0 && st.st_dev == writer.fd_dev &&
        st.st_ino == writer.fd_ino)
        close(writer.fd);
    writer.fd = -1;
    writer.opened = 0;
}

/* Opens this process's file "<pid>-<start_ns>.lrt" and its buffer file (.lrb) and writes the
 * header and TRACE_PROCESS (lock held). In a fork child the buffer file replaces the parent's
 * pool in place (ring_fork_child). */
static int writer_open_file(int fork_child)
{
    if (!fork_child && ring_pool_init() < 0) {
        agent_warn("cannot reserve the event buffers (LANTERN_BUFFER_KB); tracing disabled");
        return -1;
    }
    uint64_t start_ns = fork_child ? clock_mono_ns() : ring_pool.start_ns; /* the pool's name */
    char *path = writer.path;
    snprintf(path, sizeof(writer.path), "%s/%d-%llu.lrt", writer.session_dir, (int)getpid(),
             (unsigned long long)start_ns);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        agent_warn("cannot create '%s': %s; tracing disabled", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    writer.fd = writer_fd_high(fd);
    writer.fd_dev = st.st_dev;
    writer.fd_ino = st.st_ino;
    writer.opened = 1;
    char pool[sizeof writer.path];
    snprintf(pool, sizeof pool, "%.*sb", (int)strlen(path) - 1, path); /* .lrt -> .lrb */
    if (fork_child)
        ring_fork_child(pool);
    if (!ring_pool.path[0])
        agent_warn("cannot make the buffer file '%s': events still buffered when the process "
                   "ends without its exit hooks (_exit, a signal) are lost",
                   pool);
    struct pool_header *h = ring_pool.header;
    if (h) {
        h->ticks_are_tsc = (uint32_t)clock_ticks_are_tsc;
        h->first_ticks = writer.calibration.first_ticks;
        h->first_ns = writer.calibration.first_ns;
    }
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    writer.write_failed = 0;
    writer.file_bytes = 0;
    if (writer_write_all(header, sizeof(header)) < 0) {
        agent_warn("cannot write '%s': %s; tracing disabled", path, strerror(errno));
        writer_close();
        return -1;
    }
    writer.file_bytes = sizeof(header);
    writer_keep_reserve();
    writer.dropped_total = 0;
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, start_ns);
    writer_put_process(start_ns);
    writer_flush_locked(); /* the process record reaches the disk even if we die now */
    return writer_ring_start();
}

int writer_start(const char *session_dir, uint32_t agent_flags)
{
    if (strlen(session_dir) >= sizeof(writer.session_dir)) {
        agent_warn("LANTERN_SESSION_DIR is too long; tracing disabled");
        return -1;
    }
    pthread_mutex_lock(&writer.lock);
    strcpy(writer.session_dir, session_dir);
    writer.agent_flags = agent_flags;
    writer.chunk_cap = WRITER_CHUNK_BYTES;
    writer.chunk_buf = malloc(writer.chunk_cap);
    clock_calibration_start(&writer.calibration);
    ring_set_helper(writer_help);
    ring_set_block_hook(writer_start_wanted);
    if (!writer.chunk_buf || writer_open_file(0) < 0)
        goto fail;
    writer.open = 1;
    pthread_mutex_unlock(&writer.lock);
    return 0;
fail:
    writer_close();
    free(writer.chunk_buf);
    writer.chunk_buf = NULL;
    pthread_mutex_unlock(&writer.lock);
    return -1;
}

/* The last chunk, alone: TRACE_WRITE_ERROR if a write failed, then TRACE_PROCESS_END. */
static void writer_put_end(int clean)
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
 * and the reserve kept); 0, or -1 with errno set and the file cut back to its whole chunks. */
static int writer_write_end_chunk(void)
{
    size_t len = trace_chunk_finish(&writer.chunk);
    if (writer_write_chunk(len) < 0) {
        int err = errno;
        writer_truncate();
        errno = err;
        return -1;
    }
    return 0;
}

/* Drains everything, writes TRACE_PROCESS_END and closes the file; once. */
static void writer_end(int clean)
{
    pthread_mutex_lock(&writer.lock);
    if (!writer.open)
        goto out;
    __atomic_store_n(&writer_stop, 1, __ATOMIC_RELEASE);
    writer_drain_locked(1);
    writer_flush_locked(); /* after a failed write: counts what the drain gathered */
    writer_put_end(clean);
    if (writer_write_end_chunk() < 0 && !writer.write_failed) {
        writer_write_failed(errno); /* the end alone failed: say so, in less space */
        writer_put_end(clean);
        writer_write_end_chunk();
    }
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, clock_mono_ns());
    writer_truncate(); /* the reserve past the end goes */
    if (ring_pool.header)
        __atomic_store_n(&ring_pool.header->ended, 1, __ATOMIC_RELEASE);
    writer_close();
    writer_ring_close();
    writer.open = 0;
out:
    pthread_mutex_unlock(&writer.lock);
    __atomic_store_n(&writer_ended, 1, __ATOMIC_RELEASE);
    ring_wake_consumer(); /* lets the thread see writer_stop and end */
}

int writer_run(void)
{
    if (writer_start_thread() == 0)
        return 0;
    agent_warn("cannot start the writer thread; events are written at exit only");
    return -1;
}

void writer_finish(void)
{
    writer_end(1);
}

/* From a signal handler (async-signal-safe: atomics, futex, nanosleep): the writer thread
 * does the work, since the interrupted thread may hold any lock; gives up after timeout_ms
 * (e.g. when the interrupted thread holds the writer lock). */
void writer_finish_from_signal(int timeout_ms)
{
    __atomic_store_n(&writer_end_requested, 1, __ATOMIC_RELEASE);
    ring_wake_consumer();
    struct timespec millisecond = {0, 1000000};
    for (int i = 0; i < timeout_ms && !__atomic_load_n(&writer_ended, __ATOMIC_ACQUIRE); i++)
        nanosleep(&millisecond, NULL);
}

void writer_flush_now(void)
{
    pthread_mutex_lock(&writer.lock);
    if (writer.open) {
        writer_drain_locked(0);
        writer_flush_locked();
    }
    pthread_mutex_unlock(&writer.lock);
}

/* fork(): the parent's events so far go to the parent's file before the address space is
 * copied; the lock is held across fork() so the child never sees a half-built chunk. A writer
 * thread still starting (its C library's and a sanitizer's set-up allocate) is waited for, at
 * most 100 ms: a fork in the middle of that would hand the child a held allocator lock. */
void writer_fork_prepare(void)
{
    struct timespec pause = {0, 100000}; /* 0.1 ms */
    for (int i = 0; i < 1000 && __atomic_load_n(&writer_thread_starting, __ATOMIC_ACQUIRE); i++)
        nanosleep(&pause, NULL);
    pthread_mutex_lock(&writer.lock);
    if (writer.open) {
        writer_drain_locked(0);
        writer_flush_locked();
    }
}

void writer_fork_parent(void)
{
    pthread_mutex_unlock(&writer.lock);
}

void writer_fork_child(void)
{
    __atomic_store_n(&writer_end_requested, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_ended, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_tid, 0, __ATOMIC_RELAXED); /* the child's starts later */
    pthread_mutex_init(&writer.lock, NULL); /* held by the parent's thread at fork */
    names_fork_child();
    if (!writer.open) {
        ring_fork_child(NULL);
        return;
    }
    writer_close(); /* the parent's */
    writer_ring_close();
    writer.open = 0;
    writer_strings_forget();
    clock_calibration_update(&writer.calibration);
    if (writer_open_file(1) < 0) {
        ring_disable();
        return;
    }
    writer.open = 1;
}

void writer_fork_child_done(void)
{
    __atomic_store_n(&writer_thread_wanted, writer.open, __ATOMIC_RELEASE);
}
