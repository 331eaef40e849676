/* Python stacks for the CPU samples. The kernel samples native stacks (cpu_sampling.c), but a
 * Python function is data to it: this file's sampler thread walks, every tick (the sampling
 * period, at least 1 ms), the interpreter's list of thread states and, for each thread whose
 * CPU clock advanced since its last look, its chain of Python frames, the way py-spy does it
 * from outside: every read goes through process_vm_readv on our own pid, so a pointer freed or
 * changed by the running thread gives EFAULT or a value that fails a check, never a crash; every
 * walk is bounded. A thread that did not run and does not hold the GIL has its system call
 * read (/proc/self/task/TID/syscall): a futex on the GIL's own memory is a GIL wait. Snapshots
 * go through a single-producer queue to the writer's drain, which writes TRACE_PY_* records;
 * the importer puts the Python frames where the interpreter's frames are (import_cpu.c). The
 * sampler takes no lock and allocates nothing; frames are interned in static tables. */
#include "agent/cpu_python.h"

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/pystack.h"
#include "agent/pystack_layout.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/records.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PY_MIN_TICK_NS 1000000u /* at most 1000 looks per second: a look costs ~2 us a frame */
#define PY_MAX_THREADS 1024u    /* thread states walked per tick */
#define PY_MAX_DEPTH 128u       /* frames kept per stack, innermost first */
#define PY_QUEUE_SLOTS 512u     /* snapshots between two drains (10 ms) */
#define PY_FRAME_SLOTS 16384u   /* distinct functions per process */
#define PY_FRAME_KEYS 32768u    /* their hash table (half full at most) */
#define PY_TEXT_BYTES (1u << 20)
#define PY_FILE_MAX 255u
#define PY_NAME_MAX 127u
#define PY_THREAD_SLOTS 2048u /* threads' last CPU time and GIL look, by tid */
#define PY_GIL_CHECKS 8u      /* system calls read per tick at most */
/* A thread off-CPU is asked whether it waits for the GIL this often: each answer stands for
 * the time since the last (reading /proc/self/task/TID/syscall and walking the stack cost
 * ~15 us on the development VM; every tick, they cost two waiting threads 4 % of a CPU). */
#define PY_GIL_LOOK_NS 10000000u
#define PY_STACK_SLOTS (1u << 14)

/* py.started */
enum { PY_NOT_STARTED, PY_STARTED, PY_SWITCHED_OFF /* LANTERN_CPU_PYTHON=0 */ };

struct py_snapshot {
    uint32_t tid, depth, state;
    uint64_t ts, span_ns;
    uint32_t frames[PY_MAX_DEPTH]; /* frame id << 1 | outermost of its evaluation call */
};

struct py_function {
    uint32_t file_at, name_at, first_line; /* texts in py_text */
};

struct py_key_slot {
    uint64_t key;
    uint32_t id, generation;
};

struct py_thread_slot {
    uint32_t tid, generation;
    uint64_t cpu_ns, last_ns; /* its CPU clock at the last look, and when that was */
    uint64_t checked_ns;      /* when it was last asked about the GIL */
    uint64_t pending_ns;      /* off-CPU, another thread holding the GIL, since then */
};

struct py_stack_slot {
    uint64_t hash;
    uint32_t id, generation;
};

static struct {
    const struct pystack_layout *l;
    const char *code_type, *str_type, *runtime, *interp;
    pid_t pid;
    uint64_t tick_ns;
    int started, stop;
    int switched_off; /* cpu_python_switch */
    uint32_t sampler_tid;
    unsigned status; /* TRACE_CPU_SAMPLING_*: 0 none to write */
    char reason[160], interpreter[512];
    /* the sampler's (written by it, read by the writer at the end) */
    uint64_t snapshots, lost, unreadable, frames_dropped, gil_checks, cpu_ns;
    uint32_t functions; /* published: functions[0, functions) are complete */
    uint32_t text_used, key_generation, thread_generation, gil_rotation, gil_candidates;
    size_t glibc_tid_offset; /* 3.10: the tid inside glibc's struct pthread */
    /* the queue: the sampler writes head, the writer tail */
    uint64_t head, tail;
    /* the writer's */
    uint32_t written_functions, stack_generation, next_stack_id, stacks_in_generation;
    uint64_t written_snapshots;
} py;

