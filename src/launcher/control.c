/* Start and stop on demand (docs/long-runs.md): the session's control file session.lrc
 * (trace/control.h), which the agents read on their hot path; the launcher's control thread,
 * which takes the triggers (SIGUSR1: start, SIGUSR2: stop; `lantern start|stop` send them) and
 * writes each window's database as it ends (launcher_options.window_ended); and how `lantern
 * start|stop` find a running session. The triggers are signals so that the kernel checks who
 * may send them (the same user); the control file says what they did. */
#include "trace/control.h"
#include "launcher/launcher_internal.h"
#include "trace/pool_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* After a stop, the longest wait for the agents to write what they recorded before the
 * window is imported: they write it within ~10 ms of the pause (agent.c's poll) and say so in
 * their buffer files; one that does not (a fork child that has not started its writer
 * thread, a process stopped in a debugger) is waited for this long, then its events so far
 * are imported. */
#define CONTROL_SETTLE_MAX_MS 2000

static uint64_t control_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void control_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

static int control_add_window(struct launcher *l, uint64_t start_ns)
{
    if (l->window_count == l->window_cap) {
        size_t cap = l->window_cap ? l->window_cap * 2 : 8;
        struct launcher_window *grown = realloc(l->windows, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        l->windows = grown;
        l->window_cap = cap;
    }
    l->windows[l->window_count] = (struct launcher_window){
        .number = l->window_count + 1, .start_ns = start_ns, .end_ns = INT64_MAX};
    l->window_count++;
    return 0;
}

int control_create(struct launcher *l)
{
    sigset_t set;
    control_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* taken by the control thread only */
    int fd = openat(l->dir_fd, TRACE_CONTROL_FILE,
                    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, TRACE_CONTROL_BYTES) < 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return launcher_fail(l, -err, "cannot write the session folder '%s': %s", l->raw_dir,
                             strerror(errno));
    }
    void *map = mmap(NULL, TRACE_CONTROL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return launcher_fail(l, -errno, "cannot map '%s/" TRACE_CONTROL_FILE "': %s", l->raw_dir,
                             strerror(errno));
    struct trace_control *c = l->control = map;
    c->version = 1;
    c->bytes = TRACE_CONTROL_BYTES;
    c->launcher_pid = (uint32_t)getpid();
    c->single_file = (uint32_t)l->o->single_file;
    c->windowed = (uint32_t)(l->o->start_paused || l->o->single_file);
    c->ring_ns = (uint64_t)(l->o->ring_s * 1e9);
    if (!l->o->start_paused) { /* window 1 is the run from its start */
        if (control_add_window(l, 0) < 0)
            return launcher_fail(l, -ENOMEM, "out of memory");
        c->window = 1;
        c->recording = 1;
    }
    memcpy(c->magic, TRACE_CONTROL_MAGIC, 8); /* last: the file is whole */
    return 0;
}

static void control_start_window(struct launcher *l)
{
    struct trace_control *c = l->control;
    if (c->recording)
        return; /* already recording: counted in triggers */
    uint64_t now = control_now_ns();
    if (control_add_window(l, now) < 0)
        return;
    c->window_start_ns = now;
    __atomic_store_n(&c->window, l->window_count, __ATOMIC_RELEASE);
    __atomic_store_n(&c->recording, 1, __ATOMIC_RELEASE);
}

/* Whether the agent of the buffer file fd has written what it held at the end of window: it
 * said so, or, where no writer thread runs to say it (a fork child that has not started one),
 * every thread's stream is in its trace file already. A running writer's streams can all be
 * in the file before its pause has flushed CUPTI's records, which are in no stream: a window
 * imported then missed its kernels (gpu_windows on the H100: a third window of 0 kernels). */
static int control_pool_paused(int fd, uint64_t window)
{
    struct pool_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, POOL_FILE_MAGIC, 8))
        return 1; /* not one we can read: nothing to wait for */
    if (h.ended || h.paused_window >= window)
        return 1;
    if (h.writer_running)
        return 0;
    struct pool_slot slot;
    for (uint32_t i = 0; i < h.slots; i++) {
        off_t at = (off_t)(h.slot_offset + (uint64_t)i * POOL_SLOT_BYTES);
        if (pread(fd, &slot, sizeof slot, at) != (ssize_t)sizeof slot)
            return 1;
        if (slot.used && slot.head != slot.durable)
            return 0;
    }
    return 1;
}

static void control_wait_agents(struct launcher *l, uint64_t window)
{
    struct timespec poll = {0, 2000000}; /* 2 ms */
    for (int waited = 0;
         waited < CONTROL_SETTLE_MAX_MS && !session_agents_all(l, control_pool_paused, window);
         waited += 2)
        nanosleep(&poll, NULL);
}

/* Ends the open window at now; written (while the program runs) unless single_file. At the
 * program's end a run that is not cut into windows keeps recording: a process that outlives
 * lantern (a daemon, --wait) writes on, for a later 'lantern import'. */
