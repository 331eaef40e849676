/* The writer thread: every 10 ms (sooner when a thread has filled RING_WAKE_BLOCKS blocks)
 * it writes a calibration point (TRACE_CLOCK) and copies each thread's new events into
 * TRACE_THREAD_EVENTS records byte for byte (the threads encoded them: trace/events.h), and
 * write()s whole chunks at least every 50 ms (writer_file.c). The threads' buffers are a
 * shared mapping of the buffer file (trace/pool_file.h): whatever the process did not write
 * when it ended (_exit, exec, a signal, events after its exit hooks) is appended after its
 * death by the launcher. Here too: the locked interface through which sources append records,
 * the help of a thread that found the pool empty, the file's opening with TRACE_PROCESS, its
 * end, and fork. */
#include "agent/writer.h"
#include "agent/writer_file.h"

#include "agent/clock.h"
#include "agent/names.h"
#include "agent/ring.h"
#include "trace/events.h"
#include "trace/process.h"
#include "trace/rank.h"
#include "trace/records.h"
#include "trace/segments.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#define WRITER_DRAIN_PERIOD_NS 10000000u /* 10 ms */
#define WRITER_FLUSH_PERIOD_NS                                                                     \
    50000000u                         /* 50 ms: with the drain period, SIGKILL loses <= ~100 ms */
#define WRITER_CHUNK_BYTES (1u << 20) /* grows for a record larger than this */

static _Atomic int writer_stop;
static void (*writer_periodic)(void);
static void (*writer_drain_hook)(int final);
static _Atomic uint32_t writer_tid;
static void (*writer_poll)(void);
static uint64_t writer_periodic_ns;
static _Atomic int writer_thread_wanted; /* a fork child starts its thread on its next event */
/* 1 while a writer thread was created and has not yet reached writer_main (fork waits) */
static _Atomic int writer_thread_starting;
static _Atomic int writer_end_requested; /* by a signal handler: end the file now */
static _Atomic int writer_ended;         /* TRACE_PROCESS_END is written */

static void writer_end(int clean);
static size_t writer_read_file(const char *path, char *buf, size_t cap);

/* ---- the threads' events ---- */

/* Where names.c writes thread names. */
static const struct names_out writer_names = {&writer.chunk, writer_intern, writer_reserve_locked};

/* Writes the names waiting in names.c now, durably (any thread, lock not held): a fork child
 * that ends by _exit, as multiprocessing's do, has no other drain, and the salvage of its
 * buffer file brings back only its threads' events. Nothing while the agent is inert. */
static void writer_put_names(void)
{
    if (!writer_lock())
        return;
    names_drain_locked(&writer_names, 0);
    writer_unlock_durable();
}

void writer_note_tid_locked(uint32_t os_tid)
{
    names_note_tid_locked(&writer_names, os_tid);
}

/* What a drain covers: `final` for the last one before the file ends (the OS names of live
 * threads are read once more, from /proc: the writer cannot ask them); a non-zero quota stops
 * it once that many blocks went back to the pool (a thread's help, writer_help). */
struct writer_drain {
    int final;
    uint32_t quota, freed;
};

static void writer_drain_thread(struct agent_thread *t, int exited, void *ctx)
{
    struct writer_drain *d = ctx;
    struct pool_slot *s = t->slot;
    if (!s)
        return; /* no slot: its events are counted in the header's lost */
    if (!exited && d->quota && d->freed >= d->quota)
        return; /* an exited thread is always drained: it is freed after this */
    if (!s->pending_announced) {
        writer_put_thread(t->thread_idx, t->os_tid,
                          clock_ticks_to_ns(&writer.calibration, t->first_ticks));
        s->pending_announced = 1;
        names_put_os_name(&writer_names, t->os_tid, t->first_name, t->name_written);
    }
    d->freed += ring_consume(t, writer_put_events, NULL);
    char comm[RING_THREAD_NAME_BYTES];
    if (exited)
        names_put_os_name(&writer_names, t->os_tid, t->exit_name, t->name_written);
    else if (d->final && names_read_comm(t->os_tid, comm))
        names_put_os_name(&writer_names, t->os_tid, comm, t->name_written);
    uint64_t dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
    if (dropped != s->pending_dropped) {
        writer_put_dropped(t->thread_idx, dropped - s->pending_dropped);
        s->pending_dropped = dropped;
    }
}

