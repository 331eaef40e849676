/* Who launched a kernel: the Python call stack of the calling thread, read from the running
 * interpreter's memory (CPython 3.10-3.13, found with dlsym, so the agent never links Python;
 * no GIL needed), with library frames folded; or, in a process that is not Python, the
 * caller's return addresses named by dladdr. Pure functions of the calling thread; the
 * agent's glue is pytrace.c. */
#ifndef LANTERN_AGENT_PYSTACK_H
#define LANTERN_AGENT_PYSTACK_H

#include <stddef.h>

/* User frames kept, innermost first; frames walked at most (deeper ones are not looked at). */
#define PYSTACK_USER_FRAMES 3
#define PYSTACK_MAX_WALK 32
/* Native frames kept after the CUDA and agent frames are skipped. */
#define PYSTACK_NATIVE_FRAMES 4

/* Frames are joined by this, innermost first; no spaces, so `lantern kernels` stays
 * columnated. */
#define PYSTACK_SEPARATOR "<-"

/* 1 when a frame of this file is library code, folded out of the stack: paths containing
 * /site-packages/, /dist-packages/, /lib/python3, /torch/, or CPython's "<frozen ...>". */
int pystack_is_library_file(const char *filename);

/* 1 when the CUDA API function called `name` launches GPU work whose caller is wanted:
 * cudaLaunch*, cuLaunch*, cudaGraphLaunch*, cuGraphLaunch*, except the host-function ones. */
int pystack_is_launch_api(const char *name);

/* The calling thread's Python stack as "file:line:function<-file:line:function...": the
 * innermost PYSTACK_USER_FRAMES frames that are not library code (if every frame is, the
 * innermost one). Works with or without the GIL: it reads the thread's own frames (stable
 * while the thread is in C code) at the offsets of pystack_layout.h and calls nothing that
 * allocates or runs Python. Returns the length written (NUL-terminated, truncated to fit),
 * or 0 when there is no Python stack to read: no interpreter, a version whose layout is not
 * known, or a thread running no Python code. */
size_t pystack_python(char *out, size_t out_len);

/* 1 when the process runs an initialised CPython (of any version): its launches are
 * described by their Python stack or not at all, never by the costly native walk. */
int pystack_in_python(void);

/* The running interpreter's offset table (pystack_layout.h), or NULL where there is no
 * initialised CPython or its version's layout is not known; *minor is set to 3.minor, or -1
 * where there is no interpreter (the CPU samples' Python sampler, cpu_python.c). */
struct pystack_layout;
const struct pystack_layout *pystack_running_layout(int *minor);

/* The native callers: backtrace() from here, skipping `skip` frames and then every frame in
 * libcuda, libcupti, libcudart and the agent, the next PYSTACK_NATIVE_FRAMES as
 * "symbol+0xoff(object)" or, without a dynamic symbol, "object+0xoff" (an offset for
 * addr2line -e object). Returns the length written, or 0. */
size_t pystack_native(char *out, size_t out_len, int skip);

#endif
