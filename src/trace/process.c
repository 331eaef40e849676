/* TRACE_PROCESS for the calling process (process.h): the fields it reads about itself; and
 * whether another process that wrote a raw file still lives. */
#include "trace/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace/records.h"

int trace_put_process_self(struct trace_chunk_builder *b, uint64_t start_ns, const char *cmdline,
                           size_t cmdline_len, uint32_t agent_flags, const char *trace_list)
{
    static char exe[PATH_MAX], host[256]; /* static: the agent's writer has a small stack */
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe);
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct trace_process r = {
        .pid = (uint64_t)getpid(),
        .ppid = (uint64_t)getppid(),
        .start = start_ns,
        .wall_ns = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec,
        .exe = trace_bytes(exe, exe_len > 0 ? (size_t)exe_len : 0),
        .cmdline = trace_bytes(cmdline, cmdline_len),
        .host = trace_cstr(host),
        .agent_flags = agent_flags,
        .lantern_version = trace_cstr(LANTERN_VERSION),
        .trace_list = trace_cstr(trace_list),
    };
    return trace_put_process(b, &r);
}

static uint64_t process_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int trace_proc_stat(long pid, char *state, long *ppid, unsigned long long *started)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t len = read(fd, stat, sizeof stat - 1);
    int error = len < 0 ? errno : ESRCH; /* an empty stat: the process is gone */
    close(fd);
    if (len <= 0)
        return -error;
    stat[len] = '\0';
    char *close_paren = strrchr(stat, ')'); /* comm may hold spaces and parentheses */
    if (!close_paren ||
        sscanf(close_paren + 1,
               " %c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               state, ppid, started) != 3)
        return -EBADMSG;
    return 0;
}

/* Its state is not Z or X, and its start (clock ticks since boot, on the boot clock) is no
 * later than the file's, moved to the boot clock (a suspend moves them apart). */
int trace_process_alive(long pid, uint64_t start_ns)
{
    char state;
    long ppid;
    unsigned long long started;
    if (trace_proc_stat(pid, &state, &ppid, &started) < 0 || state == 'Z' || state == 'X')
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        return 1;
    uint64_t boot_offset = process_clock_ns(CLOCK_BOOTTIME) - process_clock_ns(CLOCK_MONOTONIC);
    uint64_t started_ns = (uint64_t)(started * (1000000000.0 / (double)hz));
    /* one tick of slack: a start time is rounded down to a tick */
    return started_ns <= start_ns + boot_offset + 1000000000ull / (uint64_t)hz;
}
