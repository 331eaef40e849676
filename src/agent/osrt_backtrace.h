/* Who made a long OS runtime call (--osrt-backtrace-threshold, --osrt-backtrace-depth): the
 * calling thread's Python stack and its native return addresses, as one text that the thread
 * interns like any name (osrt.c puts it in an OSRT_BACKTRACE event; the importer names the
 * addresses). Runs inside a wrapper, possibly inside a signal handler: no lock, no allocation,
 * every read of the stack through process_vm_readv. docs/osrt.md, "Backtraces". */
#ifndef LANTERN_AGENT_OSRT_BACKTRACE_H
#define LANTERN_AGENT_OSRT_BACKTRACE_H

#include <stddef.h>
#include <stdint.h>

/* nsys's defaults: calls of 80 us and more, 24 frames. */
#define OSRT_BACKTRACE_DEFAULT_NS 80000u
#define OSRT_BACKTRACE_DEFAULT_DEPTH 24u
#define OSRT_BACKTRACE_MAX_DEPTH 64u
/* The text's room: the Python frames and up to OSRT_BACKTRACE_MAX_DEPTH native ones (an
 * object's path is written once per run of frames in it); longer texts are cut at a frame. */
#define OSRT_BACKTRACE_TEXT 2048u

/* The settings, read once from the environment at the source's start (not on the hot path):
 * ns the threshold, depth the native frames (0: no backtraces). Finds the agent's, libc's and
 * the interpreter's code by address and the executable's path, and reads the Python stack
 * once, so that no wrapper ever runs a dynamic-loader lookup. */
void osrt_backtrace_init(uint64_t *ns, unsigned *depth);

/* The calling thread's backtrace as text (docs/trace-format.md, TRACE_OSRT_BACKTRACE): the
 * Python frames, then a line per native frame: caller (the wrapper's return address), then the
 * frame-pointer chain from the register as the wrapper left it, the agent's and libc's frames
 * left out. The wrappers (osrt.c) never use that register for anything else (-ffixed-rbp where
 * the compiler knows it, else a frame of their own), so without a frame of their own the chain
 * goes on from the caller's frame. Returns its length (0: nothing to say, or the thread runs
 * on a signal stack). */
size_t osrt_backtrace_capture(char *out, size_t out_len, unsigned depth, const void *caller);

#endif
