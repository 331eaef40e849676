/* The session folder OUTPUT.raw/ where every profiled process and the launcher write their raw
 * files: its creation after checking the outputs, its removal (launcher.h; OUTPUT's name is
 * output_name.c's). Nothing here follows a symbolic link it did not create. */
#include "launcher/launcher_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder is opened with O_NOFOLLOW and its files are removed relative to that descriptor. */
int launcher_remove_session(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len > 4 && (!strcmp(e->d_name + len - 4, ".lrt") || !strcmp(e->d_name + len - 4, ".lrb")) &&
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(fd, e->d_name, 0);
    }
    closedir(d);
    return rmdir(dir);
}

/* Before the program runs: the database must be a file that is free (or replaced with
 * force), and the session folder free, or replaced with force when it holds only raw files. */
int session_prepare(struct launcher *l)
{
    const struct launcher_options *o = l->o;
    const char *raw_dir = l->raw_dir;
    struct stat st;
    if (lstat(o->output, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return launcher_fail(l, "'%s' is a folder; -o names the database file to write",
                                 o->output);
        if (!o->force)
            return launcher_fail(l, "'%s' exists (use --force to replace it, or -o another name)",
                                 o->output);
    }
    if (lstat(raw_dir, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return launcher_fail(l,
                                 "session folder '%s' is a symbolic link; not following it "
                                 "(remove it, or use -o another name)",
                                 raw_dir);
        if (!o->force)
            return launcher_fail(
                l, "session folder '%s' exists (use --force to replace it, or 'lantern import' it)",
                raw_dir);
        if (launcher_remove_session(raw_dir) < 0)
            return launcher_fail(l, "cannot replace session folder '%s': %s", raw_dir,
                                 errno == ENOTEMPTY || errno == EEXIST
                                     ? "it holds files that are not Lantern raw traces"
                                     : strerror(errno));
    }
    if (mkdir(raw_dir, 0755) < 0)
        return launcher_fail(l, "cannot create session folder '%s': %s", raw_dir, strerror(errno));
    l->dir_fd = open(raw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (l->dir_fd < 0)
        return launcher_fail(l, "cannot open session folder '%s': %s", raw_dir, strerror(errno));
    return 0;
}
