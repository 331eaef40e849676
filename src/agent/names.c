/* Thread names that do not come through a thread's own ring: the OS names of threads seen
 * only in CUPTI's records (read from /proc by the writer, off the program's threads), and
 * the Python names the bootstrap hands over (src/agent/python/lantern_threads.py calls
 * lantern_agent_python_thread_name when a threading.Thread starts or is renamed). Both
 * tables are fixed-size: no allocation, and a thread beyond them only goes unnamed. And the
 * process's own Python name, for a multiprocessing child (lantern_processes.py). */
#include "agent/names.h"
#include "agent/ring.h"
#include "trace/records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Threads known by tid alone (CUPTI's API records): their name is read when first seen and
 * again at the end. Open addressing; a full table forgets every thread it knows (a server
 * with a thread per request: most have ended) and starts over, so that a long run keeps
 * naming its new threads (a live thread seen again is named again). */
#define NAMES_TID_SLOTS 1024u
/* Python names waiting for the writer; the producer is any thread, the consumer the writer. */
#define NAMES_PYTHON_SLOTS 256u
#define NAMES_PYTHON_BYTES 128u /* longer names are cut (at a UTF-8 boundary) */

/* The program a multiprocessing child runs (python PATH or python -m MODULE, NUL-separated),
 * longer cut: a path of a few hundred bytes is the rule. */
#define NAMES_PROCESS_MAIN_BYTES 1024u

static struct {
    uint32_t tid[NAMES_TID_SLOTS]; /* 0: empty */
    char name[NAMES_TID_SLOTS][RING_THREAD_NAME_BYTES];
    unsigned used;
} names_tids; /* writer lock held */

static void (*_Atomic names_flush)(void); /* names_set_flush */

enum { PY_FREE = 0, PY_WRITING, PY_READY };
static struct {
    _Atomic int state[NAMES_PYTHON_SLOTS];
    uint32_t tid[NAMES_PYTHON_SLOTS];
    char name[NAMES_PYTHON_SLOTS][NAMES_PYTHON_BYTES];
    uint16_t len[NAMES_PYTHON_SLOTS];
} names_python;

static struct {
    _Atomic int state;
    char main[NAMES_PROCESS_MAIN_BYTES], name[NAMES_PYTHON_BYTES];
    uint16_t main_len, name_len;
} names_process;

/* How much of name (len bytes) fits in cap bytes without cutting a UTF-8 character. */
static size_t utf8_cut(const char *name, size_t len, size_t cap)
{
    if (len <= cap)
        return len;
    while (cap > 0 && ((uint8_t)name[cap] & 0xC0) == 0x80)
        cap--; /* cut before a continuation byte, not inside a character */
    return cap;
}

/* /proc/self/task/<tid>/comm without its newline; 0 when the thread is gone. */
size_t names_read_comm(uint32_t tid, char out[RING_THREAD_NAME_BYTES])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, out, RING_THREAD_NAME_BYTES - 1);
    close(fd);
    if (n <= 0)
        return 0;
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
        n--;
    out[n] = '\0';
    return (size_t)n;
}

/* Emits TRACE_THREAD_OS_NAME when `name` differs from what `written` holds (lock held). */
void names_put_os_name(const struct names_out *out, uint32_t tid, const char *name,
                       char written[RING_THREAD_NAME_BYTES])
{
    size_t len = strnlen(name, RING_THREAD_NAME_BYTES - 1);
    if (!len || (strncmp(written, name, RING_THREAD_NAME_BYTES - 1) == 0 && written[len] == '\0'))
        return;
    memcpy(written, name, len);
    written[len] = '\0';
    /* may emit TRACE_STRING first */
    struct trace_thread_os_name r = {.os_tid = tid, .name = out->intern(name, len)};
    out->reserve(32);
    trace_put_thread_os_name(out->chunk, &r);
}

void names_note_tid_locked(const struct names_out *out, uint32_t tid)
{
    if (!tid)
        return;
    if (names_tids.used * 2 >= NAMES_TID_SLOTS)
        memset(&names_tids, 0, sizeof names_tids);
    unsigned i = (tid * 2654435761u) & (NAMES_TID_SLOTS - 1);
    for (; names_tids.tid[i]; i = (i + 1) & (NAMES_TID_SLOTS - 1))
        if (names_tids.tid[i] == tid)
            return;
    names_tids.tid[i] = tid;
    names_tids.name[i][0] = '\0';
    names_tids.used++;
    char comm[RING_THREAD_NAME_BYTES];
    if (names_read_comm(tid, comm))
        names_put_os_name(out, tid, comm, names_tids.name[i]);
}