static struct py_snapshot py_queue[PY_QUEUE_SLOTS];
static struct py_function py_functions[PY_FRAME_SLOTS];
static uint8_t py_function_written[PY_FRAME_SLOTS];
static struct py_key_slot py_keys[PY_FRAME_KEYS];
static char py_text[PY_TEXT_BYTES];
static struct py_thread_slot py_threads[PY_THREAD_SLOTS];
static struct py_stack_slot py_stacks[PY_STACK_SLOTS];

/* ---- reading the interpreter's memory ---- */

/* len bytes at `remote` into `local`: 0, or -EFAULT where any of it is not mapped readable
 * (process_vm_readv's -errno where it failed whole). */
static int py_read(const void *remote, void *local, size_t len)
{
    struct iovec here = {local, len}, there = {(void *)remote, len};
    if (!remote)
        return -EFAULT;
    long n = syscall(SYS_process_vm_readv, py.pid, &here, 1UL, &there, 1UL, 0UL);
    return n == (long)len ? 0 : n < 0 ? -errno : -EFAULT;
}

static const char *py_pointer(const char *buf, short offset)
{
    const char *p;
    memcpy(&p, buf + offset, sizeof p);
    return p;
}

static int py_int(const char *buf, short offset)
{
    int v;
    memcpy(&v, buf + offset, sizeof v);
    return v;
}

/* A str's text, UTF-8, cut at max bytes, into out: 0, or -EFAULT / -EBADMSG when it is not a
 * readable compact str (the non-ASCII ones carry their UTF-8 copy only once someone asked for
 * it). */
static int py_read_string(const char *str, char *out, size_t max)
{
    const struct pystack_layout *l = py.l;
    char head[64];
    int rc = py_read(str, head, sizeof head);
    if (rc < 0)
        return rc;
    if (py_pointer(head, sizeof(ptrdiff_t)) != py.str_type)
        return -EBADMSG;
    uint32_t state;
    memcpy(&state, head + l->str_state, sizeof state);
    if (!(state & PYSTACK_STR_COMPACT))
        return -EBADMSG;
    ptrdiff_t length;
    const char *text;
    if (state & PYSTACK_STR_ASCII) {
        memcpy(&length, head + l->str_length, sizeof length);
        text = str + l->str_ascii_data;
    } else {
        memcpy(&length, head + l->str_utf8_length, sizeof length);
        text = py_pointer(head, l->str_utf8);
    }
    if (!text || length < 0)
        return -EBADMSG;
    size_t kept = (size_t)length < max ? (size_t)length : max;
    rc = py_read(text, out, kept);
    if (rc < 0)
        return rc;
    out[kept] = '\0';
    return 0;
}

static uint32_t py_put_text(const char *s)
{
    size_t len = strlen(s) + 1;
    if (py.text_used + len > PY_TEXT_BYTES)
        return UINT32_MAX;
    memcpy(py_text + py.text_used, s, len);
    py.text_used += (uint32_t)len;
    return py.text_used - (uint32_t)len;
}

/* The function id of a code object (read into `code`), made the first time: 0 when the
 * table is full or its names cannot be read. Keyed by the code object and its names'
 * addresses, so a code object freed and its memory reused names the new function. */
static uint32_t py_function_id(const char *address, const char *code)
{
    const struct pystack_layout *l = py.l;
    const char *file = py_pointer(code, l->code_filename);
    const char *name = py_pointer(code, l->code_qualname >= 0 ? l->code_qualname : l->code_name);
    int first_line = py_int(code, l->code_first_line);
    uint64_t key = (uint64_t)(uintptr_t)address;
    key = (key ^ (uint64_t)(uintptr_t)file) * 0x9E3779B97F4A7C15u;
    key =
        (key ^ (uint64_t)(uintptr_t)name ^ (uint64_t)(uint32_t)first_line) * 0xff51afd7ed558ccdULL;
    key |= 1;
    uint32_t i = (uint32_t)(key >> 40) & (PY_FRAME_KEYS - 1);
    for (;; i = (i + 1) & (PY_FRAME_KEYS - 1)) {
        struct py_key_slot *s = &py_keys[i];
        if (s->generation != py.key_generation || !s->key)
            break;
        if (s->key == key)
            return s->id;
    }
    uint32_t id = py.functions + 1;
    char file_text[PY_FILE_MAX + 1], name_text[PY_NAME_MAX + 1];
    if (id >= PY_FRAME_SLOTS) {
        py.frames_dropped++;
        return 0;
    }
    if (py_read_string(file, file_text, PY_FILE_MAX) < 0 ||
        py_read_string(name, name_text, PY_NAME_MAX) < 0)
        return 0;
    uint32_t file_at = py_put_text(file_text), name_at = py_put_text(name_text);
    if (file_at == UINT32_MAX || name_at == UINT32_MAX) {
        py.frames_dropped++;
        return 0;
    }
    py_functions[id] = (struct py_function){file_at, name_at, (uint32_t)first_line};
    py_keys[i] = (struct py_key_slot){key, id, py.key_generation};
    __atomic_store_n(&py.functions, id, __ATOMIC_RELEASE); /* the writer may now name it */
    return id;
}

