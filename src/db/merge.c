/* lantern merge (merge.h): every input database is attached in turn and its rows copied into
 * the new one. Strings, domains and categories are shared by value (merge_maps.sql), GPUs by
 * uuid; processes, threads, ranges, marks, CUDA calls, NVTX payloads and GPU metric sets keep
 * their order under an offset, and every column that points at one of them is rewritten by the
 * rule table below.
 * Times move onto the first input's clock by the inputs' wall<->monotonic offsets
 * (docs/schema.md). */
#include "db/merge.h"
#include "common/sql_query.h"
#include "db/import.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char import_merge_maps_sql[];
extern const char import_merge_meta_sql[];

/* The renumbered tables: each input's ids move past the merged database's last one, so a
 * column that points at one of them adds the table's offset, bound as param. One row each:
 * the reference kind, the offset and its parameter follow from it. */
#define MERGE_RENUMBERED(X)                                                                        \
    X(PROCESS, "processes", ":process")                                                            \
    X(THREAD, "threads", ":thread")                                                                \
    X(RANGE, "ranges", ":range")                                                                   \
    X(API, "cuda_api", ":api")                                                                     \
    X(MARK, "marks", ":mark")                                                                      \
    X(SCHEMA, "nvtx_payload_schemas", ":schema")                                                   \
    X(PAYLOAD, "nvtx_payloads", ":payload")                                                        \
    X(METRIC_SET, "gpu_metric_sets", ":metric_set")                                               \
    X(CPU_FRAME, "cpu_frames", ":cpu_frame")                                                       \
    X(CPU_CALLSITE, "cpu_callsites", ":cpu_callsite")                                              \
    X(CPU_STACK, "cpu_stacks", ":cpu_stack")

/* What a column refers to, hence how its value is rewritten. */
enum merge_ref {
#define X(ID, table, param) REF_##ID, /* table.id: + param */
    MERGE_RENUMBERED(X)
#undef X
    REF_STRING, /* strings.id: through temp.string_map */
    REF_DOMAIN, /* domains.id: through temp.domain_map */
    REF_GPU,    /* gpus.id: through temp.gpu_map */
    REF_TIME,   /* a time on the input's clock: + :shift */
    REF_DROP,   /* a table's own id that nothing points at: numbered afresh */
};

/* Every column that is an id of another row or a time. table NULL: in every table; the first
 * row that matches wins. Columns not listed are copied as they are. */
static const struct merge_rule {
    const char *table, *column;
    enum merge_ref ref;
} merge_rules[] = {
#define X(ID, table, param) {table, "id", REF_##ID},
    MERGE_RENUMBERED(X)
#undef X
    {"processes", "parent_id", REF_PROCESS}, {"ranges", "parent_id", REF_RANGE},
    {NULL, "range_id", REF_RANGE},       {NULL, "mark_id", REF_MARK},
    {NULL, "schema_row", REF_SCHEMA},    {NULL, "payload_id", REF_PAYLOAD},
    {NULL, "enum_name_id", REF_STRING},  {NULL, "description_id", REF_STRING},
    {"gpu_metric_samples", "set_id", REF_METRIC_SET},
    {"cpu_callsites", "parent_id", REF_CPU_CALLSITE}, {NULL, "callsite_id", REF_CPU_CALLSITE},
    {NULL, "frame_id", REF_CPU_FRAME},   {NULL, "stack_id", REF_CPU_STACK},
    {NULL, "id", REF_DROP},            {NULL, "process_id", REF_PROCESS},
    {NULL, "thread_id", REF_THREAD},   {NULL, "start_thread_id", REF_THREAD},
    {NULL, "end_thread_id", REF_THREAD}, {NULL, "nvtx_range_id", REF_RANGE},
    {NULL, "api_id", REF_API},         {NULL, "name_id", REF_STRING},
    {NULL, "demangled_id", REF_STRING}, {NULL, "os_name_id", REF_STRING},
    {NULL, "python_name_id", REF_STRING}, {NULL, "backtrace_id", REF_STRING},
    {NULL, "domain_id", REF_DOMAIN},   {NULL, "gpu_id", REF_GPU},
    {NULL, "start_ns", REF_TIME},      {NULL, "end_ns", REF_TIME},
    {NULL, "ts_ns", REF_TIME},         {NULL, "from_ns", REF_TIME},
    {NULL, "until_ns", REF_TIME},      {NULL, NULL, 0},
};

