/* The launcher's own raw file, launcher.lrt, in the session folder: it describes the session
 * (the profiled command, the -t list, the host), how each process the launcher reaped ended
 * (written in small batches as they are reaped, so the launcher's memory stays flat however
 * many processes a server forks) and, at the end, the command's exit status. The launcher's
 * samplers append their chunks to it between the two, through launcher_file_write. With
 * --ring its definitions stay in launcher.lrt and its events (the samples) go to segment
 * files launcher.<n>.lrs that rotate and are deleted as the agents' do (trace/segments.h,
 * docs/long-runs.md), so its disk stays flat too. */
#include "launcher/launcher_internal.h"
#include "launcher/samplers.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/process.h"
#include "trace/records.h"
#include "trace/segments.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCHER_FILE_NAME "launcher.lrt" /* the segments' names come from it */
/* The exits are batched (a chunk of one exit would take 3 times the bytes): a batch is
 * written once it holds 4 KiB (~300 exits) or its first exit is a second old, and before a
 * window's database or a dump is written and at the end (launcher_file_flush_exits). */
#define EXIT_BATCH_BYTES 4096u
#define EXIT_BATCH_NS 1000000000ull
/* A split chunk's records may take a few bytes more than in the chunk they came from (their
 * timestamps encoded from a new chain): the agents' writer keeps the same margin. */
#define SPLIT_SLACK 4096u

struct launcher_file {
    pthread_mutex_t lock; /* one chunk at a time: the samplers' threads, the reaper, the end */
    int fd;               /* launcher.lrt */
    int dir_fd;           /* the session folder (not ours), where the segments are */
    /* --ring (segment_ns 0: off), as the agents' writer (trace/segments.h) */
    uint64_t segment_ns, kept;
    int segment_fd;         /* the segment being written, -1: none */
    uint64_t segment;       /* its number (0: none yet) */
    uint64_t segment_start; /* when it began */
    uint64_t definition_bytes;
    uint8_t *defs_buf, *events_buf;
    size_t split_cap;
    /* the reaped processes' TRACE_CHILD_EXIT records not written yet */
    struct trace_chunk_builder exits;
    uint8_t exits_buf[EXIT_BATCH_BYTES];
};

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int launcher_file_open(int fd, int dir_fd, uint64_t ring_ns, struct launcher_file **out)
{
    *out = NULL;
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    struct launcher_file *f = calloc(1, sizeof *f);
    int rc = !f ? -ENOMEM : trace_write_all(fd, header, sizeof header);
    if (rc < 0) {
        int err = errno;
        close(fd);
        free(f);
        errno = err;
        return rc;
    }
    f->fd = fd;
    f->dir_fd = dir_fd;
    f->segment_fd = -1;
    f->segment_ns = ring_ns ? trace_segment_ns(ring_ns) : 0;
    f->kept = ring_ns ? trace_segments_kept(ring_ns) : 0;
    pthread_mutex_init(&f->lock, NULL);
    *out = f;
    return 0;
}

/* ---- --ring: the segments ------------------------------------------------------------------ */

/* Begins the next segment once the current one is segment_ns old (lock held): its file
 * header and a chunk holding TRACE_SEGMENT, numbered before the events that follow; the
 * segment that fell out of the ring is deleted. 0, or the failed call's -errno (the events
 * until the next rotation are then lost). */
static int ring_rotate(struct launcher_file *f, uint64_t now)
{
    if (f->segment && now - f->segment_start < f->segment_ns)
        return f->segment_fd >= 0 ? 0 : -EBADF;
    uint64_t n = f->segment + 1;
    char name[64], old[64];
    if (f->segment_fd >= 0)
        close(f->segment_fd);
    f->segment_fd = -1;
    f->segment = n;
    f->segment_start = now;
    if (n > f->kept + 1 &&
        trace_segment_path(old, sizeof old, LAUNCHER_FILE_NAME, n - f->kept - 1) == 0)
        unlinkat(f->dir_fd, old, 0);
    int rc = trace_segment_path(name, sizeof name, LAUNCHER_FILE_NAME, n);
    if (rc < 0)
        return rc;
    int fd = trace_segment_create(f->dir_fd, name);
    if (fd < 0)
        return fd;
    uint8_t chunk[TRACE_CHUNK_HEADER_SIZE + 64];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, chunk, sizeof chunk, now);
    struct trace_segment r = {.number = n, .start = now};
    trace_put_segment(&b, &r);
    if ((rc = trace_write_all(fd, chunk, trace_chunk_finish(&b))) < 0) {
        close(fd);
        return rc;
    }
    f->segment_fd = fd;
    return 0;
}