/* Walks one thread's frames from `frame` (innermost) into s: 0, or -1 when a read failed or
 * met something that is not a frame of code (the thread changed its chain as it was read). */
static int py_walk(const char *frame, struct py_snapshot *s)
{
    const struct pystack_layout *l = py.l;
    char fb[112], code[192]; /* a frame's and a code object's fields that are read */
    /* no more than the frame holds: a frame may end its mapping (3.11+'s data stack) */
    size_t frame_bytes = l->frame_owner >= 0 ? 72 : 104;
    size_t code_bytes =
        (size_t)(l->code_first_traceable >= 0 ? l->code_first_traceable + 4 : l->code_name + 8);
    s->depth = 0;
    for (unsigned seen = 0; frame && seen < 4 * PY_MAX_DEPTH && s->depth < PY_MAX_DEPTH; seen++) {
        int rc = py_read(frame, fb, frame_bytes);
        if (rc < 0)
            return rc;
        const char *back = py_pointer(fb, l->frame_back);
        const char *code_at = py_pointer(fb, l->frame_code);
        if (l->frame_owner >= 0 && fb[l->frame_owner] == PYSTACK_OWNED_BY_CSTACK) {
            if (s->depth) /* 3.12+: the shim that starts each evaluation call */
                s->frames[s->depth - 1] |= 1;
            frame = back;
            continue;
        }
        rc = py_read(code_at, code, code_bytes);
        if (rc < 0)
            return rc;
        if (py_pointer(code, sizeof(ptrdiff_t)) != py.code_type)
            return -EBADMSG;
        frame = back;
        if (l->frame_owner >= 0 && fb[l->frame_owner] != PYSTACK_OWNED_BY_GENERATOR) {
            /* not yet past its first traceable instruction: Python's own walk skips it */
            const char *instr = py_pointer(fb, l->frame_instr);
            if (instr < code_at + l->code_first_instr +
                            (ptrdiff_t)py_int(code, l->code_first_traceable) * PYSTACK_CODE_UNIT)
                continue;
        }
        uint32_t id = py_function_id(code_at, code);
        uint32_t entry = l->frame_owner < 0       ? 1 /* 3.10: one call per frame */
                         : l->frame_is_entry >= 0 ? (fb[l->frame_is_entry] != 0)
                                                  : 0;
        s->frames[s->depth++] = id << 1 | entry;
    }
    if (s->depth)
        s->frames[s->depth - 1] |= 1; /* the outermost frame starts the outermost call */
    return 0;
}

/* ---- the sampler thread ---- */

static uint64_t py_cpu_clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Another thread's CPU clock, by its tid (the kernel's CPUCLOCK_PERTHREAD encoding,
 * include/linux/posix-timers.h: ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED). */
static uint64_t py_thread_cpu_ns(uint32_t tid)
{
    return py_cpu_clock_ns((clockid_t)(~tid << 3 | 4u | 2u)); /* tid: uint32_t, as the ABI's */
}