/* The SQL expression of each kind of reference (%s: the quoted column). */
static const char *const merge_ref_expr[] = {
#define X(ID, table, param) [REF_##ID] = "(%s + " param ")",
    MERGE_RENUMBERED(X)
#undef X
    [REF_STRING] = "(SELECT new FROM temp.string_map WHERE old = %s)",
    [REF_DOMAIN] = "(SELECT new FROM temp.domain_map WHERE old = %s)",
    [REF_GPU] = "(SELECT new FROM temp.gpu_map WHERE old = %s)",
    [REF_TIME] = "(%s + :shift)",
};

/* The renumbered tables and their offsets' parameters, in merge_ref's order. */
static const struct {
    const char *table, *param;
} merge_offsets[] = {
#define X(ID, table, param) {table, param},
    MERGE_RENUMBERED(X)
#undef X
};
#define MERGE_OFFSETS (sizeof merge_offsets / sizeof merge_offsets[0])

/* Tables merged by merge_maps.sql, merge_gpus() and merge_meta.sql, not by the rules. */
static const char *const merge_special[] = {"meta", "strings", "domains", "categories", "gpus",
                                            NULL};

struct merge {
    sqlite3 *db;
    const struct merge_options *opt;
    char *err;
    size_t err_len;
    const char *input; /* the input being merged, for messages */
    const char *out;   /* the merged database, named when it cannot be written */
    int64_t offset[MERGE_OFFSETS], shift;
    char *first_host;
    int64_t first_clock; /* the first input's start_wall_ns - start_ns */
};

/* SQLite's progress handler: non-zero interrupts the statement running. */
static int merge_cancelled(void *ctx)
{
    const struct merge_options *opt = ctx;
    return opt->cancel && opt->cancel(opt->ctx);
}

static int fail(struct merge *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct merge *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->err_len, fmt, ap);
    va_end(ap);
    return -EIO;
}

static int fail_sql(struct merge *m, const char *what)
{
    if (sqlite3_errcode(m->db) == SQLITE_FULL) /* the output's disk, whichever input is read */
        return fail(m, "cannot write '%s': %s", m->out, strerror(ENOSPC));
    return fail(m, "%s '%s': %s", what, m->input, sqlite3_errmsg(m->db));
}

static int exec(struct merge *m, const char *sql)
{
    if (merge_cancelled((void *)m->opt))
        return -EINTR;
    return sqlite3_exec(m->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail_sql(m, "merging");
}

/* Binds the named parameters a statement uses from the merge's state. */
static void bind_state(struct merge *m, sqlite3_stmt *st, int input)
{
    for (size_t i = 0; i < MERGE_OFFSETS; i++) {
        int at = sqlite3_bind_parameter_index(st, merge_offsets[i].param);
        if (at)
            sqlite3_bind_int64(st, at, m->offset[i]);
    }
    int at = sqlite3_bind_parameter_index(st, ":shift");
    if (at)
        sqlite3_bind_int64(st, at, m->shift);
    if ((at = sqlite3_bind_parameter_index(st, ":input")))
        sqlite3_bind_int(st, at, input);
}

/* Runs every statement of a script (or one statement) with the merge's parameters. */
static int run_sql(struct merge *m, const char *sql, int input)
{
    if (merge_cancelled((void *)m->opt))
        return -EINTR;
    while (sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(m->db, sql, -1, &st, &tail) != SQLITE_OK)
            return fail_sql(m, "merging");
        sql = tail;
        if (!st)
            continue;
        bind_state(m, st, input);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return fail_sql(m, "merging");
    }
    return 0;
}

