/* After the profiled command ends: the traced processes that still write their raw files
 * (daemons, double forks, setsid children) and the command's descendants that still run are
 * waited for, up to --wait-timeout, and those still running at the end are named, so that
 * nothing a writer may still write is removed (launcher.h, launcher_wait_writers). The
 * launcher is the descendants' subreaper (child.c): while one runs, the launcher has a child,
 * and each is reaped as it ends; a daemon that has not loaded the agent yet is thus waited
 * for too. A raw file "<pid>-<start_ns>.lrt" is still being
 * written while it has no TRACE_PROCESS_END and its process lives on with the agent: the pid
 * exists, is not a zombie, started no later than the file (a later start is a reused pid), and
 * still maps the agent library (one that exec'd an untraced program writes nothing more). A
 * process of the session (LANTERN_SESSION_DIR in its environment) that maps the agent but has
 * no file yet is waited for too: a traced process forked it an instant ago, and its agent
 * makes its file when it first runs. */
#include "launcher/launcher_internal.h"
#include "trace/codec.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/process.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The first poll comes this soon after the command's end, then twice as late each time up to
 * the longest interval: a writer that ends at once costs ~1 ms, one that runs on costs a few
 * /proc reads ten times a second. */
#define WAIT_FIRST_POLL_NS 1000000ull
#define WAIT_LONGEST_POLL_NS 100000000ull
/* A live file is decoded again (to look for its end record) at most this often. */
#define WAIT_RESCAN_NS 1000000000ull

/* One raw file of an agent, as last seen. */
struct writer_file {
    char name[64];
    long pid;
    uint64_t start_ns; /* CLOCK_MONOTONIC, from the name */
    int done;          /* its end record was seen, or its process is gone */
    uint64_t scanned_size, scanned_at;
    dev_t exe_dev; /* its program when its maps were read (maps are read again after an exec) */
    ino_t exe_ino;
};

struct writer_set {
    struct writer_file *v;
    size_t count, cap;
    long *unborn; /* processes of the session with the agent and no file yet */
    size_t unborn_count, unborn_cap;
    const char *dir, *agent_name; /* the session folder; the agent library's file name */
};

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t read_small_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[len] = '\0';
    return len;
}

/* Whether /proc/<pid>/<file> has an entry (a line of maps: separator '\n'; a variable of
 * environ: '\0') that holds text (whole: that is text); an unreadable file (another user's
 * process) has none. */
static int proc_file_has(long pid, const char *file, int separator, const char *text, int whole)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char *entry = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getdelim(&entry, &cap, separator, f) > 0)
        found = whole ? strcmp(entry, text) == 0 : strstr(entry, text) != NULL;
    free(entry);
    fclose(f);
    return found;
}

static int maps_agent(const struct writer_set *set, long pid)
{
    return proc_file_has(pid, "maps", '\n', set->agent_name, 0);
}

/* Whether the file holds its process's end record (read up to any damage: a chunk being
 * written is not there yet). */
static int writer_file_ended(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct trace_reader r;
    if (trace_reader_open(&r, path) < 0) {
        trace_reader_close(&r);
        return 0;
    }
    unsigned type;
    struct trace_fields fields;
    int ended = 0;
    while (trace_reader_next(&r, &type, &fields) == 1)
        ended = type == TRACE_PROCESS_END;
    trace_reader_close(&r);
    return ended;
}

/* Whether a live writer still maps the agent: read from its maps (which may be long) at
 * first sight and again only when its program changed (an exec). */
static int still_maps_agent(const struct writer_set *set, struct writer_file *w)
{
    char path[64];
    struct stat exe;
    snprintf(path, sizeof path, "/proc/%ld/exe", w->pid);
    if (stat(path, &exe) < 0)
        return maps_agent(set, w->pid); /* not ours to read: maps tell (or say no) */
    if (w->exe_ino && exe.st_dev == w->exe_dev && exe.st_ino == w->exe_ino)
        return 1;
    if (!maps_agent(set, w->pid))
        return 0;
    w->exe_dev = exe.st_dev;
    w->exe_ino = exe.st_ino;
    return 1;
}

