/* The launcher's own raw file, launcher.lrt, in the session folder: it describes the session
 * (the profiled command, the -t list, the host) and, at the end, how each process the
 * launcher reaped ended and the command's exit status.
 * The launcher's samplers append their records to it between the two (nvml_sampler.c). */
#include "launcher/launcher_internal.h"
#include "launcher/samplers.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/process.h"
#include "trace/records.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Writes len bytes of buf: 0, or write's -errno (-EIO for a short write). */
static int write_all(int fd, const void *buf, size_t len)
{
    ssize_t n = write(fd, buf, len);
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* launcher.lrt describes the session: a TRACE_PROCESS record flagged TRACE_FLAG_LAUNCHER
 * (cmdline = the profiled command, plus its trace_list field), and at the end a
 * TRACE_PROCESS_END with its exit_status field (src/trace/records.def). */
int launcher_write_start(int fd, char **command, const char *trace)
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
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    size_t len = trace_chunk_finish(&b);
    if ((rc = write_all(fd, header, sizeof header)) == 0)
        rc = write_all(fd, buf, len);
out:
    free(cmdline);
    free(buf);
    return rc;
}

/* A reaped process's TRACE_CHILD_EXIT record. */
static struct trace_child_exit child_exit_record(const struct launcher_exit *e)
{
    int signaled = WIFSIGNALED(e->status);
    return (struct trace_child_exit){
        .pid = (uint64_t)e->pid,
        .ts = e->ts,
        .exit_code = WIFEXITED(e->status) ? (uint64_t)WEXITSTATUS(e->status) : 0,
        .signal = signaled ? (uint64_t)WTERMSIG(e->status) : 0,
        .core_dumped = signaled && WCOREDUMP(e->status)};
}

/* Writes the chunk being built (write_all's error) and begins the next at base_ts. */
static int end_chunk(int fd, struct trace_chunk_builder *b, uint8_t *buf, size_t size,
                     uint64_t base_ts)
{
    size_t len = trace_chunk_finish(b);
    int rc = write_all(fd, buf, len);
    if (rc < 0)
        return rc;
    trace_chunk_begin(b, buf, size, base_ts);
    return 0;
}

/* The TRACE_CHILD_EXIT records, as many chunks as they need, then TRACE_PROCESS_END. */
int launcher_write_end(int fd, int exit_status, const struct launcher_exit *exits, size_t count)
{
    uint8_t buf[4096];
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, count ? exits[0].ts : now);
    for (size_t i = 0; i < count; i++) {
        struct trace_child_exit c = child_exit_record(&exits[i]);
        if (trace_put_child_exit(&b, &c) < 0) {
            int rc = end_chunk(fd, &b, buf, sizeof buf, exits[i].ts);
            if (rc < 0)
                return rc;
            if (trace_put_child_exit(&b, &c) < 0)
                return -ENOSPC;
        }
    }
    struct trace_process_end r = {.end = now,
                                  .dropped_total = 0, /* the launcher drops nothing */
                                  .clean = 1,
                                  .exit_status = (uint64_t)exit_status,
                                  .optional_present = 1}; /* exit_status even when 0 */
    if (trace_put_process_end(&b, &r) < 0) {
        int rc = end_chunk(fd, &b, buf, sizeof buf, now);
        if (rc < 0)
            return rc;
        if (trace_put_process_end(&b, &r) < 0)
            return -ENOSPC;
    }
    return write_all(fd, buf, trace_chunk_finish(&b));
}

void launcher_flush_chunk(int fd, struct trace_chunk_builder *b, uint8_t *buffer, size_t size,
                          uint64_t base_ts)
{
    if (!trace_chunk_empty(b)) {
        size_t len = trace_chunk_finish(b);
        const uint8_t *p = buffer;
        while (len) {
            ssize_t n = write(fd, p, len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            p += n;
            len -= (size_t)n;
        }
    }
    trace_chunk_begin(b, buffer, size, base_ts);
}