/* One integer (or text, when text is given) from a query with one bound text parameter. */
static int query(struct merge *m, const char *sql, const char *arg, int64_t *value, char **text)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail_sql(m, "reading");
    if (arg)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (value)
            *value = sqlite3_column_int64(st, 0);
        if (text && sqlite3_column_type(st, 0) != SQLITE_NULL)
            *text = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : fail_sql(m, "reading");
}

/* Appends to a growing SQL string; returns -1 when out of memory. */
static int append(char **s, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int append(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *piece = NULL;
    int n = vasprintf(&piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    char *grown = realloc(*s, *len + (size_t)n + 1);
    if (!grown) {
        free(piece);
        return -ENOMEM;
    }
    memcpy(grown + *len, piece, (size_t)n + 1);
    *s = grown;
    *len += (size_t)n;
    free(piece);
    return 0;
}

static const struct merge_rule *rule_for(const char *table, const char *column)
{
    for (const struct merge_rule *r = merge_rules; r->column; r++)
        if ((!r->table || !strcmp(r->table, table)) && !strcmp(r->column, column))
            return r;
    return NULL;
}

/* "INSERT INTO main.T(columns) SELECT expressions FROM src.T" by the rules; skip_id leaves out
 * every column named id (gpus, which SQLite numbers). NULL when out of memory. */
static char *copy_statement(struct merge *m, const char *table, int skip_id)
{
    char *cols = NULL, *exprs = NULL, *sql = NULL, *info = sqlite3_mprintf(
                                                      "PRAGMA main.table_info(\"%w\")", table);
    size_t cols_len = 0, exprs_len = 0, sql_len = 0;
    sqlite3_stmt *st = NULL;
    int bad = !info || sqlite3_prepare_v2(m->db, info, -1, &st, NULL) != SQLITE_OK;
    while (!bad && sqlite3_step(st) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 1);
        const struct merge_rule *r = rule_for(table, col);
        if ((r && r->ref == REF_DROP) || (skip_id && !strcmp(col, "id")))
            continue;
        char quoted[256];
        snprintf(quoted, sizeof quoted, "\"%s\"", col);
        bad |= append(&cols, &cols_len, "%s%s", cols_len ? ", " : "", quoted);
        bad |= append(&exprs, &exprs_len, "%s", exprs_len ? ", " : "");
        bad |= r ? append(&exprs, &exprs_len, merge_ref_expr[r->ref], quoted)
                 : append(&exprs, &exprs_len, "%s", quoted);
    }
    if (!bad)
        bad = append(&sql, &sql_len, "INSERT INTO main.\"%s\"(%s) SELECT %s FROM src.\"%s\"", table,
                     cols, exprs, table);
    sqlite3_finalize(st);
    sqlite3_free(info);
    free(cols);
    free(exprs);
    if (bad) {
        free(sql);
        return NULL;
    }
    return sql;
}

/* The same GPU (uuid) seen by several inputs is one row; the same uuid on two hosts is a
 * contradiction (two databases of different machines mixed up). */
static int merge_gpus(struct merge *m, const char *host)
{
    char *copy = copy_statement(m, "gpus", 1);
    if (!copy)
        return fail(m, "out of memory");
    char *one = NULL;
    size_t len = 0;
    int rc = append(&one, &len, "%s WHERE id = ?", copy) ? fail(m, "out of memory") : 0;
    free(copy);
    sqlite3_stmt *list = NULL, *find = NULL, *insert = NULL, *map = NULL;
    if (rc == 0 &&
        (sqlite3_prepare_v2(m->db, "SELECT id, uuid FROM src.gpus ORDER BY id", -1, &list, NULL) ||
         sqlite3_prepare_v2(m->db,
                            "SELECT g.id, h.host FROM main.gpus g LEFT JOIN temp.gpu_hosts h"
                            " ON h.gpu_id = g.id WHERE g.uuid = ?",
                            -1, &find, NULL) ||
         sqlite3_prepare_v2(m->db, one, -1, &insert, NULL) ||
         sqlite3_prepare_v2(m->db, "INSERT INTO temp.gpu_map(old, new) VALUES(?, ?)", -1, &map,
                            NULL)))
        rc = fail_sql(m, "merging the GPUs of");
    while (rc == 0 && sqlite3_step(list) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(list, 0), new_id = 0;
        const char *uuid = (const char *)sqlite3_column_text(list, 1);
        if (uuid) {
            sqlite3_reset(find);
            sqlite3_bind_text(find, 1, uuid, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(find) == SQLITE_ROW) {
                new_id = sqlite3_column_int64(find, 0);
                const char *other = (const char *)sqlite3_column_text(find, 1);
                if (other && host && strcmp(other, host))
                    rc = fail(m, "'%s': GPU %s is on host '%s' here and on host '%s' in an"
                                 " earlier input", m->input, uuid, host, other);
            }
        }
        if (rc == 0 && !new_id) {
            sqlite3_reset(insert);
            sqlite3_bind_int64(insert, 1, old);
            if (sqlite3_step(insert) != SQLITE_DONE)
                rc = fail_sql(m, "merging the GPUs of");
            new_id = sqlite3_last_insert_rowid(m->db);
            char sql[160];
            snprintf(sql, sizeof sql, "INSERT INTO temp.gpu_hosts VALUES(%" PRId64 ", ?)", new_id);
            if (rc == 0 && query(m, sql, host, NULL, NULL) < 0)
                rc = -EIO;
        }
        sqlite3_reset(map);
        sqlite3_bind_int64(map, 1, old);
        sqlite3_bind_int64(map, 2, new_id);
        if (rc == 0 && sqlite3_step(map) != SQLITE_DONE)
            rc = fail_sql(m, "merging the GPUs of");
    }
    sqlite3_finalize(list);
    sqlite3_finalize(find);
    sqlite3_finalize(insert);
    sqlite3_finalize(map);
    free(one);
    return rc;
}

/* The input's clock shift: none on the first input's host; else the difference of the two
 * hosts' wall<->monotonic offsets (start_wall_ns - start_ns), one per host (the first input
 * of that host's), so that inputs of one host stay exactly aligned with each other. */
static int clock_shift(struct merge *m, int input, const char *host)
{
    int64_t wall = 0, mono = 0, known = 0;
    if (query(m, "SELECT value FROM src.meta WHERE key = 'start_wall_ns'", NULL, &wall, NULL) ||
        query(m, "SELECT value FROM src.meta WHERE key = 'start_ns'", NULL, &mono, NULL) ||
        query(m, "SELECT count(*) FROM temp.inputs WHERE host = ?1", host, &known, NULL))
        return -EIO;
    if (input == 0) {
        m->first_host = host ? strdup(host) : NULL;
        m->first_clock = wall > 0 ? wall - mono : 0;
        m->shift = 0;
        return 0;
    }
    if (host && m->first_host && !strcmp(host, m->first_host))
        m->shift = 0;
    else if (host && known)
        return query(m, "SELECT shift_ns FROM temp.inputs WHERE host = ?1 ORDER BY input LIMIT 1",
                     host, &m->shift, NULL);
    else if (wall > 0 && m->first_clock)
        m->shift = (wall - mono) - m->first_clock;
    else
        return fail(m, "'%s' (host '%s') cannot be aligned with the first input: no wall-clock"
                       " time (meta start_wall_ns)", m->input, host ? host : "?");
    return 0;
}

static int merge_one(struct merge *m, const char *path, int input)
{
    m->input = path;
    char *host = NULL;
    int rc = 0;
    sqlite3_stmt *attach = NULL;
    if (sqlite3_prepare_v2(m->db, "ATTACH ? AS src", -1, &attach, NULL) != SQLITE_OK)
        return fail_sql(m, "opening");
    sqlite3_bind_text(attach, 1, path, -1, SQLITE_STATIC);
    rc = sqlite3_step(attach) == SQLITE_DONE ? 0 : fail_sql(m, "opening");
    sqlite3_finalize(attach);
    if (rc)
        return rc;
    rc = exec(m, "BEGIN");
    if (rc == 0)
        rc = query(m, "SELECT value FROM src.meta WHERE key = 'host'", NULL, NULL, &host);
    if (rc == 0)
        rc = clock_shift(m, input, host);
    for (size_t i = 0; rc == 0 && i < MERGE_OFFSETS; i++) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT CASE WHEN max(m.id) IS NULL THEN 0 ELSE max(m.id) + 1 -"
                 " (SELECT coalesce(min(id), 1) FROM src.%s) END FROM main.%s m",
                 merge_offsets[i].table, merge_offsets[i].table);
        rc = query(m, sql, NULL, &m->offset[i], NULL);
    }
    if (rc == 0) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(m->db, "INSERT INTO temp.inputs VALUES(?, ?, ?, ?)", -1, &st,
                                NULL) == SQLITE_OK ? 0 : fail_sql(m, "merging");
        if (rc == 0) {
            sqlite3_bind_int(st, 1, input);
            sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
            if (host)
                sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, m->shift);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fail_sql(m, "merging");
        }
        sqlite3_finalize(st);
    }
    if (rc == 0)
        rc = run_sql(m, "INSERT INTO temp.input_meta SELECT :input, key, value FROM src.meta", input);
    if (rc == 0)
        rc = run_sql(m, import_merge_maps_sql, input);
    if (rc == 0)
        rc = exec(m, "DELETE FROM temp.gpu_map");
    if (rc == 0)
        rc = merge_gpus(m, host);
    sqlite3_stmt *tables = NULL;
    if (rc == 0 && sqlite3_prepare_v2(m->db,
                                      "SELECT name FROM main.sqlite_master WHERE type = 'table'"
                                      " AND name NOT LIKE 'sqlite%' ORDER BY rowid",
                                      -1, &tables, NULL) != SQLITE_OK)
        rc = fail_sql(m, "merging");
    while (rc == 0 && sqlite3_step(tables) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        int special = 0;
        for (const char *const *s = merge_special; *s; s++)
            special |= !strcmp(*s, table);
        if (special)
            continue;
        char *sql = copy_statement(m, table, 0);
        rc = sql ? run_sql(m, sql, input) : fail(m, "out of memory");
        free(sql);
    }
    sqlite3_finalize(tables);
    free(host);
    if (rc == 0)
        rc = exec(m, "COMMIT");
    else
        sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
    if (sqlite3_exec(m->db, "DETACH src", NULL, NULL, NULL) != SQLITE_OK && rc == 0)
        rc = fail_sql(m, "closing");
    return rc;
}

