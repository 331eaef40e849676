/* A thread's frame-pointer chain, read without faulting: every word through process_vm_readv
 * on the process's own pid, which fails where a plain load would fault (a frame pointer that
 * code built without them left holding anything). Used by -t osrt's backtraces
 * (osrt_backtrace.c) and by the CPU-time timers' signal handler (cpu_timers.c): no lock, no
 * allocation, async-signal-safe. */
#ifndef LANTERN_AGENT_FRAME_CHAIN_H
#define LANTERN_AGENT_FRAME_CHAIN_H

#include <stdint.h>
#include <sys/types.h>

/* Called with each frame's return address, innermost first; returns 0 to stop the walk. */
typedef int (*frame_chain_visit)(void *context, uintptr_t return_address);

/* Walks the chain from frame pointer fp (x86-64 and AArch64 layout: [fp] the caller's frame
 * pointer, [fp + 8] the return address) for at most max_frames frames, in process pid (the
 * caller's own, cached: getpid() is a system call). Stops at an unreadable or misaligned
 * frame, at a caller's frame that is not above this one, or one more than 1 MiB above it.
 * The stack is read into scratch (at least 16 bytes; each read stays in one 4 KiB page, so
 * more than 4096 is not used): the larger, the fewer reads. Returns the frames visited. */
unsigned frame_chain_walk(pid_t pid, uintptr_t fp, unsigned max_frames, frame_chain_visit visit,
                          void *context, unsigned char *scratch, size_t scratch_len);

#endif