void names_put_process_locked(const struct names_out *out)
{
    if (__atomic_load_n(&names_process.state, __ATOMIC_ACQUIRE) != PY_READY)
        return;
    struct trace_process_python_name r = {
        .main = trace_bytes(names_process.main, names_process.main_len),
        .name = trace_bytes(names_process.name, names_process.name_len)};
    out->reserve(names_process.main_len + names_process.name_len + 32u);
    trace_put_process_python_name(out->chunk, &r);
    __atomic_store_n(&names_process.state, PY_FREE, __ATOMIC_RELEASE);
}

void names_drain_locked(const struct names_out *out, int final)
{
    for (unsigned i = 0; i < NAMES_PYTHON_SLOTS; i++) {
        if (__atomic_load_n(&names_python.state[i], __ATOMIC_ACQUIRE) != PY_READY)
            continue;
        struct trace_thread_python_name r = {
            .os_tid = names_python.tid[i],
            .name = out->intern(names_python.name[i], names_python.len[i])};
        out->reserve(32);
        trace_put_thread_python_name(out->chunk, &r);
        __atomic_store_n(&names_python.state[i], PY_FREE, __ATOMIC_RELEASE);
    }
    names_put_process_locked(out);
    if (!final)
        return;
    /* a thread may name itself after its first call: the name it has at the end wins */
    char comm[RING_THREAD_NAME_BYTES];
    for (unsigned i = 0; i < NAMES_TID_SLOTS; i++)
        if (names_tids.tid[i] && names_read_comm(names_tids.tid[i], comm))
            names_put_os_name(out, names_tids.tid[i], comm, names_tids.name[i]);
}

void names_fork_child(void)
{
    /* the child's threads are new; the parent's waiting names are the parent's to write */
    memset(&names_tids, 0, sizeof names_tids);
    for (unsigned i = 0; i < NAMES_PYTHON_SLOTS; i++)
        __atomic_store_n(&names_python.state[i], PY_FREE, __ATOMIC_RELAXED);
    __atomic_store_n(&names_process.state, PY_FREE, __ATOMIC_RELAXED);
}

/* Called by the Python bootstrap through ctypes, on any thread, before or after the agent
 * started (the writer emits what is waiting at its next drain). Never blocks. */
__attribute__((visibility("default"))) int lantern_agent_python_thread_name(uint32_t tid,
                                                                            const char *name)
{
    if (!tid || !name)
        return -EINVAL;
    for (unsigned i = 0; i < NAMES_PYTHON_SLOTS; i++) {
        int expected = PY_FREE;
        if (__atomic_load_n(&names_python.state[i], __ATOMIC_RELAXED) != PY_FREE ||
            !__atomic_compare_exchange_n(&names_python.state[i], &expected, PY_WRITING, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        size_t len = utf8_cut(name, strlen(name), NAMES_PYTHON_BYTES);
        memcpy(names_python.name[i], name, len);
        names_python.len[i] = (uint16_t)len;
        names_python.tid[i] = tid;
        __atomic_store_n(&names_python.state[i], PY_READY, __ATOMIC_RELEASE);
        return 0;
    }
    return -ENOSPC; /* the writer has not caught up (or never started): the name is lost */
}

/* Called by the Python bootstrap through ctypes in a multiprocessing child, as its Process
 * starts: written at once where the agent runs (a fork child), else at the writer's first
 * drain. The latest wins. */
__attribute__((visibility("default"))) int
lantern_agent_python_process_name(const char *main, size_t main_len, const char *name)
{
    int expected = PY_FREE;
    if (!main || !name)
        return -EINVAL;
    if (!__atomic_compare_exchange_n(&names_process.state, &expected, PY_WRITING, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return -EBUSY;
    main_len = main_len < NAMES_PROCESS_MAIN_BYTES ? main_len : NAMES_PROCESS_MAIN_BYTES;
    memcpy(names_process.main, main, main_len);
    names_process.main_len = (uint16_t)main_len;
    size_t len = utf8_cut(name, strlen(name), NAMES_PYTHON_BYTES);
    memcpy(names_process.name, name, len);
    names_process.name_len = (uint16_t)len;
    __atomic_store_n(&names_process.state, PY_READY, __ATOMIC_RELEASE);
    void (*flush)(void) = __atomic_load_n(&names_flush, __ATOMIC_ACQUIRE);
    if (flush)
        flush();
    return 0;
}

void names_set_flush(void (*flush)(void))
{
    __atomic_store_n(&names_flush, flush, __ATOMIC_RELEASE);
}