static const char merge_setup_sql[] =
    "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
    "CREATE TEMP TABLE string_map(old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE domain_map(old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE gpu_map(old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE gpu_hosts(gpu_id INTEGER PRIMARY KEY, host TEXT);"
    "CREATE TEMP TABLE inputs(input INTEGER PRIMARY KEY, path TEXT, host TEXT, shift_ns INTEGER);"
    "CREATE TEMP TABLE input_meta(input INTEGER, key TEXT, value);";

/* Same file (device and inode)? */
static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int check_paths(struct merge *m, const char *const *inputs, size_t n, const char *out,
                       int force)
{
    struct stat o, a, b;
    int have_out = lstat(out, &o) == 0;
    if (have_out && !force)
        return fail(m, "'%s' exists (use --force to replace it)", out);
    if (have_out && !S_ISREG(o.st_mode))
        return fail(m, "'%s' exists and is not a regular file", out);
    for (size_t i = 0; i < n; i++) {
        if (stat(inputs[i], &a) < 0)
            return fail(m, "cannot open '%s': %s", inputs[i], strerror(errno));
        if (have_out && same_file(&a, &o))
            return fail(m, "'%s' is an input and the output", out);
        for (size_t j = 0; j < i; j++)
            if (stat(inputs[j], &b) == 0 && same_file(&a, &b))
                return fail(m, "'%s' is given twice ('%s')", inputs[i], inputs[j]);
    }
    return 0;
}