/* Returns how many blocks the drain left behind (they go back once the chunk is written). */
static uint32_t writer_drain_some_locked(int final, uint32_t quota)
{
    clock_calibration_update(&writer.calibration);
    writer_put_clock();
    /* events of threads that found no slot, counted in the buffer file's header */
    struct pool_header *h = ring_pool.header;
    uint64_t lost = h ? __atomic_load_n(&h->lost, __ATOMIC_RELAXED) : 0;
    if (h && lost != h->lost_pending) {
        writer_put_dropped(0, lost - h->lost_pending);
        h->lost_pending = lost;
    }
    names_drain_locked(&writer_names, final);
    writer_reserve_locked(128);
    agent_tables_put_cuts_locked(&writer.chunk);
    struct writer_drain d = {final, quota, 0};
    ring_for_each_thread(writer_drain_thread, &d);
    if (writer_drain_hook)
        writer_drain_hook(final);
    return d.freed;
}

static uint32_t writer_drain_locked(int final)
{
    return writer_drain_some_locked(final, 0);
}

/* ---- the locked interface ---- */

struct trace_chunk_builder *writer_lock(void)
{
    agent_busy++; /* until writer_unlock */
    writer_start_wanted();
    pthread_mutex_lock(&writer.lock);
    if (writer.open)
        return &writer.chunk;
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
    return NULL;
}

void writer_unlock(void)
{
    if (writer.chunk.len * 2 > writer.chunk_cap)
        writer_flush_locked();
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
}

void writer_unlock_durable(void)
{
    writer_flush_locked();
    pthread_mutex_unlock(&writer.lock);
    agent_busy--;
}

/* ---- a thread that found the buffer pool empty ---- */

/* A thread that finds the pool empty tries the writer lock for at most WRITER_HELP_SLICE_NS
 * at a time (ring.c calls again, up to RING_HELP_WAIT_NS, before it drops an event). */
#define WRITER_HELP_SLICE_NS 50000000u /* 50 ms */

static struct timespec writer_realtime_in(uint64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    ns += (uint64_t)t.tv_nsec;
    t.tv_sec += (time_t)(ns / 1000000000u);
    t.tv_nsec = (long)(ns % 1000000000u);
    return t;
}

/* The writer thread is behind (many threads at full speed starve it of CPU): the thread waits
 * for the writer lock, asleep, so that the CPU goes to whoever drains, then drains until a
 * sixteenth of the pool is back (unless the one before it left blocks) and writes the chunk,
 * which gives those blocks back, so that the lock is held briefly. A mutex is not fair: a
 * waiter may lose it many times, and another thread may take the blocks it gave back; ring.c
 * calls again until its wait is over. Returns 0 when helping cannot help: no file to write, or
 * nothing to give back (every block is a live thread's current one). */
static int writer_help(void)
{
    struct timespec slice = writer_realtime_in(WRITER_HELP_SLICE_NS);
    if (pthread_mutex_timedlock(&writer.lock, &slice) != 0)
        return 1;
    int progress = ring_pool_has_free_block();
    if (!progress && writer.open && !writer.write_failed) {
        progress = writer_drain_some_locked(0, ring_pool.blocks / 16 + 1) > 0;
        writer_flush_locked();
    }
    pthread_mutex_unlock(&writer.lock);
    return progress;
}

/* ---- the thread ---- */

/* How often the writer looks whether it is the process's last thread (main called
 * pthread_exit and the others ended): then it ends too, and the process exits as it would
 * without Lantern (status 0, atexit handlers run, the agent's among them). */