static void control_stop_window(struct launcher *l, int program_ended)
{
    struct trace_control *c = l->control;
    if (!c->recording || !l->window_count)
        return;
    struct launcher_window *w = &l->windows[l->window_count - 1];
    if (program_ended && !launcher_windowed(l)) {
        w->end_ns = control_now_ns();
        return;
    }
    __atomic_store_n(&c->recording, 0, __ATOMIC_RELEASE);
    w->end_ns = control_now_ns();
    if (program_ended)
        return;
    l->stopped_once = 1;
    __atomic_store_n(&c->windowed, 1, __ATOMIC_RELEASE);
    if (l->o->single_file || !l->o->window_ended) {
        __atomic_add_fetch(&c->written, 1, __ATOMIC_RELEASE);
        return;
    }
    control_wait_agents(l, w->number);
    launcher_file_flush_exits(l->file); /* the window's database has the ends reaped so far */
    char name[sizeof c->last_output];
    name[0] = '\0';
    int rc = l->o->window_ended(l->o->window_ctx, w, name, sizeof name);
    w->written = rc == 0;
    if (rc == 0)
        snprintf(c->last_output, sizeof c->last_output, "%s", name);
    else
        __atomic_add_fetch(&c->failed, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&c->written, 1, __ATOMIC_RELEASE);
}

/* Takes sig if it is pending; 1 when it was. */
static int control_take(int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct timespec now = {0, 0};
    return sigtimedwait(&one, NULL, &now) == sig;
}

/* Two different signals pending at once come lowest number first (SIGUSR1), whatever order
 * they were sent in: a stop and a start sent back to back while recording (a start during a
 * stop's import) would be taken as start (nothing to do) then stop. So when both are pending,
 * the one that changes the state goes first: while recording the stop, then the start. */
/* --ring: SIGUSR1 (lantern dump, an NVTX mark) or SIGUSR2 dumps the ring. A trigger that comes
 * while a dump is written is pending at its end: counted (triggers_in_dump), said, and dumped
 * next; more than one pending at once are one for the kernel. */
static void control_ring_trigger(struct launcher *l)
{
    struct trace_control *c = l->control;
    ring_dump(l, control_now_ns(), 0);
    while (control_take(SIGUSR1) || control_take(SIGUSR2)) {
        __atomic_add_fetch(&c->triggers_in_dump, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&c->triggers, 1, __ATOMIC_RELEASE);
        fprintf(stderr, "lantern: a trigger came while dump %llu was written: dump %llu follows\n",
                (unsigned long long)c->dump, (unsigned long long)c->dump + 1);
        ring_dump(l, control_now_ns(), 0);
    }
}

