/* The backtrace of a long OS runtime call (osrt_backtrace.h): the Python frames from the
 * interpreter's memory (pystack.c, as --python-backtrace reads them) and the native callers
 * by their frame pointers. Not glibc's backtrace(): its unwinder takes the dynamic loader's
 * lock and may allocate, and a wrapper can run inside the program's signal handler. Every
 * word of the stack is read with process_vm_readv (frame_chain.c, shared with the CPU-time
 * timers), which fails where a plain load would fault, and addresses are
 * placed with _dl_find_object (glibc 2.35, lock-free and async-signal-safe); their names are
 * the importer's (import_symbols.c), so nothing here searches a symbol table. */
#include "agent/osrt_backtrace.h"
#include "agent/frame_chain.h"
#include "agent/pystack.h"
#include "trace/environment.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Return addresses below this are no code's (the first page is never mapped). */
#define BT_PAGE 4096u
/* The stack is read this much at a time (frame_chain.c), on the wrapper's stack. */
#define BT_WINDOW 512u

/* glibc's struct dl_find_object (dlfcn.h, 2.35), mirrored so that the agent builds and loads
 * on an older glibc, where _dl_find_object is not found and only Python frames are written. */
struct bt_object {
    unsigned long long flags;
    void *map_start, *map_end;
    struct link_map *link_map;
    void *eh_frame;
    unsigned long long reserved[15];
};

struct bt_range {
    uintptr_t start, end; /* [start, end): an object's mapping; 0, 0: unknown */
};

static struct {
    int (*find_object)(void *address, struct bt_object *out); /* NULL: no native frames */
    struct bt_range agent, libc, sanitizer, interpreter;
    char exe[512]; /* the main program's path (its link_map has an empty name) */
} bt;

static struct bt_range bt_range_of(const void *address)
{
    struct bt_object o;
    if (!address || !bt.find_object || bt.find_object((void *)address, &o) != 0)
        return (struct bt_range){0, 0};
    return (struct bt_range){(uintptr_t)o.map_start, (uintptr_t)o.map_end};
}

static int bt_in(struct bt_range r, uintptr_t address)
{
    return address >= r.start && address < r.end;
}

static uint64_t bt_env(enum trace_env id, uint64_t fallback)
{
    const char *value = getenv(trace_env_name(id));
    char *end = NULL;
    unsigned long long n = value && *value ? strtoull(value, &end, 10) : 0;
    return end && !*end ? n : fallback;
}