#define WRITER_ALONE_CHECK_NS 100000000u /* 100 ms */

/* Whether the writer is the process's last thread: /proc/self/stat counts one thread, or two
 * with the leader (main) a zombie after its pthread_exit (it stays in the count until the
 * whole group ends). */
static int writer_alone(void)
{
    static char stat[1024];
    size_t len = writer_read_file("/proc/self/stat", stat, sizeof stat - 1);
    stat[len] = '\0';
    char *close = strrchr(stat, ')'); /* comm may hold spaces and parentheses */
    char state = 0;
    long threads = 0;
    if (!close || sscanf(close + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                                    "%*d %*d %ld",
                         &state, &threads) != 2)
        return 0;
    return threads == 1 || (threads == 2 && state == 'Z');
}

void writer_set_drain(void (*fn)(int final))
{
    writer_drain_hook = fn;
}

uint32_t writer_thread_tid(void)
{
    return __atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE);
}

void writer_set_poll(void (*fn)(void))
{
    writer_poll = fn;
}

void writer_set_periodic(void (*fn)(void), unsigned period_ms)
{
    writer_periodic_ns = (uint64_t)period_ms * 1000000u;
    writer_periodic = fn;
}

/* Begins the next segment once the current one is segment_ns old (lock held): the chunk so
 * far ends the current one, the threads' streams start over in the new one (ring_segment),
 * and the segment that fell out of the ring is deleted. */
static void writer_ring_rotate(uint64_t now_ns)
{
    if (!writer_ring.number || writer.write_failed ||
        now_ns - writer_ring.started_ns < writer_ring.segment_ns)
        return;
    writer_flush_locked();
    uint64_t n = writer_ring.number + 1;
    writer_ring_close();
    if (writer_ring_open(n) < 0) {
        writer_write_failed(errno);
        return;
    }
    __atomic_add_fetch(&ring_segment, 1, __ATOMIC_RELEASE);
    if (writer_ring.definition_bytes >= TRACE_SEGMENT_DEFINITIONS_MAX)
        writer_strings_clear(); /* its strings are defined again in the segments that use them */
    if (n > writer_ring.kept + 1) {
        char old[sizeof writer_ring.path];
        if (trace_segment_path(old, sizeof old, writer.path, n - writer_ring.kept - 1) == 0)
            unlink(old);
    }
}

static void *writer_main(void *arg)
{
    (void)arg;
    agent_busy = 1; /* the agent's own thread: -t osrt never times its calls */
    /* a sanitizer's prctl takes its thread-registry lock (the thread's name): fork waits */
    prctl(PR_SET_NAME, "lantern-writer");
    __atomic_store_n(&writer_thread_starting, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&writer_tid, ring_gettid(), __ATOMIC_RELEASE);
    if (ring_pool.header) /* the launcher now waits for this thread's answer to a pause */
        __atomic_store_n(&ring_pool.header->writer_running, 1, __ATOMIC_RELEASE);
    uint32_t seen = ring_wake_count();
    uint64_t alone_checked = clock_mono_ns(), periodic_ran = alone_checked;
    while (!__atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE)) {
        ring_consumer_wait(seen, WRITER_DRAIN_PERIOD_NS);
        seen = ring_wake_count();
        uint64_t now_ns = clock_mono_ns();
        if (writer_poll)
            writer_poll();
        if (writer_periodic && now_ns - periodic_ran >= writer_periodic_ns) {
            periodic_ran = now_ns;
            writer_periodic();
        }
        if (now_ns - alone_checked >= WRITER_ALONE_CHECK_NS) {
            alone_checked = now_ns;
            if (writer_alone())
                break; /* the last thread: glibc's exit(0) follows, with agent_exit */
        }
        if (__atomic_load_n(&writer_end_requested, __ATOMIC_ACQUIRE)) {
            writer_end(0); /* the process is being killed: not a clean exit */
            break;
        }
        pthread_mutex_lock(&writer.lock);
        if (writer.open) {
            /* blocks left behind go back to the pool only once the chunk holding their
             * events is written: then it is written at once */
            uint32_t passed = writer_drain_locked(0);
            uint64_t now = clock_mono_ns();
            int due = now - writer.last_flush_ns >= WRITER_FLUSH_PERIOD_NS;
            if (!trace_chunk_empty(&writer.chunk) &&
                (due || passed || writer.chunk.len * 2 > writer.chunk_cap))
                writer_flush_locked();
            writer_ring_rotate(now);
        }
        pthread_mutex_unlock(&writer.lock);
    }
    return NULL;
}

