/* TRACE_PROCESS for the calling process (process.h): the fields it reads about itself. */
#include "trace/process.h"

#include <limits.h>
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