/* Adds the agents' raw files that appeared since the last look (a process the program
 * started may itself start others). Returns 0, -ENOMEM, or opendir's -errno (the folder is gone);
 * errno is set too. */
static int writer_set_update(struct writer_set *set)
{
    DIR *d = opendir(set->dir);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        unsigned long long start;
        int end = 0;
        if (sscanf(e->d_name, "%ld-%llu.lrt%n", &pid, &start, &end) != 2 || e->d_name[end] ||
            pid <= 0 || strlen(e->d_name) >= sizeof set->v[0].name)
            continue;
        size_t i = 0;
        while (i < set->count && strcmp(set->v[i].name, e->d_name))
            i++;
        if (i < set->count)
            continue;
        if (set->count == set->cap) {
            size_t cap = set->cap ? set->cap * 2 : 16;
            struct writer_file *grown = realloc(set->v, cap * sizeof *grown);
            if (!grown) {
                closedir(d);
                return -ENOMEM;
            }
            set->v = grown;
            set->cap = cap;
        }
        struct writer_file *w = &set->v[set->count++];
        memset(w, 0, sizeof *w);
        memcpy(w->name, e->d_name, strlen(e->d_name) + 1); /* shorter than name: checked above */
        w->pid = pid;
        w->start_ns = start;
    }
    closedir(d);
    return 0;
}

/* Looks at every file not yet done; returns how many are still being written. */
static size_t writer_set_poll(struct writer_set *set)
{
    size_t writing = 0;
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    for (size_t i = 0; i < set->count; i++) {
        struct writer_file *w = &set->v[i];
        if (w->done)
            continue;
        if (!trace_process_alive(w->pid, w->start_ns) || !still_maps_agent(set, w)) {
            w->done = 1;
            continue;
        }
        /* alive: its end record may be out already (it is exiting); decode again only when
         * the file grew, and not more often than WAIT_RESCAN_NS */
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", set->dir, w->name);
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        if (size != w->scanned_size && (!w->scanned_at || now - w->scanned_at >= WAIT_RESCAN_NS)) {
            w->scanned_size = size;
            w->scanned_at = now;
            w->done = writer_file_ended(set->dir, w->name);
        }
        writing += !w->done;
    }
    return writing;
}

/* Finds the processes of the session that map the agent but have no raw file yet (their
 * agent makes it when they first run after the fork). Returns how many. */
static size_t writer_set_unborn(struct writer_set *set)
{
    char wanted[4200];
    snprintf(wanted, sizeof wanted, "%s=%s", trace_env_name(TRACE_ENV_SESSION_DIR), set->dir);
    set->unborn_count = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid())
            continue;
        size_t i = 0;
        while (i < set->count && set->v[i].pid != pid)
            i++;
        if (i < set->count || !trace_process_alive(pid, UINT64_MAX / 2) ||
            !proc_file_has(pid, "environ", '\0', wanted, 1) || !maps_agent(set, pid))
            continue;
        if (set->unborn_count == set->unborn_cap) {
            size_t cap = set->unborn_cap ? set->unborn_cap * 2 : 8;
            long *grown = realloc(set->unborn, cap * sizeof *grown);
            if (!grown)
                break; /* the ones found are enough to go on waiting */
            set->unborn = grown;
            set->unborn_cap = cap;
        }
        set->unborn[set->unborn_count++] = pid;
    }
    if (d)
        closedir(d);
    return set->unborn_count;
}

/* A signal that ends lantern (held since the command ended) stops the wait: the import that
 * follows sees it too, stops, and says how to import the folder later. */
static int ending_signal_pending(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 && (sigismember(&pending, SIGINT) == 1 ||
                                         sigismember(&pending, SIGTERM) == 1 ||
                                         sigismember(&pending, SIGHUP) == 1);
}