/* The writer must never take the application's signals. */
static int writer_start_thread(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&writer_stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&writer_thread_starting, 1, __ATOMIC_RELEASE);
    int rc = pthread_create(&writer.thread, NULL, writer_main, NULL);
    if (rc != 0)
        __atomic_store_n(&writer_thread_starting, 0, __ATOMIC_RELEASE);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -rc; /* pthread_create's error number */
    pthread_detach(writer.thread);
    return 0;
}

/* A fork child's thread starts once it has filled RING_WAKE_BLOCKS blocks, or at its first
 * locked write (CUDA), or at its first event in a session cut into windows (control.c), never
 * inside the atfork handler (a thread made there hangs sanitized programs); a short-lived
 * child makes none. */
void writer_start_wanted(void)
{
    if (__atomic_load_n(&writer_thread_wanted, __ATOMIC_ACQUIRE) &&
        __atomic_exchange_n(&writer_thread_wanted, 0, __ATOMIC_ACQ_REL)) {
        agent_busy++; /* a program thread may start it: -t osrt times none of its calls */
        writer_run();
        agent_busy--;
    }
}

/* ---- the process record and the file ---- */

static size_t writer_read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ssize_t n;
    while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
        len += (size_t)n;
    close(fd);
    return len;
}

/* The parent of pid from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold
 * spaces and parentheses, so read after the last ')'); 0 if unknown. */
static uint64_t writer_parent_of(uint64_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    size_t len = writer_read_file(path, stat, sizeof stat - 1);
    stat[len] = '\0';
    char *close = strrchr(stat, ')');
    unsigned long long ppid = 0;
    if (!close || sscanf(close + 1, " %*c %llu", &ppid) != 1)
        return 0;
    return ppid;
}

/* TRACE_PROCESS_INFO: the rank from the job launcher's variables (trace/rank.h) and the
 * ancestors above the parent, so that the importer links a process to the traced process
 * that started it even through an untraced shell in between. */
static void writer_put_process_info(void)
{
    const char *rank_var = "", *local_var = "";
    long long rank = trace_env_rank(trace_rank_variables, &rank_var);
    long long local = trace_env_rank(trace_local_rank_variables, &local_var);
    struct trace_process_info r = {.rank = (uint64_t)(rank + 1),
                                   .local_rank = (uint64_t)(local + 1),
                                   .rank_variable = trace_cstr(rank >= 0 ? rank_var : local_var)};
    for (uint64_t pid = (uint64_t)getppid(); pid > 1 && r.ancestors.count < TRACE_MAX_ANCESTORS;) {
        pid = writer_parent_of(pid);
        if (!pid)
            break;
        r.ancestors.values[r.ancestors.count++] = pid;
    }
    trace_put_process_info(&writer.chunk, &r);
}

static void writer_put_process(uint64_t start_ns)
{
    static char cmdline[16384];
    size_t cmd_len = writer_read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
    if (cmd_len && cmdline[cmd_len - 1] == '\0')
        cmd_len--; /* the format separates arguments by NUL; no terminator */
    trace_put_process_self(&writer.chunk, start_ns, cmdline, cmd_len, writer.agent_flags, "");
    writer_put_process_info();
    /* a multiprocessing child named before its first event: in the first chunk, which is
     * written at once (the child may _exit before any drain) */
    names_put_process_locked(&writer_names);
}

