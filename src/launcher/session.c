/* The session folder OUTPUT.raw/ where every profiled process and the launcher write their raw
 * files: its creation after checking the outputs, its removal (launcher.h; OUTPUT's name is
 * output_name.c's). Nothing here follows a symbolic link it did not create. A run owns its
 * folder, hence its output, from its creation to its removal: an exclusive flock(2) on the
 * folder, held until launcher_release closes it, makes a second run on the same output refuse
 * at once instead of replacing the first one's raw files (--force) and importing its own.
 * Also the walk over the session's live agents (their buffer files), which the pause
 * (control.c) and the ring's dump (ring.c) both wait on. */
#include "launcher/launcher_internal.h"
#include "trace/control.h"
#include "trace/process.h"
#include "trace/segments.h"
#include "trace/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether name ends with suffix, and has more before it. */
static int has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), n = strlen(suffix);
    return len > n && !strcmp(name + len - n, suffix);
}

/* The folder is opened with O_NOFOLLOW and its files are removed relative to that descriptor. */
int launcher_remove_session(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int err = errno;
        close(fd);
        return -err;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if ((has_suffix(e->d_name, ".lrt") || has_suffix(e->d_name, ".lrb") ||
             !strcmp(e->d_name, TRACE_CONTROL_FILE) ||
             has_suffix(e->d_name, TRACE_UNTRACED_SUFFIX) ||
             has_suffix(e->d_name, TRACE_SEGMENT_SUFFIX)) &&
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(fd, e->d_name, 0);
    }
    closedir(d);
    return rmdir(dir) < 0 ? -errno : 0;
}

int launcher_untraced_processes(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += has_suffix(e->d_name, TRACE_UNTRACED_SUFFIX);
    if (d)
        closedir(d);
    return n;
}

/* Takes the lock of the session folder open as fd. Returns 0 (taken, or a file system without
 * locks: no protection there), or 1 when another run holds it. */
static int lock_session(int fd)
{
    return flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

static int session_in_use(struct launcher *l)
{
    return launcher_fail(l, -EBUSY,
                         "session folder '%s' is in use by another 'lantern profile' run (wait "
                         "for it to end, or use -o another name)",
                         l->raw_dir);
}

/* An existing session folder: refused when it is a link or another run's; replaced with force
 * when it holds only raw files (under its lock, so no run can take it meanwhile). */
static int replace_old_session(struct launcher *l, const struct stat *st)
{
    const char *raw_dir = l->raw_dir;
    if (S_ISLNK(st->st_mode))
        return launcher_fail(l, -ELOOP,
                             "session folder '%s' is a symbolic link; not following it "
                             "(remove it, or use -o another name)",
                             raw_dir);
    int fd = open(raw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = 0;
    if (fd >= 0 && lock_session(fd))
        rc = session_in_use(l);
    else if (!l->o->force)
        rc = launcher_fail(
            l, -EEXIST,
            "session folder '%s' exists (use --force to replace it, or 'lantern import' it)",
            raw_dir);
    else if ((rc = launcher_remove_session(raw_dir)) < 0)
        rc = launcher_fail(l, rc, "cannot replace session folder '%s': %s", raw_dir,
                           errno == ENOTEMPTY || errno == EEXIST
                               ? "it holds files that are not Lantern raw traces"
                               : strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Before the program runs: the database must be a file that is free (or replaced with
 * force), and the session folder free, or replaced with force when it holds only raw files
 * and no run holds it. The folder is created (mkdir fails on an existing name: another run
 * made it first), opened and locked; it must still be the folder at that name (another run
 * may have replaced it between the mkdir and the lock). */
int session_prepare(struct launcher *l)
{
    const struct launcher_options *o = l->o;
    const char *raw_dir = l->raw_dir;
    struct stat st;
    if (lstat(o->output, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return launcher_fail(
                l, -EISDIR, "'%s' is a folder; -o names the database file to write", o->output);
        if (!o->force)
            return launcher_fail(l, -EEXIST,
                                 "'%s' exists (use --force to replace it, or -o another name)",
                                 o->output);
    }
    int rc;
    if (lstat(raw_dir, &st) == 0 && (rc = replace_old_session(l, &st)) < 0)
        return rc;
    if (mkdir(raw_dir, 0755) < 0)
        return errno == EEXIST ? session_in_use(l)
                               : launcher_fail(l, -errno, "cannot create session folder '%s': %s",
                                               raw_dir, strerror(errno));
    l->dir_fd = open(raw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (l->dir_fd < 0 && errno == ENOENT) /* another run replaced it (--force) before our lock */
        return session_in_use(l);
    if (l->dir_fd < 0)
        return launcher_fail(l, -errno, "cannot open session folder '%s': %s", raw_dir,
                             strerror(errno));
    struct stat opened;
    if (lock_session(l->dir_fd) || fstat(l->dir_fd, &opened) < 0 || lstat(raw_dir, &st) < 0 ||
        st.st_dev != opened.st_dev || st.st_ino != opened.st_ino) {
        close(l->dir_fd);
        l->dir_fd = -1;
        return session_in_use(l);
    }
    return 0;
}

int session_agents_all(struct launcher *l, int (*done)(int pool_fd, uint64_t arg), uint64_t arg)
{
    int fd = openat(l->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    int all = 1;
    for (struct dirent *e; all && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        unsigned long long start = *end == '-' ? strtoull(end + 1, &end, 10) : 0;
        if (pid <= 0 || strcmp(end, ".lrb") != 0 || !trace_process_alive(pid, start))
            continue;
        int pool = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        all = pool < 0 || done(pool, arg);
        if (pool >= 0)
            close(pool);
    }
    closedir(d);
    return all;
}
