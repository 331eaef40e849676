/* The flight recorder's dump (lantern profile --ring SEC, docs/long-runs.md): the agents keep
 * their events in segment files that they delete once older than the ring (trace/segments.h);
 * at a trigger (lantern dump or SIGUSR1 to lantern, an NVTX mark, the program's end) the
 * launcher asks them to write what they hold (session.lrc's dump; each answers in its buffer
 * file), joins each process's .lrt and its segments into one raw file of a folder of the
 * session, has that folder imported keeping the ring's last SEC seconds before the trigger
 * (launcher_options.dumped), and removes it. */
#include "launcher/launcher_internal.h"
#include "trace/control.h"
#include "trace/pool_file.h"
#include "trace/process.h"
#include "trace/segments.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RING_DUMP_DIR "dump.tmp"
/* The longest wait for the agents to write what they hold (they do within ~10 ms: a drain);
 * one that does not answer (stopped in a debugger) is dumped as its files are. */
#define RING_SETTLE_MAX_MS 2000

/* Whether the agent of buffer file fd has written what it held for dump n, or needs not. */
static int ring_pool_dumped(int fd, uint64_t n)
{
    struct pool_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, POOL_FILE_MAGIC, 8))
        return 1;
    return h.ended || h.dumped >= n;
}

static int ring_compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The numbers of the segments of trace file lrt_name in the session, sorted (malloc'd). */
static uint64_t *ring_segments_of(struct launcher *l, const char *lrt_name, size_t *count)
{
    *count = 0;
    int fd = openat(l->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint64_t *numbers = NULL;
    size_t cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        uint64_t n = trace_segment_number(e->d_name, lrt_name);
        if (!n)
            continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *grown = realloc(numbers, cap * sizeof *grown);
            if (!grown)
                break;
            numbers = grown;
        }
        numbers[(*count)++] = n;
    }
    closedir(d);
    if (numbers)
        qsort(numbers, *count, sizeof *numbers, ring_compare_u64);
    return numbers;
}

/* dir/name: the trace file's chunks and those of each segment kept, in their order (one
 * deleted meanwhile is skipped: the importer sees the gap). 0, -ENOMEM, or the failed call's
 * -errno (errno set too; trace_segment_path's code without it). */
static int ring_join(struct launcher *l, const char *dir, const char *name)
{
    char dst[4352];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    size_t count;
    uint64_t *numbers = ring_segments_of(l, name, &count);
    char **paths = calloc(count + 1, sizeof *paths);
    int rc = paths ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i <= count; i++) {
        paths[i] = malloc(4400);
        if (!paths[i])
            rc = -ENOMEM;
        else if (i == 0)
            snprintf(paths[i], 4400, "%s/%s", l->session_dir, name);
        else
            rc = trace_segment_path(paths[i], 4400, paths[0], numbers[i - 1]);
    }
    int out = rc == 0 ? open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
    if (rc == 0 && out < 0)
        rc = -errno;
    else if (rc == 0)
        rc = trace_files_join(out, (const char *const *)paths, count + 1);
    if (out >= 0 && close(out) < 0)
        rc = -errno;
    for (size_t i = 0; paths && i <= count; i++)
        free(paths[i]);
    free(paths);
    free(numbers);
    return rc;
}

/* Removes the dump folder and what it holds (names without a slash: ours). */
static void ring_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4352];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The folder of the dump: every raw file of the session joined with its segments. 0, or
 * ring_join's error or the failed call's -errno (errno set too). */
static int ring_assemble(struct launcher *l, const char *dir)
{
    ring_remove_dir(dir); /* one a failed dump left */
    if (mkdir(dir, 0755) < 0)
        return -errno;
    int fd = openat(l->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return -err;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len > 4 && !strcmp(e->d_name + len - 4, ".lrt") &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            rc = ring_join(l, dir, e->d_name);
    }
    closedir(d);
    return rc;
}

void ring_dump(struct launcher *l, uint64_t trigger_ns, int program_ended)
{
    struct trace_control *c = l->control;
    uint64_t n = __atomic_add_fetch(&c->dump, 1, __ATOMIC_ACQ_REL);
    struct timespec poll = {0, 2000000}; /* 2 ms */
    for (int waited = 0; !program_ended && waited < RING_SETTLE_MAX_MS &&
                         !session_agents_all(l, ring_pool_dumped, n);
         waited += 2)
        nanosleep(&poll, NULL);
    launcher_file_flush_exits(l->file); /* the ends reaped so far */
    /* a process gone (a crash) left its last events in its buffer file */
    pool_salvage_session(l->session_dir, trace_process_alive);
    char dir[4096], name[sizeof c->last_dump] = "";
    snprintf(dir, sizeof dir, "%s/" RING_DUMP_DIR, l->session_dir);
    uint64_t ring_ns = c->ring_ns, from = trigger_ns > ring_ns ? trigger_ns - ring_ns : 0;
    int rc = ring_assemble(l, dir);
    if (rc < 0)
        fprintf(stderr, "lantern: cannot write dump %llu of the ring into '%s': %s\n",
                (unsigned long long)n, dir, strerror(errno));
    else if (l->o->dumped)
        rc = l->o->dumped(l->o->window_ctx, n, dir, from, trigger_ns, name, sizeof name);
    ring_remove_dir(dir);
    if (rc == 0)
        snprintf(c->last_dump, sizeof c->last_dump, "%s", name);
    else
        __atomic_add_fetch(&c->dumps_failed, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&c->dumps_written, 1, __ATOMIC_RELEASE);
}

/* Whether segment file name (<pid>-<start_ns>.<n>.lrs) belongs to a process that ended and
 * whose buffer file is gone (salvaged, or it ended cleanly): no one writes it again. */
static int ring_segment_orphaned(int dir_fd, const char *name)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (end == name || *end != '-')
        return 0; /* launcher.<n>.lrs: the launcher's own, rotated by launcher_file.c */
    char *start_end;
    unsigned long long start = strtoull(end + 1, &start_end, 10);
    if (start_end == end + 1 || *start_end != '.' || trace_process_alive(pid, start))
        return 0;
    char pool[300];
    snprintf(pool, sizeof pool, "%.*s.lrb", (int)(start_end - name), name);
    return faccessat(dir_fd, pool, F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

void ring_sweep(struct launcher *l, uint64_t now_ns)
{
    uint64_t ring_ns = l->control->ring_ns, segment_ns = trace_segment_ns(ring_ns);
    if (now_ns - l->ring_swept_ns < segment_ns)
        return;
    l->ring_swept_ns = now_ns;
    /* a process gone: its buffered events into its newest segment, its buffer file removed */
    pool_salvage_session(l->session_dir, trace_process_alive);
    int fd = openat(l->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return; /* tried again a segment later */
    }
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name), suffix = strlen(TRACE_SEGMENT_SUFFIX);
        struct stat st;
        if (len <= suffix || strcmp(e->d_name + len - suffix, TRACE_SEGMENT_SUFFIX) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        /* its last write older than the ring and a segment: no dump from now on holds any of
         * its events (their times are before the write) */
        int64_t age_ns = (int64_t)(real.tv_sec - st.st_mtim.tv_sec) * 1000000000 +
                         (real.tv_nsec - st.st_mtim.tv_nsec);
        if (age_ns > (int64_t)(ring_ns + segment_ns) && ring_segment_orphaned(dirfd(d), e->d_name))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}