/* Opens this process's file "<pid>-<start_ns>.lrt" and its buffer file (.lrb) and writes the
 * header and TRACE_PROCESS (lock held). In a fork child the buffer file replaces the parent's
 * pool in place (ring_fork_child). */
static int writer_open_file(int fork_child)
{
    int rc = fork_child ? 0 : ring_pool_init();
    if (rc < 0) {
        agent_warn("cannot reserve the event buffers (LANTERN_BUFFER_KB); tracing disabled");
        return rc;
    }
    uint64_t start_ns = fork_child ? clock_mono_ns() : ring_pool.start_ns; /* the pool's name */
    char *path = writer.path;
    snprintf(path, sizeof(writer.path), "%s/%d-%llu.lrt", writer.session_dir, (int)getpid(),
             (unsigned long long)start_ns);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int err = errno;
        agent_warn("cannot create '%s': %s; tracing disabled", path, strerror(err));
        if (fd >= 0)
            close(fd);
        return -err;
    }
    writer.fd = writer_fd_high(fd);
    writer.fd_dev = st.st_dev;
    writer.fd_ino = st.st_ino;
    writer.opened = 1;
    char pool[sizeof writer.path];
    snprintf(pool, sizeof pool, "%.*sb", (int)strlen(path) - 1, path); /* .lrt -> .lrb */
    if (fork_child)
        ring_fork_child(pool);
    if (!ring_pool.path[0])
        agent_warn("cannot make the buffer file '%s': events still buffered when the process "
                   "ends without its exit hooks (_exit, a signal) are lost",
                   pool);
    struct pool_header *h = ring_pool.header;
    if (h) {
        h->ticks_are_tsc = (uint32_t)clock_ticks_are_tsc;
        h->first_ticks = writer.calibration.first_ticks;
        h->first_ns = writer.calibration.first_ns;
    }
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    writer.write_failed = 0;
    writer.file_bytes = 0;
    rc = writer_write_all(header, sizeof(header));
    if (rc < 0) {
        agent_warn("cannot write '%s': %s; tracing disabled", path, strerror(errno));
        writer_close();
        return rc;
    }
    writer.file_bytes = sizeof(header);
    writer_keep_reserve();
    writer.dropped_total = 0;
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, start_ns);
    writer_put_process(start_ns);
    writer_flush_locked(); /* the process record reaches the disk even if we die now */
    return writer_ring_start();
}

int writer_start(const char *session_dir, uint32_t agent_flags)
{
    if (strlen(session_dir) >= sizeof(writer.session_dir)) {
        agent_warn("LANTERN_SESSION_DIR is too long; tracing disabled");
        return -ENAMETOOLONG;
    }
    pthread_mutex_lock(&writer.lock);
    strcpy(writer.session_dir, session_dir);
    writer.agent_flags = agent_flags;
    writer.chunk_cap = WRITER_CHUNK_BYTES;
    writer.chunk_buf = malloc(writer.chunk_cap);
    clock_calibration_start(&writer.calibration);
    ring_set_helper(writer_help);
    ring_set_block_hook(writer_start_wanted);
    names_set_flush(writer_put_names);
    int rc = writer.chunk_buf ? writer_open_file(0) : -ENOMEM;
    if (rc < 0)
        goto fail;
    writer.open = 1;
    pthread_mutex_unlock(&writer.lock);
    return 0;
fail:
    writer_close();
    free(writer.chunk_buf);
    writer.chunk_buf = NULL;
    pthread_mutex_unlock(&writer.lock);
    return rc;
}