static struct py_thread_slot *py_thread_slot(uint32_t tid)
{
    for (uint32_t i = tid & (PY_THREAD_SLOTS - 1), n = 0; n < PY_THREAD_SLOTS;
         i = (i + 1) & (PY_THREAD_SLOTS - 1), n++) {
        struct py_thread_slot *t = &py_threads[i];
        if (t->generation == py.thread_generation && t->tid == tid)
            return t;
        if (t->generation != py.thread_generation || !t->tid) {
            *t = (struct py_thread_slot){.tid = tid, .generation = py.thread_generation};
            return t;
        }
    }
    py.thread_generation++; /* full of ended threads: forget them all */
    return py_thread_slot(tid);
}

/* 1 when the thread is blocked in a futex on the GIL's memory: its /proc syscall file says
 * "NR uaddr ..." while it is in a system call. */
static int py_waits_for_gil(uint32_t tid, const char *gil)
{
    char path[64], text[128];
    snprintf(path, sizeof path, "/proc/self/task/%u/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    long nr;
    unsigned long long uaddr;
    py.gil_checks++;
    return sscanf(text, "%ld 0x%llx", &nr, &uaddr) == 2 && nr == SYS_futex &&
           uaddr >= (uintptr_t)gil && uaddr < (uintptr_t)gil + (size_t)py.l->gil_size;
}

/* 3.10 keeps the pthread_t only: glibc's struct pthread holds the tid at an offset found once
 * in the sampler's own (the first word equal to its tid). */
static uint32_t py_tid_of_pthread(const char *pthread)
{
    pid_t tid;
    if (!py.glibc_tid_offset || py_read(pthread + py.glibc_tid_offset, &tid, sizeof tid) < 0)
        return 0;
    return (uint32_t)tid;
}

static void py_push(const struct py_snapshot *s)
{
    uint64_t head = py.head;
    if (head - __atomic_load_n(&py.tail, __ATOMIC_ACQUIRE) >= PY_QUEUE_SLOTS) {
        py.lost++;
        return;
    }
    py_queue[head % PY_QUEUE_SLOTS] = *s;
    __atomic_store_n(&py.head, head + 1, __ATOMIC_RELEASE);
    py.snapshots++;
}

/* One look at every thread of the main interpreter. */
static void py_tick(void)
{
    const struct pystack_layout *l = py.l;
    char gil_state[24], interp_head[8], ts[192];
    const char *gil = l->runtime_gil >= 0 ? py.runtime + l->runtime_gil : NULL;
    if (l->interp_gil >= 0 && py_read(py.interp + l->interp_gil, &gil, sizeof gil) < 0)
        return;
    int gil_locked = 0;
    const char *holder = NULL;
    if (py_read(gil, gil_state, sizeof gil_state) == 0) {
        gil_locked = py_int(gil_state, l->gil_locked) != 0;
        holder = py_pointer(gil_state, l->gil_last_holder);
    }
    if (py_read(py.interp + l->interp_threads, interp_head, sizeof interp_head) < 0)
        return;
    const char *tstate = py_pointer(interp_head, 0);
    uint32_t candidates = 0, checked = 0;
    static struct py_snapshot s;
    for (unsigned n = 0; tstate && n < PY_MAX_THREADS; n++) {
        if (py_read(tstate, ts, sizeof ts) < 0) {
            py.unreadable++;
            break;
        }
        const char *next = py_pointer(ts, l->thread_next);
        unsigned long native_id = 0;
        if (l->thread_native_id >= 0)
            memcpy(&native_id, ts + l->thread_native_id, sizeof native_id);
        uint32_t tid = l->thread_native_id >= 0
                           ? (uint32_t)native_id
                           : py_tid_of_pthread(py_pointer(ts, l->thread_pthread));
        uint64_t now = clock_mono_ns(), cpu_ns = tid ? py_thread_cpu_ns(tid) : 0;
        if (!cpu_ns) { /* ended, or not yet started */
            tstate = next;
            continue;
        }
        struct py_thread_slot *t = py_thread_slot(tid);
        /* it ran (a thread that waits wakes for microseconds: take_gil's 5 ms timeout) */
        int ran = t->cpu_ns && cpu_ns - t->cpu_ns >= py.tick_ns / 20;
        int first_look = !t->cpu_ns;
        uint64_t elapsed = first_look ? 0 : now - t->last_ns;
        t->cpu_ns = cpu_ns;
        t->last_ns = now;
        int state = -1; /* -1: nothing to record */
        if (ran) {
            state = 0;
        } else if (!first_look && gil_locked && holder != tstate) {
            /* off-CPU while another thread holds the GIL: asked what it waits in every
             * PY_GIL_LOOK_NS, the answer standing for the off-CPU time since the last one;
             * at most PY_GIL_CHECKS threads a tick, in turn */
            t->pending_ns += elapsed;
            uint32_t turn = py.gil_candidates > PY_GIL_CHECKS
                                ? (candidates + py.gil_rotation) % py.gil_candidates
                                : 0;
            candidates++;
            if (now - t->checked_ns >= PY_GIL_LOOK_NS && turn < PY_GIL_CHECKS &&
                checked < PY_GIL_CHECKS) {
                checked++;
                if (py_waits_for_gil(tid, gil))
                    state = 1;
                s.span_ns = t->pending_ns;
                t->pending_ns = 0;
                t->checked_ns = now;
            }
        }
        if (state >= 0) {
            const char *frame = py_pointer(ts, l->thread_frame);
            if (frame && l->cframe_frame >= 0 &&
                py_read(frame + l->cframe_frame, &frame, sizeof frame) < 0)
                frame = NULL;
            s.tid = tid;
            s.ts = now;
            s.state = (uint32_t)state;
            if (state == 0)
                s.span_ns = 0;
            if (py_walk(frame, &s) < 0)
                py.unreadable++;
            else
                py_push(&s);
        }
        tstate = next;
    }
    py.gil_candidates = candidates;
    py.gil_rotation += PY_GIL_CHECKS;
}

static void py_find_glibc_tid_offset(void)
{
    const char *self = (const char *)pthread_self();
    pid_t tid = (pid_t)ring_gettid();
    for (size_t off = 0; off < 2048; off += sizeof(pid_t)) {
        pid_t v;
        if (py_read(self + off, &v, sizeof v) == 0 && v == tid) {
            py.glibc_tid_offset = off;
            return;
        }
    }
}

static void *py_sampler_main(void *arg)
{
    (void)arg;
    agent_busy = 1; /* the agent's own thread: -t osrt never times its calls */
    __atomic_store_n(&py.sampler_tid, ring_gettid(), __ATOMIC_RELEASE);
    if (py.l->thread_native_id < 0)
        py_find_glibc_tid_offset();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!__atomic_load_n(&py.stop, __ATOMIC_ACQUIRE)) {
        uint64_t at = (uint64_t)next.tv_nsec + py.tick_ns;
        next.tv_sec += (time_t)(at / 1000000000u);
        next.tv_nsec = (long)(at % 1000000000u);
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            continue;
        /* lantern stop (docs/long-runs.md): no look while paused */
        if (!agent_paused() && !__atomic_load_n(&py.switched_off, __ATOMIC_RELAXED))
            py_tick();
        uint64_t behind = clock_mono_ns();
        if (behind > (uint64_t)next.tv_sec * 1000000000u + (uint64_t)next.tv_nsec + py.tick_ns)
            clock_gettime(CLOCK_MONOTONIC, &next); /* fell behind: no burst to catch up */
        __atomic_store_n(&py.cpu_ns, py_cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELAXED);
    }
    return NULL;
}

