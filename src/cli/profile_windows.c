/* lantern profile's databases of windows of time (profile_windows.h, docs/long-runs.md). */
#include "cli/profile_windows.h"
#include "cli/cli.h"
#include "db/import.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Database n: FILE for the first; then, where -o has %n, its next free number (run-1.db,
 * run-2.db, ...), else FILE with -n before its extension (out.db, out-2.db). 0 or -ENOSPC (no name). */
static int window_name(const struct profile_windows *pw, uint64_t number, char *out, size_t cap)
{
    const char *first = pw->output;
    if (number == 1) {
        snprintf(out, cap, "%s", first);
        return 0;
    }
    if (strstr(pw->pattern, "%n")) {
        char *name = NULL, *error = NULL;
        int rc = launcher_output_name(pw->pattern, &name, &error);
        if (rc == 0)
            snprintf(out, cap, "%s", name);
        free(name);
        free(error);
        return rc < 0 ? -ENOSPC : 0;
    }
    const char *slash = strrchr(first, '/'), *dot = strrchr(first, '.');
    size_t stem = dot && (!slash || dot > slash) && dot != (slash ? slash + 1 : first)
                      ? (size_t)(dot - first)
                      : strlen(first);
    snprintf(out, cap, "%.*s-%" PRIu64 "%s", (int)stem, first, number, first + stem);
    return 0;
}

/* Imports the windows (count of them; one database each unless single_file) into database
 * number's name; what says what they are ("window", "capture"). */
static int window_import_from(const struct profile_windows *pw, const char *raw_dir,
                              const char *what, uint64_t number,
                              const struct import_window *windows, size_t count, char *name,
                              size_t cap)
{
    if (pw->single_file)
        snprintf(name, cap, "%s", pw->output);
    else if (window_name(pw, number, name, cap) < 0)
        return cli_error("%s %" PRIu64 ": no free name for '%s'", what, number, pw->pattern);
    int rc = cli_import_windows(raw_dir, name, pw->force, windows, count);
    /* lantern runs on (a window, a dump): the import's heap goes back to the system, so its
     * memory stays that of the run, not of its largest import (a 114 MB dump left 181 MB) */
    malloc_trim(0);
    if (rc != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (pw->single_file)
        fprintf(stderr, "lantern: %zu %s%s written to %s\n", count, what, count == 1 ? "" : "s",
                name);
    else
        fprintf(stderr, "lantern: %s %" PRIu64 " written to %s\n", what, number, name);
    return CLI_EXIT_OK;
}

static int window_import(const struct profile_windows *pw, const char *what, uint64_t number,
                         const struct import_window *windows, size_t count, char *name, size_t cap)
{
    return window_import_from(pw, pw->raw_dir, what, number, windows, count, name, cap);
}

int profile_ring_dumped(void *ctx, uint64_t number, const char *dir, uint64_t from_ns,
                        uint64_t until_ns, char *name, size_t cap)
{
    const struct profile_windows *pw = ctx;
    struct import_window one = {from_ns, until_ns};
    return window_import_from(pw, dir, "dump", number, &one, 1, name, cap) == CLI_EXIT_OK ? 0
                                                                                          : -EIO;
}

int profile_window_ended(void *ctx, const struct launcher_window *w, char *name, size_t cap)
{
    const struct profile_windows *pw = ctx;
    struct import_window one = {w->start_ns, w->end_ns};
    return window_import(pw, "window", w->number, &one, 1, name, cap) == CLI_EXIT_OK ? 0 : -EIO;
}

int profile_windows_finish(const struct profile_windows *pw, const struct launcher *l, char *last,
                           size_t cap)
{
    if (!l->window_count) {
        cli_error("no window was started ('lantern start', or SIGUSR1 to lantern): nothing "
                  "written");
        return CLI_EXIT_OK;
    }
    struct import_window *all = calloc(l->window_count, sizeof *all);
    if (!all)
        return cli_error("out of memory");
    for (size_t i = 0; i < l->window_count; i++)
        all[i] = (struct import_window){l->windows[i].start_ns, l->windows[i].end_ns};
    int rc = CLI_EXIT_OK;
    if (pw->single_file)
        rc = window_import(pw, "window", 1, all, l->window_count, last, cap);
    for (size_t i = 0; !pw->single_file && i < l->window_count; i++)
        if (!l->windows[i].written &&
            window_import(pw, "window", l->windows[i].number, &all[i], 1, last, cap) != CLI_EXIT_OK)
            rc = CLI_EXIT_ERROR;
    free(all);
    return rc;
}

/* The windows a capture's instances make, as read so far. */
struct instance_list {
    struct import_window *windows;
    long n, cap;
    int open; /* profiler_row: a start call seen and no stop since */
};

static int instance_add(struct instance_list *l, struct import_window w)
{
    if (l->n == l->cap) {
        long cap = l->cap ? l->cap * 2 : 16;
        struct import_window *grown = realloc(l->windows, (size_t)cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        l->windows = grown;
        l->cap = cap;
    }
    l->windows[l->n++] = w;
    return 0;
}

/* One row of a capture's query into l: 0 for the next row, 1 when done (max reached), or
 * -ENOMEM. */
typedef int instance_row(struct instance_list *l, sqlite3_stmt *st, long max);

/* The instances that the rows of sql (?1 bound to bind, when not NULL) over the database at
 * path make, row by row. Returns how many, or -EIO/-ENOMEM. */
static long read_instances(const char *path, const char *sql, const char *bind, instance_row *row,
                           long max, struct import_window **out)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    struct instance_list l = {0};
    int rc = -EIO;
    *out = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    if (bind)
        sqlite3_bind_text(st, 1, bind, -1, SQLITE_STATIC);
    rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = row(&l, st, max);
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc < 0) {
        free(l.windows);
        return rc;
    }
    *out = l.windows;
    return l.n;
}