/* "pid 1234 (daemon --port 80)": its command line, control characters as '?', cut. */
static void describe_process(long pid, char *out, size_t cap)
{
    char path[64], cmd[96];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    size_t len = read_small_file(path, cmd, sizeof cmd);
    while (len && !cmd[len - 1])
        len--;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)cmd[i] < 0x20 || cmd[i] == 0x7f)
            cmd[i] = cmd[i] ? '?' : ' ';
    cmd[len] = '\0';
    if (len == sizeof cmd - 2) /* read_small_file keeps a byte for the NUL */
        snprintf(cmd + len - 3, 4, "...");
    snprintf(out, cap, "pid %ld (%s)", pid, len ? cmd : "?");
}

/* Appends "pid N (command)" to l->running, ", "-separated. */
static void name_running(struct launcher *l, long pid)
{
    char one[160];
    describe_process(pid, one, sizeof one);
    size_t used = l->running ? strlen(l->running) : 0, add = strlen(one) + 2;
    char *grown = realloc(l->running, used + add + 1);
    if (!grown)
        return;
    l->running = grown;
    snprintf(l->running + used, add + 1, "%s%s", used ? ", " : "", one);
}

/* Whether pid is already named in the set: a writer still writing, or a process yet to make
 * its file. */
static int named_in_set(const struct writer_set *set, long pid)
{
    for (size_t i = 0; i < set->count; i++)
        if (!set->v[i].done && set->v[i].pid == pid)
            return 1;
    for (size_t i = 0; i < set->unborn_count; i++)
        if (set->unborn[i] == pid)
            return 1;
    return 0;
}

/* Names the launcher's children still running that the set does not name (descendants of the
 * command with no raw file being written: not traced yet, or no more); returns how many. */
static size_t name_live_children(struct launcher *l, const struct writer_set *set)
{
    size_t named = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end, state;
        long pid = strtol(e->d_name, &end, 10), ppid;
        unsigned long long started;
        if (*end || pid <= 0 || trace_proc_stat(pid, &state, &ppid, &started) < 0 ||
            ppid != (long)getpid() || state == 'Z' || state == 'X' || named_in_set(set, pid) ||
            child_is_helper((pid_t)pid))
            continue;
        name_running(l, pid);
        named++;
    }
    if (d)
        closedir(d);
    return named;
}

int launcher_wait_writers(struct launcher *l)
{
    const struct launcher_options *o = l->o;
    const char *agent_name = l->agent && strrchr(l->agent, '/') ? strrchr(l->agent, '/') + 1
                                                                 : "liblantern-agent.so";
    struct writer_set set = {.dir = l->session_dir, .agent_name = agent_name};
    uint64_t start = clock_ns(CLOCK_MONOTONIC), poll_ns = WAIT_FIRST_POLL_NS;
    uint64_t timeout_ns = o->wait_primary ? 0 : (uint64_t)(o->wait_timeout_s * 1e9);
    size_t writing;
    for (;;) {
        int rc = writer_set_update(&set);
        if (rc < 0) {
            free(set.v);
            free(set.unborn);
            return launcher_fail(l, rc, "cannot read the session folder '%s': %s", l->raw_dir,
                                 strerror(-rc));
        }
        int children = l->reaper && child_reap_ended(l);
        writing = writer_set_poll(&set) + writer_set_unborn(&set);
        uint64_t waited = clock_ns(CLOCK_MONOTONIC) - start;
        if (!writing && !children)
            break;
        l->wait_interrupted = ending_signal_pending();
        if (waited >= timeout_ns || l->wait_interrupted)
            break;
        uint64_t nap = poll_ns < timeout_ns - waited ? poll_ns : timeout_ns - waited;
        struct timespec ts = {(time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull)};
        nanosleep(&ts, NULL);
        if (poll_ns < WAIT_LONGEST_POLL_NS)
            poll_ns *= 2;
    }
    free(l->running);
    l->running = NULL;
    for (size_t i = 0; i < set.count; i++)
        if (!set.v[i].done)
            name_running(l, set.v[i].pid);
    for (size_t i = 0; i < set.unborn_count; i++)
        name_running(l, set.unborn[i]);
    l->untraced_running = l->reaper ? name_live_children(l, &set) : 0;
    l->still_writing = writing + l->untraced_running;
    free(set.v);
    free(set.unborn);
    return 0;
}