/* The file that holds the interpreter's code, as /proc/self/maps names it (the importer tells
 * the interpreter's frames by it): the executable's real path where Python is linked into it
 * (dladdr names it as it was started, e.g. a venv's python3 link to /usr/bin/python3.12), else
 * the shared library's resolved path. */
static void interpreter_file(void *symbol, char *out, size_t size)
{
    Dl_info where;
    struct link_map *map = NULL;
    char path[4096];
    out[0] = '\0';
    if (!symbol || !dladdr1(symbol, &where, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return;
    ssize_t n = -1;
    if (!map->l_name[0]) /* the main program */
        n = readlink("/proc/self/exe", path, sizeof path - 1);
    else if (realpath(map->l_name, path))
        n = (ssize_t)strlen(path);
    if (n > 0) {
        path[n] = '\0';
        snprintf(out, size, "%s", path);
    } else if (where.dli_fname) {
        snprintf(out, size, "%s", where.dli_fname);
    }
}

/* On the writer thread, the first drain where the process runs CPython: finds what the
 * sampler reads (dlsym), checks that process_vm_readv works, starts the thread. */
static void py_start(uint64_t tick_ns)
{
    int minor;
    const struct pystack_layout *l = pystack_running_layout(&minor);
    if (minor < 0)
        return; /* no Python in this process (yet) */
    py.started = PY_STARTED;
    const char *wanted = getenv(trace_env_name(TRACE_ENV_CPU_PYTHON)); /* 0: native stacks only */
    if (wanted && strcmp(wanted, "0") == 0) {
        py.l = NULL;
        py.started = PY_SWITCHED_OFF;
        return;
    }
    py.pid = getpid();
    const char *hz = getenv(trace_env_name(TRACE_ENV_PYTHON_SAMPLING_HZ));
    if (hz && strtoul(hz, NULL, 10) > 0) /* --python-sampling-frequency */
        tick_ns = 1000000000u / strtoul(hz, NULL, 10);
    py.tick_ns = tick_ns > PY_MIN_TICK_NS ? tick_ns : PY_MIN_TICK_NS;
    void *(*main_interp)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
    py.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    py.str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    py.runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    interpreter_file((void *)main_interp, py.interpreter, sizeof py.interpreter);
    char probe;
    py.status = TRACE_CPU_SAMPLING_ON;
    if (!l || !main_interp || !py.code_type || !py.str_type || !py.runtime) {
        py.status = TRACE_CPU_SAMPLING_UNAVAILABLE;
        snprintf(py.reason, sizeof py.reason,
                 "CPython 3.%d's structures are not known (3.10 to 3.13 are)", minor);
    } else if (py_read(py.code_type, &probe, 1) < 0) {
        py.status = errno == EPERM || errno == EACCES ? TRACE_CPU_SAMPLING_NOT_PERMITTED
                                                      : TRACE_CPU_SAMPLING_FAILED;
        snprintf(py.reason, sizeof py.reason,
                 "process_vm_readv on the process itself failed (%s: a seccomp filter?)",
                 strerror(errno));
    } else {
        py.l = l;
        py.interp = main_interp();
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t thread;
        int rc = pthread_create(&thread, NULL, py_sampler_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0) {
            pthread_detach(thread);
            return;
        }
        py.status = TRACE_CPU_SAMPLING_FAILED;
        snprintf(py.reason, sizeof py.reason, "the sampler thread could not start (%s)",
                 strerror(rc));
    }
    agent_warn("Python stacks are not sampled in this process: %s; native stacks are", py.reason);
}

/* ---- what the writer writes (lock held) ---- */

/* TRACE_CPU_SAMPLING again, with the Python fields: native sampling is on, or this would not
 * run. */
static void py_put_status(uint64_t period_ns, const char *native_reason)
{
    struct trace_cpu_sampling rec = {.status = TRACE_CPU_SAMPLING_ON,
                                     .period_ns = period_ns,
                                     .reason = trace_cstr(native_reason),
                                     .python_status = py.status,
                                     .python_tick_ns = py.tick_ns,
                                     .python_interpreter = trace_cstr(py.interpreter),
                                     .python_reason = trace_cstr(py.reason),
                                     .optional_present = 4};
    writer_reserve_locked(64 + strlen(native_reason) + strlen(py.interpreter) + strlen(py.reason));
    trace_put_cpu_sampling(writer_chunk_locked(), &rec);
    py.status = 0;
}

static void py_put_function(uint32_t id)
{
    const struct py_function *f = &py_functions[id];
    const char *file = py_text + f->file_at, *name = py_text + f->name_at;
    struct trace_py_frame rec = {.frame_id = id,
                                 .file = trace_cstr(file),
                                 .function = trace_cstr(name),
                                 .first_line = f->first_line};
    writer_reserve_locked(32 + strlen(file) + strlen(name));
    trace_put_py_frame(writer_chunk_locked(), &rec);
    py_function_written[id] = 1;
}

static uint8_t *py_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* The file's id of a snapshot's stack, written as TRACE_PY_STACK (and its functions as
 * TRACE_PY_FRAME) the first time. */
static uint32_t py_stack_id(const struct py_snapshot *s)
{
    if (!s->depth)
        return 0;
    uint64_t hash = 0x9E3779B97F4A7C15u ^ s->depth;
    for (uint32_t k = 0; k < s->depth; k++)
        hash = ((hash ^ s->frames[k]) * 0xff51afd7ed558ccdULL) ^ (hash >> 29);
    hash |= 1;
    uint32_t i = (uint32_t)(hash >> 40) & (PY_STACK_SLOTS - 1);
    for (;; i = (i + 1) & (PY_STACK_SLOTS - 1)) {
        struct py_stack_slot *slot = &py_stacks[i];
        if (slot->generation != py.stack_generation || !slot->hash)
            break;
        if (slot->hash == hash)
            return slot->id;
    }
    if (py.stacks_in_generation >= PY_STACK_SLOTS / 2) { /* full: start over */
        py.stack_generation++;
        py.stacks_in_generation = 0;
        return py_stack_id(s);
    }
    uint8_t bytes[PY_MAX_DEPTH * 5], *p = bytes;
    for (uint32_t k = 0; k < s->depth; k++) {
        uint32_t id = s->frames[k] >> 1;
        if (id && !py_function_written[id])
            py_put_function(id);
        p = py_put_varint(p, s->frames[k]);
    }
    struct trace_py_stack rec = {.stack_id = ++py.next_stack_id,
                                 .frames = trace_bytes(bytes, (size_t)(p - bytes))};
    writer_reserve_locked(32 + (size_t)(p - bytes));
    trace_put_py_stack(writer_chunk_locked(), &rec);
    py_stacks[i] = (struct py_stack_slot){hash, rec.stack_id, py.stack_generation};
    py.stacks_in_generation++;
    return rec.stack_id;
}

void cpu_python_totals(struct trace_cpu_sampler *rec)
{
    if (!py.l)
        return;
    rec->python_snapshots = py.written_snapshots;
    rec->python_lost = __atomic_load_n(&py.lost, __ATOMIC_RELAXED);
    rec->python_unreadable = __atomic_load_n(&py.unreadable, __ATOMIC_RELAXED);
    rec->python_frames_dropped = __atomic_load_n(&py.frames_dropped, __ATOMIC_RELAXED);
    rec->python_gil_checks = __atomic_load_n(&py.gil_checks, __ATOMIC_RELAXED);
    rec->python_cpu_ns = __atomic_load_n(&py.cpu_ns, __ATOMIC_RELAXED);
    rec->optional_present = 6;
}

void cpu_python_drain(int final, int may_start, uint64_t period_ns, const char *native_reason)
{
    if (py.started == PY_NOT_STARTED && may_start)
        py_start(period_ns);
    if (py.started != PY_STARTED)
        return;
    if (py.status)
        py_put_status(period_ns, native_reason);
    if (final)
        __atomic_store_n(&py.stop, 1, __ATOMIC_RELEASE);
    uint64_t head = __atomic_load_n(&py.head, __ATOMIC_ACQUIRE);
    for (uint64_t at = py.tail; at < head; at++) {
        const struct py_snapshot *s = &py_queue[at % PY_QUEUE_SLOTS];
        struct trace_py_sample rec = {.os_tid = s->tid,
                                      .ts = s->ts,
                                      .stack_id = py_stack_id(s),
                                      .state = s->state,
                                      .span_ns = s->span_ns};
        writer_reserve_locked(64);
        trace_put_py_sample(writer_chunk_locked(), &rec);
        py.written_snapshots++;
    }
    __atomic_store_n(&py.tail, head, __ATOMIC_RELEASE);
}

void cpu_python_switch(int on)
{
    __atomic_store_n(&py.switched_off, !on, __ATOMIC_RELAXED);
}

uint32_t cpu_python_sampler_tid(void)
{
    return __atomic_load_n(&py.sampler_tid, __ATOMIC_ACQUIRE);
}

void cpu_python_at_fork_child(void)
{
    /* only the forking thread is left: whatever the sampler was doing is abandoned */
    uint32_t key_generation = py.key_generation + 1, thread_generation = py.thread_generation + 1;
    uint32_t stack_generation = py.stack_generation + 1;
    int switched_off = py.switched_off;
    memset(&py, 0, sizeof py);
    py.switched_off = switched_off;
    memset(py_function_written, 0, sizeof py_function_written);
    py.key_generation = key_generation;
    py.thread_generation = thread_generation;
    py.stack_generation = stack_generation;
}
