/* The importer core's own records (types 1-19: process, threads, strings, drops, write
 * errors, the launcher's reaped processes) and what sources look up through import_internal.h: strings.id of a file's string
 * id, processes.id, threads.id. Record layouts: src/trace/records.def (read with its
 * generated decoders). */
#include "db/import_core.h"
#include "trace/format.h"
#include "trace/records.h"

#include <stdio.h>

/* Core statement slots. */
enum {
    SLOT_STRING,
    SLOT_PROCESS,
    SLOT_THREAD,
    SLOT_THREAD_NAME,
    SLOT_THREAD_DROPPED,
    SLOT_PROCESS_END,
    SLOT_THREAD_OS_NAME,
    SLOT_THREAD_PYTHON_NAME,
    SLOT_PROCESS_INFO,
    SLOT_ANCESTOR,
    SLOT_CHILD_EXIT,
    SLOT_PROCESS_PYTHON_NAME,
};

/* ---- strings -------------------------------------------------------------------------- */

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h ? h : 1; /* 0 marks an empty map slot */
}

/* strings.id of these bytes, inserting them on first sight. Hash collisions between
 * different strings are resolved by probing successive hash values. */
static int64_t session_intern(struct import_file *f, const uint8_t *bytes, size_t len)
{
    struct import_run *s = f->s;
    uint64_t h = hash_bytes(bytes, len);
    for (;; h = h + 1 ? h + 1 : 1) {
        uint64_t *id = u64_map_find(&s->string_ids, h);
        if (!id)
            break;
        if (s->string_lengths[*id] == len && memcmp(s->string_values[*id], bytes, len) == 0)
            return (int64_t)*id;
    }
    if (s->strings + 1 >= s->strings_cap) {
        size_t cap = s->strings_cap ? s->strings_cap * 2 : 1024;
        char **values = realloc(s->string_values, cap * sizeof *values);
        if (values)
            s->string_values = values;
        size_t *lengths = realloc(s->string_lengths, cap * sizeof *lengths);
        if (lengths)
            s->string_lengths = lengths;
        if (!values || !lengths)
            return 0;
        s->strings_cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return 0;
    memcpy(copy, bytes, len);
    copy[len] = 0;
    int64_t id = (int64_t)++s->strings;
    s->string_values[id] = copy;
    s->string_lengths[id] = len;
    if (u64_map_put(&s->string_ids, h, (uint64_t)id) < 0)
        return 0;
    sqlite3_stmt *st = import_core_stmt(f, SLOT_STRING, "INSERT INTO strings(id, value) VALUES(?, ?)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_INT(id), IMPORT_TEXT_N(copy, len));
    return import_step(f, st, NULL) < 0 ? 0 : id;
}

int64_t import_string(struct import_file *f, uint64_t file_string_id)
{
    return id_vec_get(&f->strings, file_string_id);
}

int64_t import_string_text(struct import_file *f, const char *text)
{
    return session_intern(f, (const uint8_t *)text, strlen(text));
}

/* ---- processes and threads -------------------------------------------------------------- */

/* "<pid>-<start_ns>.lrt": the pid when the PROCESS record itself was lost. */
static uint64_t pid_from_name(const char *name)
{
    return strtoull(name, NULL, 10);
}

static int64_t insert_process(struct import_file *f, uint64_t pid, uint64_t ppid, uint64_t start,
                              const char *exe, const char *cmdline, const char *host,
                              const char *name)
{
    sqlite3_stmt *st = import_core_stmt(
        f, SLOT_PROCESS,
        "INSERT INTO processes(pid, ppid, exe, cmdline, host, start_ns, raw_file, name) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_INT(pid), IMPORT_INT(ppid), IMPORT_TEXT(exe), IMPORT_TEXT(cmdline),
                    IMPORT_TEXT(host), IMPORT_NONZERO(start), IMPORT_TEXT(f->name),
                    IMPORT_TEXT(name && *name ? name : NULL));
    if (import_step(f, st, NULL) < 0)
        return 0;
    f->process_id = sqlite3_last_insert_rowid(f->s->db);
    return f->process_id;
}

/* One ancestor pid of this file's process (depth 0: its parent), for link_parents(). */
static void insert_ancestor(struct import_file *f, unsigned depth, uint64_t pid)
{
    sqlite3_stmt *st = import_core_stmt(
        f, SLOT_ANCESTOR, "INSERT INTO temp.ancestors(process_id, depth, pid) VALUES(?, ?, ?)");
    if (!st || !f->process_id || !pid)
        return;
    import_bind_row(st, IMPORT_INT(f->process_id), IMPORT_INT(depth), IMPORT_INT(pid));
    import_step(f, st, NULL);
}

int64_t import_process(struct import_file *f)
{
    if (f->is_launcher)
        return 0;
    if (!f->process_id)
        insert_process(f, pid_from_name(f->name), 0, 0, NULL, NULL, NULL, NULL);
    return f->process_id;
}

int64_t import_known_process(struct import_file *f)
{
    return f->is_launcher ? 0 : f->process_id;
}

static int64_t insert_thread(struct import_file *f, uint64_t tid, uint64_t start_ns)
{
    int64_t process_id = import_process(f);
    sqlite3_stmt *st = import_core_stmt(
        f, SLOT_THREAD, "INSERT INTO threads(process_id, tid, start_ns) VALUES(?, ?, ?)");
    if (!st || !process_id)
        return 0;
    import_bind_row(st, IMPORT_INT(process_id), IMPORT_INT(tid), IMPORT_NONZERO(start_ns));
    if (import_step(f, st, NULL) < 0)
        return 0;
    int64_t id = sqlite3_last_insert_rowid(f->s->db);
    u64_map_put(&f->thread_by_tid, tid + 1, (uint64_t)id);
    return id;
}

int64_t import_thread_by_tid(struct import_file *f, uint64_t os_tid)
{
    uint64_t *id = u64_map_find(&f->thread_by_tid, os_tid + 1);
    return id ? (int64_t)*id : insert_thread(f, os_tid, 0);
}

int64_t import_thread(struct import_file *f, uint64_t thread_idx)
{
    int64_t *slot = id_vec_slot(&f->threads, thread_idx);
    if (slot && *slot)
        return *slot;
    int64_t id = insert_thread(f, 0, 0); /* the THREAD record was lost: tid unknown */
    if (slot)
        *slot = id;
    return id;
}

/* A decoded `s` field as a NUL-terminated copy (NULL when out of memory). */
static char *bytes_dup(struct trace_bytes b)
{
    return strndup((const char *)b.bytes, b.len);
}

static void on_process(struct import_file *f, struct trace_fields *fl)
{
    struct trace_process p;
    trace_get_process(fl, &p);
    size_t cmd_len = p.cmdline.len;
    char *exe_s = bytes_dup(p.exe), *cmd_s = malloc(cmd_len + 1), *host_s = bytes_dup(p.host);
    if (!exe_s || !cmd_s || !host_s)
        goto out;
    memcpy(cmd_s, p.cmdline.bytes, cmd_len);
    cmd_s[cmd_len] = 0;
    char name[256];
    import_process_name(cmd_s, cmd_len, name, sizeof name);
    if (!*name && p.exe.len) /* no command line (a kernel thread, or it was cleared) */
        snprintf(name, sizeof name, "%s", strrchr(exe_s, '/') ? strrchr(exe_s, '/') + 1 : exe_s);
    for (size_t i = 0; i + 1 < cmd_len; i++) /* arguments are NUL-separated */
        if (!cmd_s[i])
            cmd_s[i] = ' ';
    struct import_run *s = f->s;
    if (p.agent_flags & TRACE_FLAG_LAUNCHER) {
        f->is_launcher = 1;
        s->have_launcher = 1;
        free(s->command);
        free(s->host);
        free(s->version);
        free(s->trace);
        s->command = cmd_s;
        s->host = host_s;
        s->version = bytes_dup(p.lantern_version);
        s->trace = bytes_dup(p.trace_list); /* launcher only: the -t list */
        s->start_ns = p.start;
        s->start_wall_ns = p.wall_ns;
        s->no_nvidia_device = (p.agent_flags & TRACE_FLAG_NO_NVIDIA_DEVICE) != 0;
        cmd_s = host_s = NULL;
        goto out;
    }
    if (!f->process_id) {
        insert_process(f, p.pid, p.ppid, p.start, exe_s, cmd_s, host_s, name);
        insert_ancestor(f, 0, p.ppid);
    }
    if (!s->first_process_start || p.start < s->first_process_start) {
        s->first_process_start = p.start; /* stands in for a session without a launcher file */
        s->first_process_wall = p.wall_ns;
    }
out:
    free(exe_s);
    free(cmd_s);
    free(host_s);
}

static void on_process_end(struct import_file *f, struct trace_fields *fl)
{
    struct trace_process_end e;
    trace_get_process_end(fl, &e);
    if (e.salvaged) { /* after the agent's own end, if any: the process ends at its last event */
        f->salvaged = 1;
        f->end_ts = f->saw_end && f->end_ts > e.end ? f->end_ts : e.end;
        f->dropped_total = f->dropped_total > e.dropped_total ? f->dropped_total : e.dropped_total;
    } else {
        f->end_ts = e.end;
        f->dropped_total = e.dropped_total;
    }
    f->clean = (int)e.clean;
    f->saw_end = 1;
    if (f->is_launcher) {
        f->s->end_ns = f->end_ts;
        f->s->exit_status = (int64_t)e.exit_status; /* launcher only */
    }
}

/* TRACE_CHILD_EXIT (launcher.lrt only): kept until every process row exists; the session's
 * end gives it to its process (import_run.c). */
static void on_child_exit(struct import_file *f, struct trace_fields *fl)
{
    struct trace_child_exit c;
    trace_get_child_exit(fl, &c);
    if (!f->is_launcher || fl->bad)
        return;
    sqlite3_stmt *st = import_core_stmt(
        f, SLOT_CHILD_EXIT,
        "INSERT INTO temp.child_exits(pid, ts, exit_code, signal, core_dumped) "
        "VALUES(?, ?, ?, ?, ?)");
    if (!st)
        return;
    import_bind_row(st, IMPORT_INT(c.pid), IMPORT_INT(c.ts), IMPORT_INT(c.exit_code),
                    IMPORT_INT(c.signal), IMPORT_INT(c.core_dumped != 0));
    import_step(f, st, NULL);
}

static void on_thread(struct import_file *f, struct trace_fields *fl)
{
    struct trace_thread t;
    trace_get_thread(fl, &t);
    uint64_t tid = t.os_tid;
    int64_t *slot = id_vec_slot(&f->threads, t.thread_idx);
    if (!slot)
        return;
    uint64_t *known = u64_map_find(&f->thread_by_tid, tid + 1);
    int claimed = 0;
    /* A THREAD_NAME may have created the row by tid before this record: adopt it, unless a
     * thread index already owns it (the tid was reused by a later thread). */
    for (size_t i = 0; known && i < f->threads.cap; i++)
        if (f->threads.v[i] == (int64_t)*known)
            claimed = 1;
    if (known && !claimed) {
        *slot = (int64_t)*known;
        return;
    }
    *slot = insert_thread(f, tid, t.first_seen);
}

/* One of a thread's names (sql: "UPDATE threads SET <column> = ? WHERE id = ?"), the thread
 * found by OS tid (created if new); skip: the record was malformed (the row is still made).
 * No Linux thread has tid 0: a name given to it (nvtxNameOsThreadA(0, ...)) names no thread,
 * and makes none that the header would count. */
static void name_thread(struct import_file *f, int slot, const char *sql, uint64_t os_tid,
                        uint64_t name, int skip)
{
    if (!os_tid)
        return;
    int64_t thread_id = import_thread_by_tid(f, os_tid);
    sqlite3_stmt *st = import_core_stmt(f, slot, sql);
    if (!st || !thread_id || skip)
        return;
    import_bind_row(st, IMPORT_NONZERO(import_string(f, name)), IMPORT_INT(thread_id));
    import_step(f, st, NULL);
}

/* nvtxNameOsThread's name. */
static void on_thread_name(struct import_file *f, struct trace_fields *fl)
{
    struct trace_thread_name r;
    trace_get_thread_name(fl, &r);
    name_thread(f, SLOT_THREAD_NAME, "UPDATE threads SET name_id = ? WHERE id = ?", r.os_tid,
                r.name, 0);
}

/* TRACE_THREAD_OS_NAME and TRACE_THREAD_PYTHON_NAME: the latest of each kind wins. */
static void on_thread_os_name(struct import_file *f, struct trace_fields *fl)
{
    struct trace_thread_os_name r;
    trace_get_thread_os_name(fl, &r);
    name_thread(f, SLOT_THREAD_OS_NAME, "UPDATE threads SET os_name_id = ? WHERE id = ?", r.os_tid,
                r.name, fl->bad);
}

static void on_thread_python_name(struct import_file *f, struct trace_fields *fl)
{
    struct trace_thread_python_name r;
    trace_get_thread_python_name(fl, &r);
    name_thread(f, SLOT_THREAD_PYTHON_NAME, "UPDATE threads SET python_name_id = ? WHERE id = ?",
                r.os_tid, r.name, fl->bad);
}

/* TRACE_PROCESS_PYTHON_NAME: a multiprocessing child is named after the program it runs and its
 * Process.name (`train.py:loader-0`), not after the command line that started it (`python3
 * -c from multiprocessing.spawn import ...`, or its parent's, for a fork). */
static void on_process_python_name(struct import_file *f, struct trace_fields *fl)
{
    struct trace_process_python_name r;
    trace_get_process_python_name(fl, &r);
    if (fl->bad || f->is_launcher || !import_process(f) || !r.name.len)
        return;
    char *main = malloc(r.main.len + 1);
    if (!main)
        return;
    memcpy(main, r.main.bytes, r.main.len);
    main[r.main.len] = '\0';
    char program[256], name[512];
    import_process_name(main, r.main.len, program, sizeof program);
    free(main);
    snprintf(name, sizeof name, "%s%s%.*s", program, *program ? ":" : "", (int)r.name.len,
             (const char *)r.name.bytes);
    sqlite3_stmt *st =
        import_core_stmt(f, SLOT_PROCESS_PYTHON_NAME, "UPDATE processes SET name = ? WHERE id = ?");
    if (!st)
        return;
    import_bind_row(st, IMPORT_TEXT(name), IMPORT_INT(f->process_id));
    import_step(f, st, NULL);
}

/* TRACE_PROCESS_INFO: ranks, and the ancestors above the parent. */
static void on_process_info(struct import_file *f, struct trace_fields *fl)
{
    struct trace_process_info p;
    trace_get_process_info(fl, &p);
    /* A malformed field before the list (which then reads as empty) skips the record; one
     * inside it keeps the ancestors before it (those after it read as 0 and are skipped). */
    int bad_before_list = fl->bad && !p.ancestors.count;
    if (f->is_launcher || !import_process(f) || bad_before_list)
        return;
    sqlite3_stmt *st = import_core_stmt(
        f, SLOT_PROCESS_INFO,
        "UPDATE processes SET rank = ?, local_rank = ?, rank_variable = ? WHERE id = ?");
    if (!st)
        return;
    import_bind_row(st, IMPORT_PLUS_ONE(p.rank), IMPORT_PLUS_ONE(p.local_rank),
                    IMPORT_BYTES(p.rank_variable), IMPORT_INT(f->process_id));
    import_step(f, st, NULL);
    for (uint64_t i = 0; i < p.ancestors.count && i < TRACE_U_LIST_MAX; i++)
        insert_ancestor(f, (unsigned)i + 1, p.ancestors.values[i]);
}

static void on_string(struct import_file *f, struct trace_fields *fl)
{
    struct trace_string r;
    trace_get_string(fl, &r);
    int64_t *slot = id_vec_slot(&f->strings, r.id);
    if (slot && r.id && !fl->bad)
        *slot = session_intern(f, r.bytes.bytes, r.bytes.len);
    if (r.original_len > r.bytes.len) /* present when the agent cut the string */
        f->cut_strings++;
}

/* The agent could not write its file (a full disk): say so with its reason, instead of
 * blaming a kill; what it lost is in TRACE_PROCESS_END's dropped count. */
static void on_write_error(struct import_file *f, struct trace_fields *fl)
{
    struct trace_write_error r;
    trace_get_write_error(fl, &r);
    import_warn(f,
                "%s: the agent could not write its trace after %llu bytes: %.*s; the events "
                "that followed are counted as dropped",
                f->name, (unsigned long long)r.file_bytes, (int)r.reason.len,
                (const char *)r.reason.bytes);
}

static void on_dropped(struct import_file *f, struct trace_fields *fl)
{
    struct trace_dropped r;
    trace_get_dropped(fl, &r);
    f->dropped_sum += r.count;
    if (!r.thread_idx)
        return;
    int64_t thread_id = import_thread(f, r.thread_idx);
    sqlite3_stmt *st =
        import_core_stmt(f, SLOT_THREAD_DROPPED,
                    "UPDATE threads SET dropped_events = dropped_events + ? WHERE id = ?");
    if (!st || !thread_id)
        return;
    import_bind_row(st, IMPORT_INT(r.count), IMPORT_INT(thread_id));
    import_step(f, st, NULL);
}


/* TRACE_TABLE_CUT: what an agent table did not keep, its cap reached; in import_losses. */
static void on_table_cut(struct import_file *f, struct trace_fields *fl)
{
    static const enum import_loss by_table[] = {
        [TRACE_TABLE_REGISTERED_STRINGS] = IMPORT_LOST_TABLE_REGISTERED_STRINGS,
        [TRACE_TABLE_CATEGORIES] = IMPORT_LOST_TABLE_CATEGORIES,
        [TRACE_TABLE_DOMAINS] = IMPORT_LOST_TABLE_DOMAINS,
        [TRACE_TABLE_PAYLOAD_SCHEMAS] = IMPORT_LOST_TABLE_PAYLOAD_SCHEMAS,
        [TRACE_TABLE_NAMES] = IMPORT_LOST_TABLE_NAMES,
        [TRACE_TABLE_PYTHON_FUNCTIONS] = IMPORT_LOST_TABLE_PYTHON_FUNCTIONS,
    };
    struct trace_table_cut r;
    if (trace_get_table_cut(fl, &r) < 0 || !r.table ||
        r.table >= sizeof by_table / sizeof by_table[0]) {
        fl->bad = 1;
        return;
    }
    import_lost(f, by_table[r.table], r.count);
}

/* ---- the record loop -------------------------------------------------------------------- */

void import_core_record(struct import_file *f, unsigned type, struct trace_fields *fl)
{
    switch (type) {
    case TRACE_PROCESS:
        on_process(f, fl);
        break;
    case TRACE_PROCESS_END:
        on_process_end(f, fl);
        break;
    case TRACE_THREAD:
        on_thread(f, fl);
        break;
    case TRACE_THREAD_NAME:
        on_thread_name(f, fl);
        break;
    case TRACE_THREAD_OS_NAME:
        on_thread_os_name(f, fl);
        break;
    case TRACE_THREAD_PYTHON_NAME:
        on_thread_python_name(f, fl);
        break;
    case TRACE_PROCESS_PYTHON_NAME:
        on_process_python_name(f, fl);
        break;
    case TRACE_PROCESS_INFO:
        on_process_info(f, fl);
        break;
    case TRACE_CHILD_EXIT:
        on_child_exit(f, fl);
        break;
    case TRACE_STRING:
        on_string(f, fl);
        break;
    case TRACE_DROPPED:
        on_dropped(f, fl);
        break;
    case TRACE_WRITE_ERROR:
        on_write_error(f, fl);
        break;
    case TRACE_TABLE_CUT:
        on_table_cut(f, fl);
        break;
    default:
        f->s->summary.skipped++;
        break; /* a newer writer's record: skipped by length */
    }
}


void import_process_finish(struct import_file *f)
{
    struct import_run *s = f->s;
    uint64_t dropped =
        f->saw_end && f->dropped_total > f->dropped_sum ? f->dropped_total : f->dropped_sum;
    s->summary.dropped_events += dropped;
    if (f->is_launcher || !f->process_id)
        return;
    sqlite3_stmt *st =
        import_core_stmt(f, SLOT_PROCESS_END,
                    "UPDATE processes SET end_ns = ?, clean_exit = ?, dropped_events = ?, "
                    "import_warning = ?, end_record = ?, salvaged = ? WHERE id = ?");
    if (!st)
        return;
    uint64_t end = f->saw_end ? f->end_ts : f->last_ts;
    if (f->salvaged) {
        end = end > f->last_ts ? end : f->last_ts;
        end = end > f->last_event_ns ? end : f->last_event_ns;
    }
    import_bind_row(st, IMPORT_NONZERO(end), IMPORT_INT(f->saw_end && f->clean),
                    IMPORT_INT(dropped), IMPORT_TEXT(f->warning), IMPORT_INT(f->saw_end),
                    IMPORT_INT(f->salvaged), IMPORT_INT(f->process_id));
    import_step(f, st, NULL);
}


void import_strings_release(struct import_run *s)
{
    for (size_t i = 1; i <= s->strings; i++)
        free(s->string_values[i]);
    free(s->string_values);
    free(s->string_lengths);
    u64_map_release(&s->string_ids);
}
