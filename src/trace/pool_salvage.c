/* After a process is gone: what its trace file (.lrt) lacks of its buffer file (.lrb,
 * pool_file.h) is appended to the trace file, so that events a thread committed are kept
 * however the process ended. For each thread slot in use, the stream from where the trace
 * file holds it (the durable cursor, or the pending one when the chunk in flight reached the
 * file) to the head the thread published; threads the file never announced are announced;
 * drops not yet reported are; then TRACE_PROCESS_END with salvaged = 1, in chunks numbered
 * after the file's last (codec.h). Everything read from
 * the buffer file is checked against its bounds: a damaged one costs only its own events. */
#include "trace/codec.h"
#include "trace/events.h"
#include "trace/format.h"
#include "trace/pool_file.h"
#include "trace/segments.h"
#include "trace/records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define SALVAGE_CHUNK_BYTES (1u << 20)

struct salvage {
    const struct pool_header *h;
    const uint8_t *map;
    int fd;            /* the trace file, opened for appending */
    uint64_t length;   /* its whole chunks */
    uint64_t next_seq; /* the chunk number after its last (codec.h: how an appender numbers) */
    struct trace_chunk_builder chunk;
    uint8_t *buf;
    struct trace_clock_line clock;
    uint64_t next_string_id;
    uint64_t added; /* records appended besides the clock and the end */
    int failed;
};

static uint64_t salvage_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void salvage_flush(struct salvage *s)
{
    if (trace_chunk_empty(&s->chunk) || s->failed) {
        trace_chunk_begin(&s->chunk, s->buf, SALVAGE_CHUNK_BYTES, s->clock.ns);
        return;
    }
    s->chunk.seq = s->next_seq++;
    size_t len = trace_chunk_finish(&s->chunk);
    if (pwrite(s->fd, s->buf, len, (off_t)s->length) != (ssize_t)len)
        s->failed = errno ? errno : EIO;
    else
        s->length += len;
    trace_chunk_begin(&s->chunk, s->buf, SALVAGE_CHUNK_BYTES, s->clock.ns);
}

/* Room for a record of up to `bytes`. */
static void salvage_reserve(struct salvage *s, size_t bytes)
{
    if (s->chunk.cap - s->chunk.len < bytes + 64)
        salvage_flush(s);
}

/* The (ticks, ns) line for the salvaged events: through the process's first pair, with the
 * slope from there to a pair taken now (the TSC is one clock for every process of the
 * machine). The appended chunk's times start at that first pair, so that they never move
 * the process's end: the importer ends a salvaged process at its last event. */
static void salvage_clock(struct salvage *s)
{
    s->clock = (struct trace_clock_line){.ns = s->h->first_ns};
#if defined(__x86_64__) || defined(__i386__)
    uint64_t now_ns = salvage_mono_ns(), now_ticks = __rdtsc();
    if (s->h->ticks_are_tsc && now_ticks > s->h->first_ticks && now_ns > s->h->first_ns) {
        s->clock.tsc = s->h->first_ticks;
        s->clock.ns_per_tick =
            (double)(now_ns - s->h->first_ns) / (double)(now_ticks - s->h->first_ticks);
        s->clock.set = 1;
    }
#endif
}

static void salvage_put_clock(struct salvage *s)
{
    if (!s->clock.set)
        return;
    uint64_t bits;
    memcpy(&bits, &s->clock.ns_per_tick, sizeof bits);
    struct trace_clock r = {.tsc = s->clock.tsc, .ts = s->clock.ns, .ns_per_tick = bits};
    salvage_reserve(s, 48);
    trace_put_clock(&s->chunk, &r);
}

static const uint8_t *salvage_block(const struct salvage *s, uint32_t block)
{
    return s->map + s->h->block_offset + (uint64_t)(block - 1) * s->h->block_bytes;
}

static void salvage_span(struct salvage *s, uint64_t thread_idx, const uint8_t *p, size_t len)
{
    salvage_reserve(s, len + 32);
    struct trace_thread_events r = {.thread_idx = thread_idx, .events = trace_bytes(p, len)};
    trace_put_thread_events(&s->chunk, &r);
    s->added++;
}

/* A thread the trace file never announced: TRACE_THREAD and its OS name. */
static void salvage_announce(struct salvage *s, const struct pool_slot *slot)
{
    uint64_t first =
        s->clock.set ? trace_clock_line_ns(&s->clock, slot->first_ticks) : slot->first_ticks;
    struct trace_thread t = {
        .thread_idx = slot->thread_idx, .os_tid = slot->os_tid, .first_seen = first};
    salvage_reserve(s, 64);
    trace_put_thread(&s->chunk, &t);
    s->added++;
    size_t len = strnlen(slot->name, sizeof slot->name);
    if (!len)
        return;
    struct trace_string name = {.id = s->next_string_id++, .bytes = trace_bytes(slot->name, len)};
    struct trace_thread_os_name os = {.os_tid = slot->os_tid, .name = name.id};
    salvage_reserve(s, 64);
    trace_put_string(&s->chunk, &name);
    trace_put_thread_os_name(&s->chunk, &os);
}