/* Drains everything, writes TRACE_PROCESS_END and closes the file; once. */
static void writer_end(int clean)
{
    pthread_mutex_lock(&writer.lock);
    if (!writer.open)
        goto out;
    __atomic_store_n(&writer_stop, 1, __ATOMIC_RELEASE);
    writer_drain_locked(1);
    writer_flush_locked(); /* after a failed write: counts what the drain gathered */
    writer_put_end(clean);
    if (writer_write_end_chunk() < 0 && !writer.write_failed) {
        writer_write_failed(errno); /* the end alone failed: say so, in less space */
        writer_put_end(clean);
        writer_write_end_chunk();
    }
    trace_chunk_begin(&writer.chunk, writer.chunk_buf, writer.chunk_cap, clock_mono_ns());
    writer_truncate(); /* the reserve past the end goes */
    if (ring_pool.header)
        __atomic_store_n(&ring_pool.header->ended, 1, __ATOMIC_RELEASE);
    writer_close();
    writer_ring_close();
    writer.open = 0;
out:
    pthread_mutex_unlock(&writer.lock);
    __atomic_store_n(&writer_ended, 1, __ATOMIC_RELEASE);
    ring_wake_consumer(); /* lets the thread see writer_stop and end */
}

int writer_run(void)
{
    int rc = writer_start_thread();
    if (rc == 0)
        return 0;
    agent_warn("cannot start the writer thread; events are written at exit only");
    return rc;
}

void writer_finish(void)
{
    writer_end(1);
}

/* From a signal handler (async-signal-safe: atomics, futex, nanosleep): the writer thread
 * does the work, since the interrupted thread may hold any lock; gives up after timeout_ms
 * (e.g. when the interrupted thread holds the writer lock). */
void writer_finish_from_signal(int timeout_ms)
{
    __atomic_store_n(&writer_end_requested, 1, __ATOMIC_RELEASE);
    ring_wake_consumer();
    struct timespec millisecond = {0, 1000000};
    for (int i = 0; i < timeout_ms && !__atomic_load_n(&writer_ended, __ATOMIC_ACQUIRE); i++)
        nanosleep(&millisecond, NULL);
}

void writer_flush_now(void)
{
    pthread_mutex_lock(&writer.lock);
    if (writer.open) {
        writer_drain_locked(0);
        writer_flush_locked();
    }
    pthread_mutex_unlock(&writer.lock);
}

/* fork(): the parent's events so far go to the parent's file before the address space is
 * copied; the lock is held across fork() so the child never sees a half-built chunk. A writer
 * thread still starting (its C library's and a sanitizer's set-up allocate, and a sanitizer's
 * prctl naming it takes its thread-registry lock) is waited for, at most 1000 naps of 0.1 ms:
 * a fork in the middle of that would hand the child a held allocator or registry lock. */
void writer_fork_prepare(void)
{
    struct timespec pause = {0, 100000}; /* 0.1 ms */
    for (int i = 0; i < 1000 && __atomic_load_n(&writer_thread_starting, __ATOMIC_ACQUIRE); i++)
        nanosleep(&pause, NULL);
    pthread_mutex_lock(&writer.lock);
    if (writer.open) {
        writer_drain_locked(0);
        writer_flush_locked();
    }
}

void writer_fork_parent(void)
{
    pthread_mutex_unlock(&writer.lock);
}

void writer_fork_child(void)
{
    __atomic_store_n(&writer_end_requested, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_ended, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&writer_tid, 0, __ATOMIC_RELAXED); /* the child's starts later */
    /* not inside this handler (the sources' hooks below take the writer lock), nor wanted as
     * a parent that was itself a fork child wanted it: writer_fork_child_done says */
    __atomic_store_n(&writer_thread_wanted, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&writer_thread_starting, 0, __ATOMIC_RELEASE); /* the parent's, if any */
    pthread_mutex_init(&writer.lock, NULL); /* held by the parent's thread at fork */
    names_fork_child();
    if (!writer.open) {
        ring_fork_child(NULL);
        return;
    }
    writer_close(); /* the parent's */
    writer_ring_close();
    writer.open = 0;
    writer_strings_forget();
    clock_calibration_update(&writer.calibration);
    if (writer_open_file(1) < 0) {
        ring_disable();
        return;
    }
    writer.open = 1;
}

void writer_fork_child_done(void)
{
    __atomic_store_n(&writer_thread_wanted, writer.open, __ATOMIC_RELEASE);
}