static void *control_main(void *arg)
{
    struct launcher *l = arg;
    sigset_t set;
    control_signals(&set);
    while (!__atomic_load_n(&l->control_quit, __ATOMIC_ACQUIRE)) {
        struct timespec tick = {0, 20000000}; /* 20 ms: how soon the run's end is seen */
        int sig = sigtimedwait(&set, NULL, &tick);
        if (l->control->ring_ns)
            ring_sweep(l, control_now_ns());
        if (sig > 0 && l->control->ring_ns) {
            __atomic_add_fetch(&l->control->triggers, 1, __ATOMIC_RELEASE);
            control_ring_trigger(l);
            continue;
        }
        if (sig == SIGUSR1 && l->control->recording && control_take(SIGUSR2)) {
            __atomic_add_fetch(&l->control->triggers, 1, __ATOMIC_RELEASE);
            control_stop_window(l, 0);
        }
        if (sig == SIGUSR1)
            control_start_window(l);
        else if (sig == SIGUSR2)
            control_stop_window(l, 0);
        if (sig > 0)
            __atomic_add_fetch(&l->control->triggers, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int control_start(struct launcher *l)
{
    if (!l->control)
        return 0;
    /* it takes no other signal: those for the program (forwarded) and, after the program's
     * end, those for lantern itself (held, then acting) stay the main thread's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&l->control_thread, NULL, control_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return launcher_fail(l, -rc, "cannot start the control thread: %s", strerror(rc));
    l->control_running = 1;
    return 0;
}

void control_finish(struct launcher *l)
{
    if (!l->control)
        return;
    int ran = l->control_running;
    if (l->control_running) {
        __atomic_store_n(&l->control_quit, 1, __ATOMIC_RELEASE);
        pthread_join(l->control_thread, NULL);
        l->control_running = 0;
    }
    __atomic_store_n(&l->control->ended, 1, __ATOMIC_RELEASE);
    if (ran && l->control->ring_ns) /* the program's end is a trigger */
        ring_dump(l, control_now_ns(), 1);
    control_stop_window(l, 1);
}

void control_release(struct launcher *l)
{
    control_finish(l);
    if (l->control)
        munmap(l->control, TRACE_CONTROL_BYTES);
    l->control = NULL;
    free(l->windows);
    l->windows = NULL;
    l->window_count = l->window_cap = 0;
}

int launcher_windowed(const struct launcher *l)
{
    return l->o->start_paused || l->o->single_file || l->stopped_once;
}

/* ---- finding a running session (lantern start|stop) -------------------------------------- */

/* The session folder whose control file pid maps (/proc/PID/maps: the launcher and every
 * traced process map it), into dir; 0, -ENOENT none, -EACCES not allowed to look (another
 * user's). */
static int control_dir_of_pid(long pid, char *dir, size_t cap)
{
    char path[64], line[4096 + 256];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
    const char suffix[] = "/" TRACE_CONTROL_FILE;
    int found = -ENOENT;
    while (found < 0 && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        char *name = strchr(line, '/');
        size_t n = name ? strlen(name) : 0;
        if (n > sizeof suffix - 1 && !strcmp(name + n - (sizeof suffix - 1), suffix) &&
            n - (sizeof suffix - 1) < cap) {
            snprintf(dir, cap, "%.*s", (int)(n - (sizeof suffix - 1)), name);
            found = 0;
        }
    }
    if (ferror(f) && found < 0)
        found = errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
    fclose(f);
    return found;
}

/* Reads the control file of dir: its launcher's pid, checked to be a live process that maps
 * this very file (not a later process that took the pid). 0; -ENOENT no run; -EACCES another
 * user's. */
static int control_check_dir(const char *dir, int *launcher_pid)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -ENOENT;
    struct stat st;
    int rc = -ENOENT;
    int fd = openat(dfd, TRACE_CONTROL_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct trace_control c;
    if (fstat(dfd, &st) == 0 && st.st_uid != getuid())
        rc = -EACCES;
    else if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
             pread(fd, &c, sizeof c, 0) == (ssize_t)sizeof c &&
             !memcmp(c.magic, TRACE_CONTROL_MAGIC, 8) && !c.ended && c.launcher_pid > 0) {
        char mapped[4096];
        char real[4096];
        if (control_dir_of_pid((long)c.launcher_pid, mapped, sizeof mapped) == 0 &&
            realpath(dir, real) && !strcmp(mapped, real)) {
            *launcher_pid = (int)c.launcher_pid;
            rc = 0;
        }
    } else if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid != getuid())
        rc = -EACCES;
    if (fd >= 0)
        close(fd);
    close(dfd);
    return rc;
}

int launcher_control_find(const char *pid_text, const char *session, char *session_dir, size_t cap,
                          int *launcher_pid, char *error, size_t error_cap)
{
    if (session) {
        char raw[4096];
        snprintf(raw, sizeof raw, "%s.raw", session);
        const char *dir = session;
        struct stat st;
        if (lstat(session, &st) == 0 && S_ISDIR(st.st_mode))
            dir = session;
        else if (lstat(raw, &st) == 0 && S_ISDIR(st.st_mode))
            dir = raw; /* the database's name: its session folder */
        int rc = control_check_dir(dir, launcher_pid);
        if (rc == -EACCES)
            snprintf(error, error_cap, "session '%s' belongs to another user", dir);
        else if (rc < 0)
            snprintf(error, error_cap, "no running 'lantern profile' session in '%s'", dir);
        else if (!realpath(dir, session_dir))
            rc = -errno;
        else if (strlen(session_dir) >= cap)
            rc = -ENAMETOOLONG;
        return rc;
    }
    if (pid_text) {
        char *end;
        long pid = strtol(pid_text, &end, 10);
        struct stat st;
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/%ld", pid);
        if (*end || pid <= 0 || end == pid_text || stat(proc, &st) < 0) {
            snprintf(error, error_cap, "no process with pid '%s'", pid_text);
            return -ESRCH;
        }
        if (st.st_uid != getuid()) {
            snprintf(error, error_cap, "pid %ld belongs to another user", pid);
            return -EACCES;
        }
        char dir[4096];
        if (control_dir_of_pid(pid, dir, sizeof dir) < 0 ||
            control_check_dir(dir, launcher_pid) < 0) {
            snprintf(error, error_cap,
                     "pid %ld is not in a running 'lantern profile' session (give the pid of "
                     "lantern or of a program it traces)",
                     pid);
            return -ENOENT;
        }
        snprintf(session_dir, cap, "%s", dir);
        return 0;
    }
    /* neither: the one session of this user that runs (its launcher maps the file) */
    DIR *d = opendir("/proc");
    size_t found = 0;
    char dir[4096], pids[256] = "";
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        long pid = strtol(e->d_name, NULL, 10);
        int owner;
        if (control_dir_of_pid(pid, dir, sizeof dir) < 0 || control_check_dir(dir, &owner) < 0 ||
            owner != pid)
            continue; /* only the launchers: not each traced process of the same session */
        if (!found++) {
            snprintf(session_dir, cap, "%s", dir);
            *launcher_pid = owner;
        }
        size_t len = strlen(pids);
        snprintf(pids + len, sizeof pids - len, "%s%ld", len ? ", " : "", pid);
    }
    if (d)
        closedir(d);
    if (found == 1)
        return 0;
    if (!found)
        snprintf(error, error_cap,
                 "no running 'lantern profile' session of yours (start one "
                 "with 'lantern profile --start-paused -- COMMAND')");
    else
        snprintf(error, error_cap,
                 "%zu 'lantern profile' sessions are running (lantern pids %s): "
                 "name one, 'lantern start PID' or '--session DIR'",
                 found, pids);
    return found ? -EEXIST : -ENOENT;
}