/* A capture range's instance, [start, end] as a window (end + 1: what begins at the range's
 * end is its), unless it is inside the previous one. */
static int capture_row(struct instance_list *l, sqlite3_stmt *st, long max)
{
    struct import_window w = {(uint64_t)sqlite3_column_int64(st, 0),
                              (uint64_t)sqlite3_column_int64(st, 1)};
    if (l->n && w.start_ns < l->windows[l->n - 1].end_ns)
        return 0; /* nested in the previous instance: part of it */
    int rc = instance_add(l, w);
    return rc < 0 ? rc : max && l->n == max;
}

/* The instances of the range named name in the database at path, in start order, none inside
 * another, at most max (0: all). Returns how many, or -EIO/-ENOMEM. */
static long capture_instances(const char *path, const char *name, long max,
                              struct import_window **out)
{
    return read_instances(path,
                          "SELECT r.start_ns, coalesce(r.end_ns + 1, 9223372036854775807)"
                          " FROM ranges r JOIN strings s ON s.id = r.name_id"
                          " WHERE s.value = ? ORDER BY r.start_ns, r.id",
                          name, capture_row, max, out);
}

/* A start call while none is open begins a window, the next stop call's end ends it; a
 * start inside a window is the runtime's call making the driver's. */
static int profiler_row(struct instance_list *l, sqlite3_stmt *st, long max)
{
    int start = sqlite3_column_int(st, 2);
    if (start == l->open)
        return 0;
    l->open = start;
    if (!start) {
        l->windows[l->n - 1].end_ns = (uint64_t)sqlite3_column_int64(st, 1) + 1;
        return 0;
    }
    if (max && l->n == max)
        return 1;
    return instance_add(
        l, (struct import_window){(uint64_t)sqlite3_column_int64(st, 0), (uint64_t)INT64_MAX});
}

/* The cudaProfilerApi capture's instances in the database at path: from a start call
 * (cudaProfilerStart, cuProfilerStart) while none is open to the next stop call's end, in time
 * order over every process (the agents record these calls whenever that capture is on, paused
 * or not), at most max (0: all); one never stopped lasts to the end. Returns how many, or
 * -EIO/-ENOMEM. */
static long profiler_instances(const char *path, long max, struct import_window **out)
{
    return read_instances(path,
                          "SELECT a.start_ns, a.end_ns, s.value IN ('cudaProfilerStart',"
                          " 'cuProfilerStart') FROM cuda_api a JOIN strings s ON s.id = a.name_id"
                          " WHERE s.value IN ('cudaProfilerStart', 'cuProfilerStart',"
                          " 'cudaProfilerStop', 'cuProfilerStop') ORDER BY a.start_ns, a.id",
                          NULL, profiler_row, max, out);
}

int profile_capture_repeat(const struct profile_windows *pw, const char *capture_range, long max,
                           char *last, size_t cap)
{
    /* a first import of the whole session finds the instances (the agents recorded NVTX
     * throughout: a capture range filters at import) */
    char scan[4096];
    snprintf(scan, sizeof scan, "%s/capture-scan.db", pw->raw_dir);
    if (cli_import(pw->raw_dir, scan, 1) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    struct import_window *windows = NULL;
    long n = strncmp(capture_range, "nvtx:", 5) == 0
                 ? capture_instances(scan, capture_range + strlen("nvtx:"), max, &windows)
                 : profiler_instances(scan, max, &windows);
    unlink(scan);
    if (n < 0)
        return cli_error("cannot read the capture ranges of '%s'", pw->raw_dir);
    if (n == 0) {
        cli_error("no instance of the capture range '%s' was recorded: nothing written",
                  capture_range);
        return CLI_EXIT_OK;
    }
    int rc = CLI_EXIT_OK;
    if (pw->single_file)
        rc = window_import(pw, "capture", 1, windows, (size_t)n, last, cap);
    for (long i = 0; !pw->single_file && i < n; i++)
        if (window_import(pw, "capture", (uint64_t)i + 1, &windows[i], 1, last, cap) != CLI_EXIT_OK)
            rc = CLI_EXIT_ERROR;
    free(windows);
    return rc;
}