/* Room to split a chunk of len bytes (lock held): 0 or -ENOMEM. */
static int ring_split_room(struct launcher_file *f, size_t len)
{
    if (f->split_cap >= len + SPLIT_SLACK)
        return 0;
    uint8_t *d = realloc(f->defs_buf, len + SPLIT_SLACK);
    if (d)
        f->defs_buf = d;
    uint8_t *e = d ? realloc(f->events_buf, len + SPLIT_SLACK) : NULL;
    if (e)
        f->events_buf = e;
    if (!d || !e)
        return -ENOMEM;
    f->split_cap = len + SPLIT_SLACK;
    return 0;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A finished chunk under the ring (lock held): its definitions into launcher.lrt (up to
 * TRACE_SEGMENT_DEFINITIONS_MAX, then into the segment with the events), the rest into the
 * current segment, each numbered anew after the segment's start. A segment that could not be
 * begun loses the events, not the definitions. */
static int ring_write(struct launcher_file *f, uint8_t *chunk, size_t len)
{
    int rotated = ring_rotate(f, clock_ns(CLOCK_MONOTONIC)), rc;
    if (f->definition_bytes >= TRACE_SEGMENT_DEFINITIONS_MAX) {
        trace_chunk_renumber(chunk);
        return rotated < 0 ? rotated : trace_write_all(f->segment_fd, chunk, len);
    }
    if ((rc = ring_split_room(f, len)) < 0)
        return rc;
    uint64_t base_ts = le64(chunk + 16);
    struct trace_chunk_builder in = {.buf = chunk, .cap = len, .len = len, .base_ts = base_ts},
                               defs, events;
    trace_chunk_begin(&defs, f->defs_buf, f->split_cap, base_ts);
    trace_chunk_begin(&events, f->events_buf, f->split_cap, base_ts);
    if ((rc = trace_chunk_split(&in, &defs, &events)) < 0)
        return rc;
    if (!trace_chunk_empty(&defs)) {
        size_t n = trace_chunk_finish(&defs);
        if ((rc = trace_write_all(f->fd, f->defs_buf, n)) < 0)
            return rc;
        f->definition_bytes += n;
    }
    if (trace_chunk_empty(&events))
        return 0;
    return rotated < 0 ? rotated
                       : trace_write_all(f->segment_fd, f->events_buf, trace_chunk_finish(&events));
}

int launcher_file_write(struct launcher_file *f, uint8_t *chunk, size_t len)
{
    pthread_mutex_lock(&f->lock);
    int rc = f->segment_ns ? ring_write(f, chunk, len) : trace_write_all(f->fd, chunk, len);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

void launcher_file_flush(struct launcher_file *f, struct trace_chunk_builder *b, uint8_t *buffer,
                         size_t size, uint64_t base_ts)
{
    if (!trace_chunk_empty(b))
        launcher_file_write(f, buffer, trace_chunk_finish(b));
    trace_chunk_begin(b, buffer, size, base_ts);
}

void launcher_flush_chunk(int fd, struct trace_chunk_builder *b, uint8_t *buffer, size_t size,
                          uint64_t base_ts)
{
    if (!trace_chunk_empty(b))
        trace_write_all(fd, buffer, trace_chunk_finish(b)); /* a failure loses the chunk */
    trace_chunk_begin(b, buffer, size, base_ts);
}

/* ---- the session's records ----------------------------------------------------------------- */

/* launcher.lrt describes the session: a TRACE_PROCESS record flagged TRACE_FLAG_LAUNCHER
 * (cmdline = the profiled command, plus its trace_list field), and at the end a
 * TRACE_PROCESS_END with its exit_status field (src/trace/records.def). */
int launcher_write_start(struct launcher_file *f, char **command, const char *trace)
{
    size_t cmd_len = 0;
    for (char **a = command; *a; a++)
        cmd_len += strlen(*a) + 1;
    char *cmdline = malloc(cmd_len + 1);
    size_t cap = cmd_len + PATH_MAX + 256 + strlen(trace) + 256; /* + exe, host, the rest */
    uint8_t *buf = malloc(cap);
    int rc = -ENOMEM;
    if (!cmdline || !buf)
        goto out;
    size_t pos = 0;
    for (char **a = command; *a; a++) {
        memcpy(cmdline + pos, *a, strlen(*a) + 1);
        pos += strlen(*a) + 1;
    }
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, cap, now);
    uint32_t flags = TRACE_FLAG_LAUNCHER |
                     (access("/dev/nvidiactl", F_OK) == 0 ? 0 : TRACE_FLAG_NO_NVIDIA_DEVICE);
    if ((rc = trace_put_process_self(&b, now, cmdline, cmd_len ? cmd_len - 1 : 0, flags, trace)) <
        0)
        goto out;
    rc = launcher_file_write(f, buf, trace_chunk_finish(&b));
out:
    free(cmdline);
    free(buf);
    return rc;
}

/* Writes the batch of exits (lock held): 0 or write's error (the batch is lost). */
static int exits_flush_locked(struct launcher_file *f)
{
    if (trace_chunk_empty(&f->exits))
        return 0;
    int rc = f->segment_ns ? ring_write(f, f->exits_buf, trace_chunk_finish(&f->exits))
                           : trace_write_all(f->fd, f->exits_buf, trace_chunk_finish(&f->exits));
    f->exits.records = 0;
    return rc;
}

void launcher_file_add_exit(struct launcher_file *f, pid_t pid, int status)
{
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    int signaled = WIFSIGNALED(status);
    struct trace_child_exit c = {.pid = (uint64_t)pid,
                                 .ts = now,
                                 .exit_code = WIFEXITED(status) ? (uint64_t)WEXITSTATUS(status) : 0,
                                 .signal = signaled ? (uint64_t)WTERMSIG(status) : 0,
                                 .core_dumped = signaled && WCOREDUMP(status)};
    pthread_mutex_lock(&f->lock);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (trace_chunk_empty(&f->exits))
            trace_chunk_begin(&f->exits, f->exits_buf, sizeof f->exits_buf, now);
        if (trace_put_child_exit(&f->exits, &c) == 0)
            break;
        exits_flush_locked(f);
    }
    if (now - f->exits.base_ts >= EXIT_BATCH_NS)
        exits_flush_locked(f);
    pthread_mutex_unlock(&f->lock);
}

int launcher_file_flush_exits(struct launcher_file *f)
{
    pthread_mutex_lock(&f->lock);
    int rc = exits_flush_locked(f);
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* The exits not written yet, then TRACE_PROCESS_END. */
int launcher_write_end(struct launcher_file *f, int exit_status)
{
    int rc = launcher_file_flush_exits(f);
    if (rc < 0)
        return rc;
    uint8_t buf[256];
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, now);
    struct trace_process_end r = {.end = now,
                                  .dropped_total = 0, /* the launcher drops nothing */
                                  .clean = 1,
                                  .exit_status = (uint64_t)exit_status,
                                  .optional_present = 1}; /* exit_status even when 0 */
    if (trace_put_process_end(&b, &r) < 0)
        return -ENOSPC;
    return launcher_file_write(f, buf, trace_chunk_finish(&b));
}

int launcher_file_close(struct launcher_file *f)
{
    if (!f)
        return 0;
    int rc = close(f->fd) < 0 ? -errno : 0;
    if (f->segment_fd >= 0)
        close(f->segment_fd);
    pthread_mutex_destroy(&f->lock);
    free(f->defs_buf);
    free(f->events_buf);
    free(f);
    return rc;
}
