/* Helpers the subcommands share: one-line errors, opening a report database with a clear
 * reason when it is not one, and running the importer with warnings and progress on stderr. */
#include "cli/cli.h"
#include "db/import.h"
#include "db/upgrade.h"
#include "output/fit.h"
#include "trace/pool_file.h"
#include "trace/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("lantern: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_ERROR;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("lantern: ", stderr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'lantern %s --help'.\n", cmd);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* Opens path read-only (one thread per connection: no mutex around every sqlite3_column_*
 * call, 12 % of `lantern analyze` on a 10 M-event database, docs/benchmarks.md). */
static int open_read_only(const char *path, sqlite3 **db)
{
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK)
        return CLI_EXIT_OK;
    cli_error("cannot open '%s': %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return CLI_EXIT_ERROR;
}

int cli_schema_version(const char *path, int *version)
{
    struct stat st;
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    if (stat(path, &st) < 0)
        return cli_error("cannot open '%s': %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cli_error("cannot open '%s': not a Lantern database (not a regular file)", path);
    if (open_read_only(path, &db) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    int rc = CLI_EXIT_OK;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &q,
                           NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW || sqlite3_column_int(q, 0) < UPGRADE_OLDEST_SCHEMA)
        rc = cli_error("cannot open '%s': not a Lantern database", path);
    else if ((*version = sqlite3_column_int(q, 0)) > IMPORT_SCHEMA_VERSION)
        rc = cli_error("cannot open '%s': schema version %d, this lantern reads versions %d to %d "
                       "(a newer Lantern wrote it)",
                       path, *version, UPGRADE_OLDEST_SCHEMA, IMPORT_SCHEMA_VERSION);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return rc;
}

/* A database of an older schema, read through an upgraded copy in $TMPDIR, gone once open (the
 * file itself is left as it is). */
static int open_upgraded(const char *path, int version, sqlite3 **db)
{
    const char *dir = getenv("TMPDIR");
    char *copy = NULL, err[512];
    if (asprintf(&copy, "%s/lantern-upgraded-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
        return cli_error("cannot open '%s': out of memory", path);
    int fd = mkstemp(copy), rc = CLI_EXIT_ERROR;
    if (fd < 0) {
        cli_error("cannot open '%s': cannot make its upgraded copy '%s': %s", path, copy,
                  strerror(errno));
        goto out;
    }
    close(fd);
    if (upgrade_database(path, version, copy, err, sizeof err) < 0)
        cli_error("cannot open '%s': %s", path, err);
    else if ((rc = open_read_only(copy, db)) == CLI_EXIT_OK)
        fprintf(stderr,
                "lantern: '%s' is of schema version %d (an older Lantern): reading an upgraded "
                "copy ('lantern upgrade %s' upgrades the file itself)\n",
                path, version, path);
    unlink(copy); /* an open database stays readable */
out:
    free(copy);
    return rc;
}

int cli_open_db(const char *path, sqlite3 **out)
{
    int version = 0;
    *out = NULL;
    if (cli_schema_version(path, &version) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (version < IMPORT_SCHEMA_VERSION)
        return open_upgraded(path, version, out);
    return open_read_only(path, out);
}

/* Progress of a long import: a live percentage on a terminal, else a line every few
 * seconds (so CI logs show a slow import is alive). Quiet for the first second. */
struct progress_state {
    struct timespec start, last;
    int tty, shown;
};

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress_state *p = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (seconds_between(&p->start, &now) < 1.0)
        return;
    if (!p->tty && p->shown && seconds_between(&p->last, &now) < 5.0)
        return;
    int percent = total ? (int)(100.0 * (double)done / (double)total) : 0;
    fprintf(stderr, p->tty ? "\rlantern: importing... %3d%%" : "lantern: importing... %d%%\n",
            percent);
    p->last = now;
    p->shown = 1;
}

static void show_warning(void *ctx, const char *msg)
{
    struct progress_state *p = ctx;
    if (p->tty && p->shown)
        fputc('\n', stderr);
    p->shown = 0;
    fprintf(stderr, "lantern: warning: %s\n", msg);
}

/* The signals that end lantern are held during an import and polled (import_options.cancel),
 * so that the import stops cleanly: no half-written database, and a line saying how to
 * finish it. Once the import has returned they are delivered and act as usual. */
static const int cli_ending_signals[] = {SIGINT, SIGTERM, SIGHUP};

int cli_signal_pending(void *ctx)
{
    (void)ctx;
    sigset_t pending;
    if (sigpending(&pending) < 0)
        return 0;
    for (size_t i = 0; i < sizeof cli_ending_signals / sizeof cli_ending_signals[0]; i++)
        if (sigismember(&pending, cli_ending_signals[i]) == 1)
            return 1;
    return 0;
}

void cli_hold_signals(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof cli_ending_signals / sizeof cli_ending_signals[0]; i++)
        sigaddset(&block, cli_ending_signals[i]);
    sigprocmask(SIG_BLOCK, &block, old);
}

int cli_import(const char *session_dir, const char *db_path, int force)
{
    return cli_import_windows(session_dir, db_path, force, NULL, 0);
}

int cli_import_windows(const char *session_dir, const char *db_path, int force,
                       const struct import_window *windows, size_t count)
{
    struct progress_state progress = {.tty = isatty(STDERR_FILENO)};
    clock_gettime(CLOCK_MONOTONIC, &progress.start);
    struct import_options opt = {.warn = show_warning,
                                 .progress = show_progress,
                                 .cancel = cli_signal_pending,
                                 .ctx = &progress,
                                 .replace = force,
                                 .windows = windows,
                                 .window_count = count};
    sigset_t old;
    cli_hold_signals(&old);
    /* first what the processes that are gone had buffered and not written (trace/pool_file.h) */
    pool_salvage_session(session_dir, trace_process_alive);
    int rc = import_session(session_dir, db_path, &opt, NULL);
    if (progress.tty && progress.shown)
        fputc('\n', stderr);
    if (rc == -EINTR)
        cli_error("import of '%s' interrupted; nothing written", session_dir);
    else if (rc == -EEXIST)
        cli_error("'%s' exists (use --force to replace it)", db_path);
    else if (rc == -EISDIR)
        cli_error("cannot write '%s': it is a folder", db_path);
    else if (rc == -ENOENT || rc == -ENOTDIR)
        cli_error("cannot import '%s': no such session folder", session_dir);
    else if (rc == -ENODATA)
        cli_error("cannot import '%s': no Lantern raw trace (*.lrt) in it", session_dir);
    else if (rc < 0)
        cli_error("cannot import '%s' into '%s': %s", session_dir, db_path,
                  rc == -EIO ? "database write failed" : strerror(-rc));
    fflush(stderr);
    sigprocmask(SIG_SETMASK, &old, NULL); /* a pending signal ends lantern here */
    return rc < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

int cli_output_open(struct cli_output *o, const char *path, int force)
{
    memset(o, 0, sizeof *o);
    o->force = force;
    if (!path || !strcmp(path, "-")) {
        o->file = stdout;
        return CLI_EXIT_OK;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return cli_error("cannot write '%s': it is a folder", path);
        if (!force)
            return cli_error("'%s' exists (use --force to replace it)", path);
    }
    if (asprintf(&o->temp, "%s.XXXXXX", path) < 0) {
        o->temp = NULL;
        return cli_error("cannot write '%s': out of memory", path);
    }
    int fd = mkstemp(o->temp); /* O_EXCL: never opens an existing file or a link */
    if (fd < 0) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        goto fail;
    }
    mode_t mask = umask(0); /* the mode a plain fopen would give */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    if (!(o->file = fdopen(fd, "w"))) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        close(fd);
        unlink(o->temp);
        goto fail;
    }
    o->path = path;
    return CLI_EXIT_OK;
fail:
    free(o->temp);
    o->temp = NULL;
    return CLI_EXIT_ERROR;
}

int cli_rename_output(const char *from, const char *to, int replace)
{
    if (replace)
        return rename(from, to) == 0 ? 0 : -errno;
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (link(from, to) < 0) /* a file system without RENAME_NOREPLACE */
        return -errno;
    unlink(from);
    return 0;
}

int cli_output_close(struct cli_output *o, int ok)
{
    const char *name = o->path;
    int err = 0;
    if (!o->file)
        return CLI_EXIT_ERROR;
    /* ferror: an earlier write failed; fflush tries the rest again and sets errno */
    errno = 0;
    if (fflush(o->file) != 0 || ferror(o->file))
        err = o->error ? o->error : errno ? errno : EIO;
    if (o->path) {
        if (!err && ok && fsync(fileno(o->file)) < 0)
            err = errno;
        if (fclose(o->file) != 0 && !err)
            err = errno;
        if (!err && ok && cli_rename_output(o->temp, o->path, o->force) < 0)
            err = errno;
        if (err || !ok)
            unlink(o->temp);
        free(o->temp);
    }
    o->file = NULL;
    o->temp = NULL;
    if (err && !o->path)
        return cli_error("cannot write the standard output: %s", strerror(err));
    if (err)
        return cli_error("cannot write '%s': %s", name,
                         err == EEXIST ? "it exists (use --force to replace it)" : strerror(err));
    return ok ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

FILE *cli_fit_begin(struct cli_fit *f, FILE *out, int width)
{
    memset(f, 0, sizeof *f);
    f->out = out;
    f->width = width;
    if (width > 0)
        f->held = open_memstream(&f->text, &f->len);
    return f->held ? f->held : out;
}

int cli_fit_end(struct cli_fit *f)
{
    if (!f->held) /* no limit, or nothing could be held: written as it came */
        return 0;
    int rc = fclose(f->held) == 0 ? 0 : -errno;
    if (rc == 0)
        output_wrap(f->out, f->text, f->len, f->width);
    free(f->text);
    f->held = NULL;
    return rc;
}
