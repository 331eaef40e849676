/* One import run: lists a session folder's raw files, creates the database beside its
 * final name, runs each file through the record loop (import_loop.c) inside one transaction,
 * then each source's end-of-session work (import_sources.c's table), the parent links, meta
 * and indexes, and renames the complete database into place. */
#include "common/sql_query.h"
#include "db/import_core.h"
#include "trace/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The "*.lrt" names of dir, sorted (so imports are reproducible). */
static int list_raw_files(const char *dir, char ***names_out, size_t *count_out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".lrt") != 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                goto fail;
            names = grown;
        }
        if (!(names[count] = strdup(e->d_name)))
            goto fail;
        count++;
    }
    closedir(d);
    if (count) /* qsort(NULL, 0, ...) is undefined */
        qsort(names, count, sizeof *names, compare_names);
    *names_out = names;
    *count_out = count;
    return 0;
fail:
    closedir(d);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return -ENOMEM;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int put_meta(sqlite3 *db, const char *key, const char *text, int64_t number, int is_number)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    import_bind_row(st, IMPORT_TEXT(key), is_number ? IMPORT_INT(number) : IMPORT_TEXT(text));
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/* The session's meta rows; a session without a launcher file (synthetic, or the launcher
 * was killed early) takes them from its earliest process. */
static int write_meta(struct import_run *s)
{
    sqlite3 *db = s->db;
    if (!s->have_launcher) {
        s->command =
            sql_query_text(db, "SELECT cmdline FROM processes ORDER BY start_ns, id LIMIT 1");
        s->host = sql_query_text(db, "SELECT host FROM processes ORDER BY start_ns, id LIMIT 1");
        s->start_ns = s->first_process_start;
        s->start_wall_ns = s->first_process_wall;
    }
    if (!s->end_ns)
        s->end_ns = (uint64_t)sql_query_int(db, "SELECT max(end_ns) FROM processes", 0);
    int rc = 0;
    rc |= put_meta(db, "schema_version", NULL, IMPORT_SCHEMA_VERSION, 1);
    rc |= put_meta(db, "lantern_version", s->version && *s->version ? s->version : LANTERN_VERSION,
                   0, 0);
    rc |= put_meta(db, "command", s->command, 0, 0);
    rc |= put_meta(db, "host", s->host, 0, 0);
    rc |= s->start_wall_ns ? put_meta(db, "start_wall_ns", NULL, (int64_t)s->start_wall_ns, 1)
                           : put_meta(db, "start_wall_ns", NULL, 0, 0);
    rc |= put_meta(db, "start_ns", NULL, (int64_t)s->start_ns, 1);
    rc |= put_meta(db, "end_ns", NULL, (int64_t)s->end_ns, 1);
    rc |= put_meta(db, "clock", "CLOCK_MONOTONIC", 0, 0);
    rc |= put_meta(db, "trace", s->trace && *s->trace ? s->trace : "nvtx", 0, 0);
    rc |= s->exit_status >= 0 ? put_meta(db, "exit_status", NULL, s->exit_status, 1)
                              : put_meta(db, "exit_status", NULL, 0, 0);
    rc |= put_meta(db, "dropped_events", NULL, (int64_t)s->summary.dropped_events, 1);
    rc |= put_meta(db, "import_warnings", NULL, (int64_t)s->summary.warnings, 1);
    if (s->have_launcher)
        rc |= put_meta(db, "nvidia_gpu_present", NULL, !s->no_nvidia_device, 1);
    rc |= put_meta(db, "truncated_strings", NULL, (int64_t)s->truncated_strings, 1);
    return rc ? -EIO : 0;
}

static void session_release(struct import_run *s)
{
    for (int i = 0; i < IMPORT_SOURCES; i++)
        if (import_sources[i].source->session_close)
            import_sources[i].source->session_close(s->source_state[i]);
    import_strings_release(s);
    free(s->command);
    free(s->host);
    free(s->trace);
    free(s->version);
}

static uint64_t total_size(const char *dir, char **names, size_t count)
{
    uint64_t total = 0;
    char path[4096];
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0)
            total += (uint64_t)st.st_size;
    }
    return total;
}

/* processes.parent_id: the nearest ancestor (parent first, then up the chain the agent
 * read) that is a traced process of the session started before this one; a pid reused
 * within the session goes to its latest earlier holder. */