void osrt_backtrace_init(uint64_t *ns, unsigned *depth)
{
    *ns = bt_env(TRACE_ENV_OSRT_BACKTRACE_NS, OSRT_BACKTRACE_DEFAULT_NS);
    uint64_t frames = bt_env(TRACE_ENV_OSRT_BACKTRACE_DEPTH, OSRT_BACKTRACE_DEFAULT_DEPTH);
    *depth = frames < OSRT_BACKTRACE_MAX_DEPTH ? (unsigned)frames : OSRT_BACKTRACE_MAX_DEPTH;
    if (*depth == 0)
        return;
    *(void **)&bt.find_object = dlsym(RTLD_DEFAULT, "_dl_find_object");
    bt.agent = bt_range_of((const void *)osrt_backtrace_init);
    bt.libc = bt_range_of((const void *)getpid);
    /* a sanitizer's runtime, preloaded before the agent, intercepts the call first */
    bt.sanitizer = bt_range_of(dlsym(RTLD_DEFAULT, "__sanitizer_print_stack_trace"));
    bt.interpreter = bt_range_of(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
    ssize_t n = readlink("/proc/self/exe", bt.exe, sizeof bt.exe - 1);
    bt.exe[n > 0 ? n : 0] = 0;
    char warm[64]; /* the Python reader resolves its symbols at its first call: now */
    pystack_python(warm, sizeof warm);
}

static size_t bt_put(char *out, size_t at, size_t cap, const char *s, size_t n)
{
    if (at + n >= cap)
        return cap; /* no room: the caller stops */
    memcpy(out + at, s, n);
    return at + n;
}

/* "\n[path]+0xADDRESS" at out + used (path left out when it is the frame before's); the
 * length after it, or used unchanged when it does not fit. */
static size_t bt_put_frame(char *out, size_t used, size_t cap, const char *path,
                           uint64_t address)
{
    char hex[2 + 16];
    size_t digits = 0;
    do
        hex[sizeof hex - 1 - digits++] = "0123456789abcdef"[address & 15];
    while ((address >>= 4) && digits < 16);
    size_t at = bt_put(out, used, cap, "\n", 1);
    at = bt_put(out, at, cap, path, strlen(path));
    at = bt_put(out, at, cap, "+0x", 3);
    at = bt_put(out, at, cap, hex + sizeof hex - digits, digits);
    if (at >= cap)
        return used;
    out[at] = 0;
    return at;
}

/* Appends the native frame at return address ret unless it is one to leave out: the agent's,
 * libc's and a sanitizer runtime's before the first kept one, the interpreter's own in a thread with a Python stack
 * (*stop then). Returns 1 when it was written. */
static int bt_frame(char *out, size_t *used, size_t cap, uintptr_t ret, int python,
                    const char **last_path, int *stop)
{
    struct bt_object o;
    if (ret < BT_PAGE || bt.find_object((void *)(ret - 1), &o) != 0 || !o.link_map) {
        *stop = 1; /* not code of a loaded object: the chain has left the frames */
        return 0;
    }
    if (!*last_path && (bt_in(bt.agent, ret) || bt_in(bt.libc, ret) || bt_in(bt.sanitizer, ret)))
        return 0; /* the agent's frames, then libc's wrapper (a libc function calling the symbol)
                     or a sanitizer's interceptor */
    if (python && bt_in(bt.interpreter, ret)) {
        *stop = 1;
        return 0;
    }
    const char *path = o.link_map->l_name && *o.link_map->l_name ? o.link_map->l_name : bt.exe;
    size_t after = bt_put_frame(out, *used, cap, path == *last_path ? "" : path,
                                (uint64_t)(ret - o.link_map->l_addr));
    if (after == *used) {
        *stop = 1;
        return 0;
    }
    *used = after;
    *last_path = path;
    return 1;
}

/* The walk's state: the text so far and the frames kept. */
struct bt_walk {
    char *out;
    size_t used, cap;
    unsigned kept, depth;
    int python, stop, caller_pending;
    uintptr_t caller;
    const char *last_path;
};

static int bt_visit(void *context, uintptr_t ret)
{
    struct bt_walk *b = context;
    if (bt_in(bt.agent, ret)) {
        /* the agent's own frames */
    } else if (b->caller_pending && ret == b->caller) {
        b->caller_pending = 0;
    } else {
        b->caller_pending = 0;
        b->kept += (unsigned)bt_frame(b->out, &b->used, b->cap, ret, b->python, &b->last_path,
                                      &b->stop);
    }
    return !b->stop && b->kept < b->depth;
}

/* The native frames after out's Python text: the wrapper's caller, then the frame-pointer
 * chain from this function's frame outwards (where the wrappers keep a frame, its first
 * program frame is that caller again: written once). */
static __attribute__((noinline)) size_t bt_native(char *out, size_t used, size_t cap,
                                                  unsigned depth, int python, uintptr_t caller)
{
    struct bt_walk b = {.out = out, .used = used, .cap = cap, .depth = depth, .python = python,
                        .caller_pending = 1, .caller = caller};
    b.kept = (unsigned)bt_frame(out, &b.used, cap, caller, python, &b.last_path, &b.stop);
    unsigned char window[BT_WINDOW];
    if (!b.stop && b.kept < depth)
        frame_chain_walk(getpid(), (uintptr_t)__builtin_frame_address(0),
                         2 * OSRT_BACKTRACE_MAX_DEPTH, bt_visit, &b, window, sizeof window);
    return b.used;
}

size_t osrt_backtrace_capture(char *out, size_t out_len, unsigned depth, const void *caller)
{
    stack_t alt;
    if (out_len < 2 || (sigaltstack(NULL, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)))
        return 0; /* a handler on a signal stack: maybe a small one, and no caller's frames */
    out[0] = 0;
    size_t used = pystack_python(out, out_len);
    if (bt.find_object)
        used = bt_native(out, used, out_len, depth, used > 0, (uintptr_t)caller);
    return used;
}