/* What tells a session from another: its host, wall-clock and monotonic start and command, and
 * its processes (pid, start, rank: files written apart for each rank of one job may share the
 * rest), as one string (malloc'd), or NULL when the file cannot be read (merge_one says why). */
static char *session_key(const char *path)
{
    sqlite3 *db = NULL;
    char *key = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
        key = sql_query_text(
            db, "SELECT (SELECT group_concat(coalesce(value, ''), char(10)) FROM (SELECT value"
                "  FROM meta WHERE key IN ('host', 'start_wall_ns', 'start_ns', 'command')"
                "  ORDER BY key)) || char(10) || coalesce((SELECT group_concat(pid || ' ' ||"
                "  coalesce(start_ns, '') || ' ' || coalesce(rank, ''), ',') FROM"
                "  (SELECT pid, start_ns, rank FROM processes ORDER BY id)), '')");
    sqlite3_close(db);
    return key;
}

/* Two inputs of one session (a database and its copy) would count every event twice: refused
 * unless forced. */
static int check_sessions(struct merge *m, const char *const *inputs, size_t n, int force)
{
    char **keys = calloc(n ? n : 1, sizeof *keys);
    int rc = keys ? 0 : fail(m, "out of memory");
    for (size_t i = 0; rc == 0 && !force && i < n; i++) {
        keys[i] = session_key(inputs[i]);
        for (size_t j = 0; keys[i] && rc == 0 && j < i; j++)
            if (keys[j] && !strcmp(keys[i], keys[j]))
                rc = fail(m,
                          "'%s' is the same session as '%s' (a copy of it?): merging them would "
                          "count every event twice (use --force to merge them anyway)",
                          inputs[i], inputs[j]);
    }
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

int merge_databases(const char *const *inputs, size_t n, const char *out,
                    const struct merge_options *opt, char *err, size_t err_len)
{
    struct merge m = {.opt = opt, .err = err, .err_len = err_len, .input = out, .out = out};
    int force = opt->force;
    int rc;
    if ((rc = check_paths(&m, inputs, n, out, force)) < 0 ||
        (rc = check_sessions(&m, inputs, n, force)) < 0)
        return rc;
    char *temp = NULL;
    if (asprintf(&temp, "%s.XXXXXX", out) < 0)
        return fail(&m, "out of memory");
    int fd = mkstemp(temp);
    if (fd < 0) {
        int error = errno;
        fail(&m, "cannot create '%s': %s", temp, strerror(error));
        free(temp);
        return -error;
    }
    mode_t mask = umask(0); /* the mode a plain open would give, not mkstemp's 0600 */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    rc = sqlite3_open_v2(temp, &m.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) ==
                 SQLITE_OK
             ? 0
             : fail_sql(&m, "creating");
    sqlite3_progress_handler(m.db, 1000, merge_cancelled, (void *)opt);
    if (rc == 0)
        rc = exec(&m, merge_setup_sql);
    if (rc == 0)
        rc = exec(&m, import_schema_sql);
    if (rc == 0)
        rc = exec(&m, "CREATE INDEX main.merge_strings_by_value ON strings(value)");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = merge_one(&m, inputs[i], (int)i);
    m.input = out;
    if (rc == 0)
        rc = run_sql(&m, import_merge_meta_sql, 0);
    if (rc == 0)
        rc = exec(&m, "DROP INDEX main.merge_strings_by_value");
    if (rc == 0)
        rc = exec(&m, import_indexes_sql);
    if (rc && merge_cancelled((void *)opt))
        fail(&m, "merge into '%s' interrupted; nothing written", out);
    if (sqlite3_close(m.db) != SQLITE_OK && rc == 0)
        rc = fail(&m, "cannot write '%s'", temp);
    if (rc == 0 && renameat2(AT_FDCWD, temp, AT_FDCWD, out, force ? 0 : RENAME_NOREPLACE) < 0) {
        if (errno == EEXIST)
            rc = fail(&m, "'%s' exists (use --force to replace it)", out);
        else if ((errno != EINVAL && errno != ENOSYS) || rename(temp, out) < 0)
            rc = fail(&m, "cannot write '%s': %s", out, strerror(errno));
    }
    if (rc)
        unlink(temp);
    free(temp);
    free(m.first_host);
    return rc;
}
