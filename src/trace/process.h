/* The one TRACE_PROCESS encoder, used by the agent (each traced process's file) and by the
 * launcher (launcher.lrt): it fills in what the process can learn about itself (pid, parent,
 * executable, host, wall clock, Lantern's version) around what its caller knows. */
#ifndef LANTERN_TRACE_PROCESS_H
#define LANTERN_TRACE_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"

/* Appends TRACE_PROCESS for the calling process: start_ns is its ts start (CLOCK_MONOTONIC),
 * cmdline its arguments separated by NUL (no trailing NUL), agent_flags TRACE_FLAG_*,
 * trace_list the launcher's -t list ("" from the agent: then the field is left out).
 * 0, or -ENOSPC if the record did not fit the chunk. */
int trace_put_process_self(struct trace_chunk_builder *b, uint64_t start_ns, const char *cmdline,
                           size_t cmdline_len, uint32_t agent_flags, const char *trace_list);

/* /proc/<pid>/stat's state, parent and start (clock ticks since boot); 0, or a negative errno
 * when the process is gone (-ENOENT, -ESRCH) or its stat cannot be read. */
int trace_proc_stat(long pid, char *state, long *ppid, unsigned long long *started);

/* Whether pid is the live process that created a file at start_ns (CLOCK_MONOTONIC): it
 * exists, is not a zombie, and started no later than the file (a later start is a reused
 * pid). */
int trace_process_alive(long pid, uint64_t start_ns);

#endif