static int link_parents(sqlite3 *db)
{
    return exec_sql(db, "UPDATE processes SET parent_id = (SELECT p.id FROM temp.ancestors a"
                        " JOIN processes p ON p.pid = a.pid AND p.id != processes.id"
                        " AND coalesce(p.start_ns, 0) <= coalesce(processes.start_ns, 0)"
                        " WHERE a.process_id = processes.id ORDER BY a.depth, p.start_ns DESC"
                        " LIMIT 1);"
                        "DROP TABLE temp.ancestors;");
}

/* processes.exit_status, exit_signal, core_dumped: from the launcher's TRACE_CHILD_EXIT of the
 * same pid, the first reaped after the process started and before a later process took the
 * pid (an exec'd traced program is a later row of the same pid: the end is the last one's). */
static int set_exits(sqlite3 *db)
{
    return exec_sql(db, "UPDATE processes SET (exit_status, exit_signal, core_dumped) = ("
                        " SELECT CASE WHEN c.signal = 0 THEN c.exit_code END,"
                        " nullif(c.signal, 0), c.core_dumped FROM temp.child_exits c"
                        " WHERE c.pid = processes.pid AND c.ts >= coalesce(processes.start_ns, 0)"
                        " AND NOT EXISTS (SELECT 1 FROM processes later"
                        "  WHERE later.pid = processes.pid AND later.id != processes.id"
                        "  AND later.start_ns > coalesce(processes.start_ns, 0)"
                        "  AND later.start_ns <= c.ts)"
                        " ORDER BY c.ts LIMIT 1)"
                        " WHERE pid IN (SELECT pid FROM temp.child_exits);"
                        "DROP TABLE temp.child_exits;");
}

/* lantern profile's start/stop windows (import_options.windows, docs/long-runs.md): each
 * source's window_sql deletes its rows outside them; the session's start and end become the
 * windows' first start and last end where they lie inside it. */