/* The slot's stream from cursor to its head; the walk stops at anything out of bounds. */
static void salvage_slot(struct salvage *s, const struct pool_slot *slot, int pending)
{
    const struct pool_header *h = s->h;
    uint64_t cursor = pending ? slot->pending : slot->durable;
    uint64_t head = slot->head;
    uint32_t block = cursor ? (uint32_t)(cursor >> 32) : slot->first_block;
    uint32_t pos = (uint32_t)cursor;
    uint32_t head_block = (uint32_t)(head >> 32), head_pos = (uint32_t)head;
    if (!(pending ? slot->pending_announced : slot->durable_announced))
        salvage_announce(s, slot);
    const struct pool_block_meta *meta = (const struct pool_block_meta *)(s->map + h->meta_offset);
    for (uint32_t steps = 0; head_block && block && steps <= h->blocks; steps++) {
        if (block > h->blocks || pos > h->block_bytes)
            break;
        uint32_t end = block == head_block ? head_pos : meta[block - 1].end;
        if (end > h->block_bytes)
            break;
        if (end > pos)
            salvage_span(s, slot->thread_idx, salvage_block(s, block) + pos, end - pos);
        if (block == head_block)
            break;
        block = meta[block - 1].next;
        pos = 0;
    }
    uint64_t reported = pending ? slot->pending_dropped : slot->durable_dropped;
    if (slot->dropped > reported) {
        struct trace_dropped d = {.thread_idx = slot->thread_idx,
                                  .count = slot->dropped - reported};
        salvage_reserve(s, 32);
        trace_put_dropped(&s->chunk, &d);
        s->added++;
    }
}

static int salvage_header_ok(const struct pool_header *h, uint64_t size)
{
    struct pool_header layout = {0};
    if (memcmp(h->magic, POOL_FILE_MAGIC, sizeof h->magic) || h->version != POOL_FILE_VERSION ||
        !h->blocks || !h->block_bytes || h->block_bytes > (1u << 24) || h->slots > h->blocks)
        return 0;
    pool_layout(&layout, h->blocks, h->slots, h->block_bytes);
    return layout.slot_offset == h->slot_offset && layout.meta_offset == h->meta_offset &&
           layout.block_offset == h->block_offset && layout.file_bytes == h->file_bytes &&
           h->file_bytes <= size;
}

/* The newest segment file of the trace file lrt (--ring, trace/segments.h) into out: its
 * number, 0 when there is none. */
static uint64_t salvage_newest_segment(const char *lrt, char *out, size_t cap)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", lrt);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : lrt;
    if (slash)
        *slash = '\0';
    DIR *d = opendir(slash ? dir : ".");
    uint64_t newest = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        uint64_t n = trace_segment_number(e->d_name, base);
        if (n > newest)
            newest = n;
    }
    if (d)
        closedir(d);
    return newest && trace_segment_path(out, cap, lrt, newest) == 0 ? newest : 0;
}

/* The number after the highest chunk seq of path's whole chunks; 1 when it has none or cannot
 * be read. */
static uint64_t salvage_next_seq_of(const char *path)
{
    uint64_t whole, next = 1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && trace_file_last_chunk(fd, &whole, &next) < 0)
        next = 1;
    if (fd >= 0)
        close(fd);
    return next;
}

/* --ring: the number after the highest chunk seq the process wrote. Its chunks are numbered
 * from one counter in the order it wrote them, into the .lrt (definitions) and its segments
 * in turn, so the highest is the .lrt's or that of the newest segment that holds a chunk. The
 * newest holds none when the process died right after the writer began it (the writer
 * closes a segment before it begins the next one): the salvaged chunks must still follow the
 * previous segment's, or the dump's join puts them before the whole ring, where the threads'
 * streams read out of order (an event before a RESTART continues a stream that is not there
 * yet: #30's hole two steps before a crash). Kept segments are consecutive: the walk stops at
 * the first one missing. */
static uint64_t salvage_ring_next_seq(const char *lrt, uint64_t newest)
{
    uint64_t next = salvage_next_seq_of(lrt);
    char path[4096];
    for (uint64_t n = newest; n > 0 && trace_segment_path(path, sizeof path, lrt, n) == 0; n--) {
        if (access(path, F_OK) != 0)
            break;
        uint64_t segment_next = salvage_next_seq_of(path);
        if (segment_next > 1) {
            if (segment_next > next)
                next = segment_next;
            break;
        }
    }
    return next;
}

/* A segment the writer had created but not yet given its header when the process died
 * (writer_ring_open) gets it here, so that the salvage appends to an empty segment. */