static int apply_windows(struct import_run *s)
{
    const struct import_options *o = s->opt;
    if (!o || !o->window_count)
        return 0;
    sqlite3_stmt *st = NULL;
    if (exec_sql(s->db, "CREATE TEMP TABLE import_windows(start_ns INTEGER, end_ns INTEGER)") <
            0 ||
        sqlite3_prepare_v2(s->db, "INSERT INTO temp.import_windows VALUES(?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    for (size_t i = 0; i < o->window_count && !rc; i++) {
        import_bind_row(st, IMPORT_INT(o->windows[i].start_ns), IMPORT_INT(o->windows[i].end_ns));
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    for (int i = 0; i < IMPORT_SOURCES && !rc; i++) {
        const struct import_source *src = import_sources[i].source;
        if (src->window_sql && import_exec_script(s->db, src->window_sql, NULL) < 0)
            rc = -EIO;
    }
    /* A process without its end record and not seen ending runs past the window (the
     * salvage gave every process that is gone its end): its window is whole, since the agents
     * write what they hold at each pause, and is no loss. */
    if (rc || exec_sql(s->db, "DROP TABLE temp.import_windows;"
                              "UPDATE processes SET end_record = 1 WHERE end_record = 0"
                              " AND exit_status IS NULL AND exit_signal IS NULL") < 0)
        return -EIO;
    uint64_t first = o->windows[0].start_ns, last = o->windows[o->window_count - 1].end_ns;
    if (first > s->start_ns)
        s->start_ns = first;
    if (!s->end_ns)
        s->end_ns = (uint64_t)sql_query_int(s->db, "SELECT max(end_ns) FROM processes", 0);
    if (last < (uint64_t)INT64_MAX && (!s->end_ns || last < s->end_ns))
        s->end_ns = last;
    return put_meta(s->db, "windows", NULL, (int64_t)o->window_count, 1) < 0 ? -EIO : 0;
}

/* Bulk load: no journal and no fsync while the new file fills (it is renamed into place
 * only when complete), then the normal settings for whoever opens it later. */
static int import_all(struct import_run *s, const char *dir, char **names, size_t count)
{
    if (exec_sql(s->db,
                 "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;") <
            0 ||
        exec_sql(s->db, "BEGIN") < 0 || exec_sql(s->db, import_schema_sql) < 0 ||
        exec_sql(s->db, "CREATE TEMP TABLE ancestors(process_id INTEGER, depth INTEGER, "
                        "pid INTEGER);"
                        "CREATE TEMP TABLE child_exits(pid INTEGER, ts INTEGER, "
                        "exit_code INTEGER, signal INTEGER, core_dumped INTEGER)") < 0)
        return -EIO;
    for (int i = 0; i < IMPORT_SOURCES; i++) {
        const struct import_source *src = import_sources[i].source;
        int rc = src->session_open ? src->session_open(s->db, &s->source_state[i]) : 0;
        if (rc < 0)
            return rc;
    }
    char path[4096];
    for (size_t i = 0; i < count && !import_cancelled(s); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        import_file(s, path, names[i]);
    }
    if (s->cancelled)
        return -EINTR;
    if (!s->lantern_files)
        return -ENODATA;
    /* after every file: correlation and attribution need all processes' rows */
    for (int i = 0; i < IMPORT_SOURCES; i++) {
        const struct import_source *src = import_sources[i].source;
        if (src->session_finish &&
            src->session_finish(s->db, s->source_state[i], s->source_records[i]) < 0)
            return -EIO;
    }
    if (link_parents(s->db) < 0 || set_exits(s->db) < 0 || apply_windows(s) < 0)
        return -EIO;
    if (write_meta(s) < 0 || exec_sql(s->db, import_indexes_sql) < 0 ||
        exec_sql(s->db, "COMMIT") < 0)
        return -EIO;
    return exec_sql(s->db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
}

/* What an import that SQLite failed ran into: a full disk and an interruption say so. */
static int import_failure(struct import_run *s, int rc)
{
    if (s->cancelled)
        return -EINTR;
    if (rc == -EIO && s->db) {
        int err = sqlite3_errcode(s->db);
        if (err == SQLITE_FULL)
            return -ENOSPC;
        if (err == SQLITE_INTERRUPT)
            return -EINTR;
    }
    return rc;
}

/* The new database's temporary name beside db_path, created here (O_EXCL, never through a
 * symbolic link) and renamed onto db_path when complete. */
static int create_part_file(const char *part)
{
    unlink(part); /* left by an import that was killed; unlink never follows a link */
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

/* rename(2) that refuses to replace an existing db_path unless replace is set. */
static int rename_into_place(const char *part, const char *db_path, int replace)
{
    if (replace)
        return rename(part, db_path) < 0 ? -errno : 0;
    if (renameat2(AT_FDCWD, part, AT_FDCWD, db_path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    /* a file system without RENAME_NOREPLACE: link(2) fails on an existing name too */
    if (link(part, db_path) < 0)
        return -errno;
    unlink(part);
    return 0;
}

int import_session(const char *session_dir, const char *db_path, const struct import_options *opt,
                   struct import_summary *summary)
{
    struct import_run s = {.opt = opt, .exit_status = -1};
    char **names = NULL, *part = NULL;
    size_t count = 0;
    struct stat st;
    int rc, replace = opt && opt->replace;
    if (lstat(db_path, &st) == 0 && (!replace || S_ISDIR(st.st_mode)))
        return S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
    if ((rc = list_raw_files(session_dir, &names, &count)) < 0)
        return rc;
    if (!count) {
        rc = -ENODATA;
        goto out;
    }
    s.bytes_total = total_size(session_dir, names, count);
    rc = -ENOMEM;
    if (asprintf(&part, "%s.part", db_path) < 0) {
        part = NULL;
        goto fail;
    }
    if ((rc = create_part_file(part)) < 0) {
        free(part);
        part = NULL; /* not ours to remove */
        goto fail;
    }
    rc = -EIO;
    if (sqlite3_open_v2(part, &s.db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK)
        goto fail;
    sqlite3_progress_handler(s.db, 100000, import_cancelled, &s);
    if ((rc = import_all(&s, session_dir, names, count)) < 0) {
        rc = import_failure(&s, rc);
        goto fail;
    }
    if (sqlite3_close(s.db) != SQLITE_OK) {
        s.db = NULL;
        rc = -EIO;
        goto fail;
    }
    s.db = NULL;
    if ((rc = rename_into_place(part, db_path, replace)) < 0)
        goto fail;
    if (summary)
        *summary = s.summary;
    rc = 0;
    goto out;
fail:
    if (s.db)
        sqlite3_close(s.db);
    if (part)
        unlink(part);
out:
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    free(part);
    session_release(&s);
    return rc;
}