static void salvage_segment_header(int fd)
{
    struct stat st;
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size >= TRACE_FILE_HEADER_SIZE)
        return;
    trace_file_header(header);
    if (ftruncate(fd, 0) == 0) /* a failed write leaves it short: trace_file_last_chunk says so */
        (void)!pwrite(fd, header, sizeof header, 0);
}

/* Appends to the trace file `lrt` what the mapped buffer file lacks; 0, 1 when it lacked
 * nothing, or a negative errno (said). */
static int salvage_file(const char *lrt, const uint8_t *map, const char *name)
{
    const struct pool_header *h = (const struct pool_header *)map;
    struct salvage s = {.h = h, .map = map, .next_string_id = h->next_string_id};
    uint64_t whole = 0, ring_seq = 0;
    /* --ring: the events go to the newest segment, numbered after every chunk the process
     * wrote */
    char segment[4096];
    uint64_t newest = salvage_newest_segment(lrt, segment, sizeof segment);
    if (newest) {
        ring_seq = salvage_ring_next_seq(lrt, newest);
        lrt = segment;
    }
    s.fd = open(lrt, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    salvage_segment_header(s.fd);
    int rc = s.fd < 0 ? -errno : trace_file_last_chunk(s.fd, &whole, &s.next_seq);
    if (ring_seq > s.next_seq)
        s.next_seq = ring_seq;
    if (rc < 0) {
        fprintf(stderr,
                "lantern: %s: its trace file is missing or not of this version (%s); its "
                "buffered events are not recovered\n",
                name, strerror(-rc));
        if (s.fd >= 0)
            close(s.fd);
        return rc;
    }
    if (ftruncate(s.fd, (off_t)whole) < 0 || !(s.buf = malloc(SALVAGE_CHUNK_BYTES))) {
        int error = errno;
        fprintf(stderr, "lantern: cannot recover the buffered events of %s: %s\n", name,
                strerror(error));
        close(s.fd);
        return -error;
    }
    s.length = whole;
    uint64_t commit_end = h->commit_end;
    int pending = commit_end && whole >= commit_end;
    salvage_clock(&s);
    trace_chunk_begin(&s.chunk, s.buf, SALVAGE_CHUNK_BYTES, s.clock.ns);
    salvage_put_clock(&s);
    const struct pool_slot *slots = (const struct pool_slot *)(map + h->slot_offset);
    for (uint32_t i = 0; i < h->slots; i++)
        if (slots[i].used && slots[i].thread_idx)
            salvage_slot(&s, &slots[i], pending);
    if (h->lost > h->lost_durable) {
        struct trace_dropped d = {.thread_idx = 0, .count = h->lost - h->lost_durable};
        salvage_reserve(&s, 32);
        trace_put_dropped(&s.chunk, &d);
        s.added++;
    }
    if (s.added || !h->ended) { /* else the process wrote everything itself */
        struct trace_process_end end = {
            .end = s.clock.ns, .clean = h->ended ? 1 : 0, .salvaged = 1};
        salvage_reserve(&s, 64);
        trace_put_process_end(&s.chunk, &end);
        salvage_flush(&s);
    }
    free(s.buf);
    int failed = s.failed;
    if (close(s.fd) < 0 && !failed)
        failed = errno;
    if (failed) {
        fprintf(stderr, "lantern: cannot append the buffered events of %s: %s\n", name,
                strerror(failed));
        return -failed;
    }
    return s.added || !h->ended ? 0 : 1;
}

/* "<pid>-<start_ns>.lrb" */
static int salvage_name(const char *name, long *pid, uint64_t *start_ns)
{
    char *end;
    errno = 0;
    long p = strtol(name, &end, 10);
    if (errno || p <= 0 || *end != '-')
        return 0;
    unsigned long long start = strtoull(end + 1, &end, 10);
    if (errno || strcmp(end, ".lrb") != 0)
        return 0;
    *pid = p;
    *start_ns = start;
    return 1;
}

int pool_salvage_session(const char *dir, int (*alive)(long pid, uint64_t start_ns))
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int salvaged = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        uint64_t start_ns;
        if (!salvage_name(e->d_name, &pid, &start_ns) || (alive && alive(pid, start_ns)))
            continue;
        char lrb[4096], lrt[4096];
        if (snprintf(lrb, sizeof lrb, "%s/%s", dir, e->d_name) >= (int)sizeof lrb)
            continue;
        snprintf(lrt, sizeof lrt, "%s", lrb);
        lrt[strlen(lrt) - 1] = 't';
        int fd = open(lrb, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
            (uint64_t)st.st_size < sizeof(struct pool_header)) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (map == MAP_FAILED)
            continue;
        if (!salvage_header_ok(map, (uint64_t)st.st_size))
            fprintf(stderr, "lantern: %s: not a Lantern buffer file (or damaged); skipped\n",
                    e->d_name);
        else if (salvage_file(lrt, map, e->d_name) == 0)
            salvaged++;
        munmap(map, (size_t)st.st_size);
        unlink(lrb);
    }
    closedir(d);
    return salvaged;
}
