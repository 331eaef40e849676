/* The importer core: walks every raw trace file of a session folder, creates processes,
 * threads, strings and NVTX rows in one SQLite transaction, and hands CUDA and NVML records
 * to their modules. Record layouts: src/trace/format.h; tables: src/db/schema.sql. */
#include "db/import.h"
#include "trace/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A corrupt depth or id must not make the importer allocate gigabytes. */
#define MAX_DEPTH 4096u
#define MAX_FILE_IDS (1u << 24)
/* Progress is reported every this many records (about a tenth of a second of work). */
#define PROGRESS_EVERY (1u << 18)

/* ---- small containers ------------------------------------------------------------------ */

/* Open-addressed map from a non-zero u64 key to a u64 value, linear probing with
 * backward-shift deletion (no tombstones, so lookups stay short after many removals). */
struct u64_map {
    uint64_t *keys, *values;
    size_t cap, count; /* cap is a power of two */
};

static uint64_t hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static int map_grow(struct u64_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof *keys), *values = calloc(cap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_u64(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return 0;
}

static uint64_t *map_find(const struct u64_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = hash_u64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return &m->values[i];
        if (!m->keys[i])
            return NULL;
    }
}

static int map_put(struct u64_map *m, uint64_t key, uint64_t value)
{
    uint64_t *v = map_find(m, key);
    if (v) {
        *v = value;
        return 0;
    }
    if ((m->count + 1) * 2 > m->cap && map_grow(m) < 0)
        return -ENOMEM;
    size_t i = hash_u64(key) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return 0;
}

static void map_remove(struct u64_map *m, uint64_t key)
{
    uint64_t *v = map_find(m, key);
    if (!v)
        return;
    size_t mask = m->cap - 1, hole = (size_t)(v - m->values);
    for (size_t i = (hole + 1) & mask; m->keys[i]; i = (i + 1) & mask) {
        size_t home = hash_u64(m->keys[i]) & mask;
        /* move the entry back into the hole unless its home lies cyclically in (hole, i] */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->keys[hole] = m->keys[i];
            m->values[hole] = m->values[i];
            hole = i;
        }
    }
    m->keys[hole] = 0;
    m->values[hole] = 0;
    m->count--;
}

static void map_release(struct u64_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* A growable array of int64 indexed by a per-file id (string ids, thread indexes, domains). */
struct id_vec {
    int64_t *v;
    size_t cap;
};

static int64_t *vec_slot(struct id_vec *a, uint64_t idx)
{
    if (idx >= MAX_FILE_IDS)
        return NULL;
    if (idx >= a->cap) {
        size_t cap = a->cap ? a->cap : 256;
        while (cap <= idx)
            cap *= 2;
        int64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return NULL;
        memset(v + a->cap, 0, (cap - a->cap) * sizeof *v);
        a->v = v;
        a->cap = cap;
    }
    return &a->v[idx];
}

static int64_t vec_get(const struct id_vec *a, uint64_t idx)
{
    return idx < a->cap ? a->v[idx] : 0;
}

/* ---- the session and the file being imported ------------------------------------------- */

/* An NVTX range between its push/start and its pop/end. */
struct open_range {
    int64_t id;        /* ranges.id, assigned when the range opens; 0: slot empty */
    int64_t parent_id; /* 0: none */
    int64_t name_id, domain_id, thread_id;
    uint64_t category, color, payload_type, payload_bits, start_ns;
    uint32_t depth;
};

/* A range ready to be written (ranges are written in batches). */
struct finished_range {
    struct open_range range;
    int style;
    int64_t end_thread_id; /* 0: never ended */
    uint64_t end_ns;
};
#define RANGE_BATCH 64

/* The open push/pop ranges of one (thread, domain), indexed by depth. */
struct range_stack {
    struct open_range *levels;
    uint32_t cap, top; /* top: one past the deepest level that may be occupied */
};

struct import_session {
    sqlite3 *db;
    const struct import_options *opt;
    struct import_summary summary;
    struct u64_map string_ids; /* hash of the bytes -> strings.id (collisions chained below) */
    char **string_values;      /* strings.id -> bytes, to confirm a hash match */
    size_t *string_lengths;
    size_t strings, strings_cap;
    struct u64_map domain_by_name; /* strings.id of the name -> domains.id */
    int64_t next_domain_id, next_range_id;
    /* what the launcher's own file says about the session */
    char *command, *host, *trace, *version;
    int have_launcher;
    int no_nvidia_device; /* the launcher saw no NVIDIA device node */
    uint64_t start_ns, end_ns, start_wall_ns, first_process_start, first_process_wall;
    int64_t exit_status; /* -1: unknown */
    uint64_t bytes_total, bytes_done;
    uint64_t cuda_records;
    uint64_t lantern_files;     /* raw files with a Lantern header: none means no session */
    uint64_t truncated_strings; /* names the agent cut to TRACE_STRING_MAX */
    int cancelled;              /* import_options.cancel said stop */
};

struct import_file {
    struct import_session *s;
    const char *name; /* the raw file's name in the session folder */
    int is_launcher;
    int64_t process_id;
    sqlite3_stmt *stmts[IMPORT_SLOTS];
    struct id_vec strings, threads, domains;
    struct u64_map thread_by_tid;
    struct u64_map stack_index; /* (thread_idx << 32 | file domain) -> index in stacks + 1 */
    struct range_stack *stacks;
    size_t nstacks, stacks_cap;
    uint64_t last_stack_key;
    struct range_stack *last_stack;
    struct u64_map open_starts; /* range_id + 1 -> index in starts + 1 */
    struct open_range *starts;
    size_t nstarts, starts_cap, free_start; /* free_start: head of the free list + 1 */
    struct finished_range finished[RANGE_BATCH];
    int nfinished;
    uint64_t last_ts, end_ts, dropped_sum, dropped_total, unbalanced;
    int saw_end, clean, malformed;
    uint64_t cut_strings; /* TRACE_STRING records the agent cut to TRACE_STRING_MAX */
    char *warning;
};

sqlite3 *import_db(struct import_file *f)
{
    return f->s->db;
}

/* Core statement slots. */
enum {
    SLOT_STRING = IMPORT_SLOT_CORE,
    SLOT_PROCESS,
    SLOT_THREAD,
    SLOT_THREAD_NAME,
    SLOT_THREAD_DROPPED,
    SLOT_DOMAIN,
    SLOT_CATEGORY,
    SLOT_RANGE,
    SLOT_RANGE_BATCH,
    SLOT_MARK,
    SLOT_PROCESS_END,
    SLOT_THREAD_OS_NAME,
    SLOT_THREAD_PYTHON_NAME,
    SLOT_PROCESS_INFO,
    SLOT_ANCESTOR,
};

static void import_vwarn(struct import_file *f, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    f->s->summary.warnings++;
    if (f->s->opt && f->s->opt->warn)
        f->s->opt->warn(f->s->opt->ctx, msg);
    size_t old = f->warning ? strlen(f->warning) : 0;
    char *w = realloc(f->warning, old + strlen(msg) + 3);
    if (!w)
        return;
    if (old)
        strcpy(w + old, "; ");
    strcpy(w + (old ? old + 2 : 0), msg);
    f->warning = w;
}

void import_warn(struct import_file *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    import_vwarn(f, fmt, ap);
    va_end(ap);
}

sqlite3_stmt *import_stmt(struct import_file *f, int slot, const char *sql)
{
    if (slot < 0 || slot >= IMPORT_SLOTS)
        return NULL;
    sqlite3_stmt *st = f->stmts[slot];
    if (!st) {
        if (sqlite3_prepare_v3(f->s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &f->stmts[slot],
                               NULL) != SQLITE_OK) {
            import_warn(f, "internal error preparing statement: %s", sqlite3_errmsg(f->s->db));
            return NULL;
        }
        return f->stmts[slot];
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static void bind_id_or_null(sqlite3_stmt *st, int col, int64_t id)
{
    if (id)
        sqlite3_bind_int64(st, col, id);
    else
        sqlite3_bind_null(st, col);
}

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
    struct import_session *s = f->s;
    uint64_t h = hash_bytes(bytes, len);
    for (;; h = h + 1 ? h + 1 : 1) {
        uint64_t *id = map_find(&s->string_ids, h);
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
    if (map_put(&s->string_ids, h, (uint64_t)id) < 0)
        return 0;
    sqlite3_stmt *st = import_stmt(f, SLOT_STRING, "INSERT INTO strings(id, value) VALUES(?, ?)");
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, copy, (int)len, SQLITE_STATIC);
    return step_done(st) < 0 ? 0 : id;
}

int64_t import_string(struct import_file *f, uint64_t file_string_id)
{
    return vec_get(&f->strings, file_string_id);
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
    sqlite3_stmt *st = import_stmt(
        f, SLOT_PROCESS,
        "INSERT INTO processes(pid, ppid, exe, cmdline, host, start_ns, raw_file, name) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, (int64_t)pid);
    sqlite3_bind_int64(st, 2, (int64_t)ppid);
    bind_text_or_null(st, 3, exe);
    bind_text_or_null(st, 4, cmdline);
    bind_text_or_null(st, 5, host);
    if (start)
        sqlite3_bind_int64(st, 6, (int64_t)start);
    sqlite3_bind_text(st, 7, f->name, -1, SQLITE_STATIC);
    bind_text_or_null(st, 8, name && *name ? name : NULL);
    if (step_done(st) < 0)
        return 0;
    f->process_id = sqlite3_last_insert_rowid(f->s->db);
    return f->process_id;
}

/* One ancestor pid of this file's process (depth 0: its parent), for link_parents(). */
static void insert_ancestor(struct import_file *f, unsigned depth, uint64_t pid)
{
    sqlite3_stmt *st = import_stmt(
        f, SLOT_ANCESTOR, "INSERT INTO temp.ancestors(process_id, depth, pid) VALUES(?, ?, ?)");
    if (!st || !f->process_id || !pid)
        return;
    sqlite3_bind_int64(st, 1, f->process_id);
    sqlite3_bind_int(st, 2, (int)depth);
    sqlite3_bind_int64(st, 3, (int64_t)pid);
    step_done(st);
}

int64_t import_process(struct import_file *f)
{
    if (f->is_launcher)
        return 0;
    if (!f->process_id)
        insert_process(f, pid_from_name(f->name), 0, 0, NULL, NULL, NULL, NULL);
    return f->process_id;
}

static int64_t insert_thread(struct import_file *f, uint64_t tid, uint64_t start_ns)
{
    int64_t process_id = import_process(f);
    sqlite3_stmt *st = import_stmt(
        f, SLOT_THREAD, "INSERT INTO threads(process_id, tid, start_ns) VALUES(?, ?, ?)");
    if (!st || !process_id)
        return 0;
    sqlite3_bind_int64(st, 1, process_id);
    sqlite3_bind_int64(st, 2, (int64_t)tid);
    if (start_ns)
        sqlite3_bind_int64(st, 3, (int64_t)start_ns);
    if (step_done(st) < 0)
        return 0;
    int64_t id = sqlite3_last_insert_rowid(f->s->db);
    map_put(&f->thread_by_tid, tid + 1, (uint64_t)id);
    return id;
}

int64_t import_thread_by_tid(struct import_file *f, uint64_t os_tid)
{
    uint64_t *id = map_find(&f->thread_by_tid, os_tid + 1);
    return id ? (int64_t)*id : insert_thread(f, os_tid, 0);
}

int64_t import_thread(struct import_file *f, uint64_t thread_idx)
{
    int64_t *slot = vec_slot(&f->threads, thread_idx);
    if (slot && *slot)
        return *slot;
    int64_t id = insert_thread(f, 0, 0); /* the THREAD record was lost: tid unknown */
    if (slot)
        *slot = id;
    return id;
}

static void on_process(struct import_file *f, struct trace_fields *fl)
{
    const uint8_t *exe, *cmd, *host, *version, *trace;
    uint64_t pid = trace_get_u(fl), ppid = trace_get_u(fl), start = trace_get_ts(fl);
    uint64_t wall = trace_get_u(fl);
    size_t exe_len = trace_get_s(fl, &exe), cmd_len = trace_get_s(fl, &cmd);
    size_t host_len = trace_get_s(fl, &host);
    uint64_t flags = trace_get_u(fl);
    size_t version_len = trace_get_s(fl, &version);
    size_t trace_len = trace_get_s(fl, &trace); /* launcher only: the -t list */
    char *exe_s = strndup((const char *)exe, exe_len), *cmd_s = malloc(cmd_len + 1);
    char *host_s = strndup((const char *)host, host_len);
    if (!exe_s || !cmd_s || !host_s)
        goto out;
    memcpy(cmd_s, cmd, cmd_len);
    cmd_s[cmd_len] = 0;
    char name[256];
    import_process_name(cmd_s, cmd_len, name, sizeof name);
    if (!*name && exe_len) /* no command line (a kernel thread, or it was cleared) */
        snprintf(name, sizeof name, "%s", strrchr(exe_s, '/') ? strrchr(exe_s, '/') + 1 : exe_s);
    for (size_t i = 0; i + 1 < cmd_len; i++) /* arguments are NUL-separated */
        if (!cmd_s[i])
            cmd_s[i] = ' ';
    struct import_session *s = f->s;
    if (flags & TRACE_FLAG_LAUNCHER) {
        f->is_launcher = 1;
        s->have_launcher = 1;
        free(s->command);
        free(s->host);
        free(s->version);
        free(s->trace);
        s->command = cmd_s;
        s->host = host_s;
        s->version = strndup((const char *)version, version_len);
        s->trace = strndup((const char *)trace, trace_len);
        s->start_ns = start;
        s->start_wall_ns = wall;
        s->no_nvidia_device = (flags & TRACE_FLAG_NO_NVIDIA_DEVICE) != 0;
        cmd_s = host_s = NULL;
        goto out;
    }
    if (!f->process_id) {
        insert_process(f, pid, ppid, start, exe_s, cmd_s, host_s, name);
        insert_ancestor(f, 0, ppid);
    }
    if (!s->first_process_start || start < s->first_process_start) {
        s->first_process_start = start; /* stands in for the session without a launcher file */
        s->first_process_wall = wall;
    }
out:
    free(exe_s);
    free(cmd_s);
    free(host_s);
}

static void on_process_end(struct import_file *f, struct trace_fields *fl)
{
    f->end_ts = trace_get_ts(fl);
    f->dropped_total = trace_get_u(fl);
    f->clean = (int)trace_get_u(fl);
    uint64_t exit_status = trace_get_u(fl); /* launcher only */
    f->saw_end = 1;
    if (f->is_launcher) {
        f->s->end_ns = f->end_ts;
        f->s->exit_status = (int64_t)exit_status;
    }
}

static void on_thread(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), tid = trace_get_u(fl), first = trace_get_ts(fl);
    int64_t *slot = vec_slot(&f->threads, idx);
    if (!slot)
        return;
    uint64_t *known = map_find(&f->thread_by_tid, tid + 1);
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
    *slot = insert_thread(f, tid, first);
}

static void on_thread_name(struct import_file *f, struct trace_fields *fl)
{
    uint64_t tid = trace_get_u(fl), name = trace_get_u(fl);
    int64_t thread_id = import_thread_by_tid(f, tid);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_THREAD_NAME, "UPDATE threads SET name_id = ? WHERE id = ?");
    if (!st || !thread_id)
        return;
    bind_id_or_null(st, 1, import_string(f, name));
    sqlite3_bind_int64(st, 2, thread_id);
    step_done(st);
}

/* TRACE_THREAD_OS_NAME and TRACE_THREAD_PYTHON_NAME: the latest of each kind wins. */
static void on_thread_label(struct import_file *f, struct trace_fields *fl, int python)
{
    uint64_t tid = trace_get_u(fl), name = trace_get_u(fl);
    int64_t thread_id = import_thread_by_tid(f, tid);
    sqlite3_stmt *st = python ? import_stmt(f, SLOT_THREAD_PYTHON_NAME,
                                            "UPDATE threads SET python_name_id = ? WHERE id = ?")
                              : import_stmt(f, SLOT_THREAD_OS_NAME,
                                            "UPDATE threads SET os_name_id = ? WHERE id = ?");
    if (!st || !thread_id || fl->bad)
        return;
    bind_id_or_null(st, 1, import_string(f, name));
    sqlite3_bind_int64(st, 2, thread_id);
    step_done(st);
}

/* TRACE_PROCESS_INFO: ranks, and the ancestors above the parent. */
static void on_process_info(struct import_file *f, struct trace_fields *fl)
{
    uint64_t rank = trace_get_u(fl), local = trace_get_u(fl);
    const uint8_t *var;
    size_t var_len = trace_get_s(fl, &var);
    uint64_t count = trace_get_u(fl);
    if (f->is_launcher || !import_process(f) || fl->bad)
        return;
    sqlite3_stmt *st = import_stmt(
        f, SLOT_PROCESS_INFO,
        "UPDATE processes SET rank = ?, local_rank = ?, rank_variable = ? WHERE id = ?");
    if (!st)
        return;
    if (rank)
        sqlite3_bind_int64(st, 1, (int64_t)(rank - 1));
    if (local)
        sqlite3_bind_int64(st, 2, (int64_t)(local - 1));
    if (var_len)
        sqlite3_bind_text(st, 3, (const char *)var, (int)var_len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, f->process_id);
    step_done(st);
    for (uint64_t i = 0; i < count && i < TRACE_MAX_ANCESTORS && !fl->bad; i++)
        insert_ancestor(f, (unsigned)i + 1, trace_get_u(fl));
}

static void on_string(struct import_file *f, struct trace_fields *fl)
{
    uint64_t id = trace_get_u(fl);
    const uint8_t *bytes;
    size_t len = trace_get_s(fl, &bytes);
    uint64_t original_len = trace_get_u(fl); /* present when the agent cut the string */
    int64_t *slot = vec_slot(&f->strings, id);
    if (slot && id && !fl->bad)
        *slot = session_intern(f, bytes, len);
    if (original_len > len)
        f->cut_strings++;
}

/* The agent could not write its file (a full disk): say so with its reason, instead of
 * blaming a kill; what it lost is in TRACE_PROCESS_END's dropped count. */
static void on_write_error(struct import_file *f, struct trace_fields *fl)
{
    uint64_t err = trace_get_u(fl), file_bytes = trace_get_u(fl);
    const uint8_t *why;
    size_t why_len = trace_get_s(fl, &why);
    (void)err;
    import_warn(f,
                "%s: the agent could not write its trace after %llu bytes: %.*s; the events "
                "that followed are counted as dropped",
                f->name, (unsigned long long)file_bytes, (int)why_len, (const char *)why);
}

static void on_dropped(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), count = trace_get_u(fl);
    f->dropped_sum += count;
    if (!idx)
        return;
    int64_t thread_id = import_thread(f, idx);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_THREAD_DROPPED,
                    "UPDATE threads SET dropped_events = dropped_events + ? WHERE id = ?");
    if (!st || !thread_id)
        return;
    sqlite3_bind_int64(st, 1, (int64_t)count);
    sqlite3_bind_int64(st, 2, thread_id);
    step_done(st);
}

/* ---- NVTX ------------------------------------------------------------------------------ */

static int64_t domain_of(struct import_file *f, uint64_t file_domain)
{
    return file_domain ? vec_get(&f->domains, file_domain) : 0;
}

static void on_domain(struct import_file *f, struct trace_fields *fl)
{
    uint64_t id = trace_get_u(fl), name = trace_get_u(fl);
    int64_t name_id = import_string(f, name);
    int64_t *slot = vec_slot(&f->domains, id);
    if (!slot || !id)
        return;
    /* domains are merged by name across processes: one row per distinct name */
    uint64_t *known = name_id ? map_find(&f->s->domain_by_name, (uint64_t)name_id) : NULL;
    if (known) {
        *slot = (int64_t)*known;
        return;
    }
    sqlite3_stmt *st = import_stmt(f, SLOT_DOMAIN, "INSERT INTO domains(id, name_id) VALUES(?, ?)");
    if (!st)
        return;
    int64_t domain_id = ++f->s->next_domain_id;
    sqlite3_bind_int64(st, 1, domain_id);
    bind_id_or_null(st, 2, name_id);
    if (step_done(st) < 0)
        return;
    if (name_id)
        map_put(&f->s->domain_by_name, (uint64_t)name_id, (uint64_t)domain_id);
    *slot = domain_id;
}

static void on_category(struct import_file *f, struct trace_fields *fl)
{
    uint64_t domain = trace_get_u(fl), category = trace_get_u(fl), name = trace_get_u(fl);
    sqlite3_stmt *st = import_stmt(
        f, SLOT_CATEGORY,
        "INSERT OR REPLACE INTO categories(domain_id, category, name_id) VALUES(?, ?, ?)");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, domain_of(f, domain));
    sqlite3_bind_int64(st, 2, (int64_t)category);
    bind_id_or_null(st, 3, import_string(f, name));
    step_done(st);
}

/* EVENT fields: u name, u category, u color (ARGB + 1), u payload_type, u payload bits. */
static void read_event(struct import_file *f, struct trace_fields *fl, struct open_range *r)
{
    r->name_id = import_string(f, trace_get_u(fl));
    r->category = trace_get_u(fl);
    r->color = trace_get_u(fl);
    r->payload_type = trace_get_u(fl);
    r->payload_bits = trace_get_u(fl);
}

/* Binds the payload as the NVTX type it was given in (nvToolsExt.h's NVTX_PAYLOAD_TYPE_*). */
static void bind_payload(sqlite3_stmt *st, int col, uint64_t type, uint64_t bits)
{
    uint32_t low = (uint32_t)bits;
    double d;
    float fl;
    switch (type) {
    case 1: /* UNSIGNED_INT64: SQLite integers are signed; values above 2^63 wrap */
    case 2: /* INT64 */
        sqlite3_bind_int64(st, col, (int64_t)bits);
        return;
    case 3: /* DOUBLE */
        memcpy(&d, &bits, sizeof d);
        sqlite3_bind_double(st, col, d);
        return;
    case 4: /* UNSIGNED_INT32 */
        sqlite3_bind_int64(st, col, low);
        return;
    case 5: /* INT32 */
        sqlite3_bind_int64(st, col, (int32_t)low);
        return;
    case 6: /* FLOAT */
        memcpy(&fl, &low, sizeof fl);
        sqlite3_bind_double(st, col, fl);
        return;
    default:
        sqlite3_bind_null(st, col);
    }
}

static void bind_color(sqlite3_stmt *st, int col, uint64_t color)
{
    if (color)
        sqlite3_bind_int64(st, col, (int64_t)(color - 1));
    else
        sqlite3_bind_null(st, col);
}

#define RANGE_COLUMNS                                                                              \
    "INSERT INTO ranges(id, process_id, domain_id, name_id, category, color, payload, style, "     \
    "depth, "                                                                                      \
    "parent_id, start_thread_id, end_thread_id, start_ns, end_ns) VALUES"
#define RANGE_VALUES "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
enum { RANGE_FIELDS = 14 };

/* One range's 14 values from column `col` on. */
static void bind_range(sqlite3_stmt *st, int col, int64_t process_id,
                       const struct finished_range *row)
{
    const struct open_range *r = &row->range;
    sqlite3_bind_int64(st, col, r->id);
    sqlite3_bind_int64(st, col + 1, process_id);
    sqlite3_bind_int64(st, col + 2, r->domain_id);
    bind_id_or_null(st, col + 3, r->name_id);
    sqlite3_bind_int64(st, col + 4, (int64_t)r->category);
    bind_color(st, col + 5, r->color);
    bind_payload(st, col + 6, r->payload_type, r->payload_bits);
    sqlite3_bind_int(st, col + 7, row->style);
    if (row->style == 0) {
        sqlite3_bind_int64(st, col + 8, r->depth);
        bind_id_or_null(st, col + 9, r->parent_id);
    }
    sqlite3_bind_int64(st, col + 10, r->thread_id);
    bind_id_or_null(st, col + 11, row->end_thread_id);
    sqlite3_bind_int64(st, col + 12, (int64_t)r->start_ns);
    if (row->end_thread_id)
        sqlite3_bind_int64(st, col + 13, (int64_t)row->end_ns);
}

/* "INSERT ... VALUES (...), (...), ..." with RANGE_BATCH rows, built once. */
static const char *range_batch_sql(void)
{
    static char sql[sizeof RANGE_COLUMNS + RANGE_BATCH * (sizeof RANGE_VALUES + 1)];
    if (!sql[0]) {
        size_t len = (size_t)snprintf(sql, sizeof sql, "%s", RANGE_COLUMNS);
        for (int i = 0; i < RANGE_BATCH; i++)
            len +=
                (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", i ? "," : "", RANGE_VALUES);
    }
    return sql;
}

static int finished_range_by_id(const void *a, const void *b)
{
    int64_t x = ((const struct finished_range *)a)->range.id;
    int64_t y = ((const struct finished_range *)b)->range.id;
    return (x > y) - (x < y);
}

/* Writes the finished ranges held back: a full batch in one statement (one VDBE run for
 * RANGE_BATCH rows instead of one per row: the importer's largest saving), the rest one by one.
 * Nested ranges finish innermost first, so their ids (given at the push) come in reverse; in
 * id order SQLite appends each row at the end of the table instead of searching for its place
 * (measured: ~12% of the import). */
static void flush_ranges(struct import_file *f)
{
    qsort(f->finished, (size_t)f->nfinished, sizeof f->finished[0], finished_range_by_id);
    int full = f->nfinished == RANGE_BATCH;
    sqlite3_stmt *st = full ? import_stmt(f, SLOT_RANGE_BATCH, range_batch_sql()) : NULL;
    if (st) {
        for (int i = 0; i < RANGE_BATCH; i++)
            bind_range(st, 1 + i * RANGE_FIELDS, f->process_id, &f->finished[i]);
        if (step_done(st) == 0)
            f->s->summary.ranges += RANGE_BATCH;
        f->nfinished = 0;
        return;
    }
    for (int i = 0; i < f->nfinished; i++) {
        st = import_stmt(f, SLOT_RANGE, RANGE_COLUMNS RANGE_VALUES);
        if (!st)
            break;
        bind_range(st, 1, f->process_id, &f->finished[i]);
        if (step_done(st) == 0)
            f->s->summary.ranges++;
    }
    f->nfinished = 0;
}

/* Queues one range for writing; end_thread_id 0: never ended. */
static void insert_range(struct import_file *f, const struct open_range *r, int style,
                         int64_t end_thread_id, uint64_t end_ns)
{
    struct finished_range *row = &f->finished[f->nfinished++];
    row->range = *r;
    row->style = style;
    row->end_thread_id = end_thread_id;
    row->end_ns = end_ns;
    if (f->nfinished == RANGE_BATCH)
        flush_ranges(f);
}

static struct range_stack *stack_for(struct import_file *f, uint64_t thread_idx, uint64_t domain)
{
    uint64_t key = (thread_idx << 32 | (domain & 0xffffffffu)) + 1;
    if (key == f->last_stack_key)
        return f->last_stack;
    uint64_t *index = map_find(&f->stack_index, key);
    if (!index) {
        if (f->nstacks == f->stacks_cap) {
            size_t cap = f->stacks_cap ? f->stacks_cap * 2 : 16;
            struct range_stack *stacks = realloc(f->stacks, cap * sizeof *stacks);
            if (!stacks)
                return NULL;
            f->stacks = stacks;
            f->stacks_cap = cap;
        }
        memset(&f->stacks[f->nstacks], 0, sizeof f->stacks[0]);
        if (map_put(&f->stack_index, key, ++f->nstacks) < 0)
            return NULL;
        index = map_find(&f->stack_index, key);
    }
    f->last_stack_key = key;
    f->last_stack = &f->stacks[*index - 1];
    return f->last_stack;
}

/* Levels from `from` up whose pops were lost (dropped records): they never ended. */
static void stack_abandon_from(struct import_file *f, struct range_stack *stack, uint32_t from)
{
    for (uint32_t d = from; d < stack->top; d++) {
        if (stack->levels[d].id)
            insert_range(f, &stack->levels[d], 0, 0, 0);
        stack->levels[d].id = 0;
    }
    if (stack->top > from)
        stack->top = from;
}

static int stack_reserve(struct range_stack *stack, uint32_t depth)
{
    if (depth < stack->cap)
        return 0;
    uint32_t cap = stack->cap ? stack->cap : 16;
    while (cap <= depth)
        cap *= 2;
    struct open_range *levels = realloc(stack->levels, cap * sizeof *levels);
    if (!levels)
        return -ENOMEM;
    memset(levels + stack->cap, 0, (cap - stack->cap) * sizeof *levels);
    stack->levels = levels;
    stack->cap = cap;
    return 0;
}

static void on_push(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), ts = trace_get_ts(fl), domain = trace_get_u(fl),
             depth = trace_get_u(fl);
    struct range_stack *stack = stack_for(f, idx, domain);
    if (!stack || depth >= MAX_DEPTH || stack_reserve(stack, (uint32_t)depth) < 0) {
        f->malformed++;
        return;
    }
    stack_abandon_from(f, stack, (uint32_t)depth);
    struct open_range *r = &stack->levels[depth];
    read_event(f, fl, r);
    r->id = ++f->s->next_range_id;
    r->parent_id = depth && stack->levels[depth - 1].id ? stack->levels[depth - 1].id : 0;
    r->domain_id = domain_of(f, domain);
    r->thread_id = import_thread(f, idx);
    r->start_ns = ts;
    r->depth = (uint32_t)depth;
    stack->top = (uint32_t)depth + 1;
}

static void on_pop(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), ts = trace_get_ts(fl), domain = trace_get_u(fl),
             depth = trace_get_u(fl);
    struct range_stack *stack = stack_for(f, idx, domain);
    if (!stack || depth >= MAX_DEPTH) {
        f->malformed++;
        return;
    }
    stack_abandon_from(f, stack, (uint32_t)depth + 1);
    if (depth < stack->top && stack->levels[depth].id) { /* else its push was dropped */
        insert_range(f, &stack->levels[depth], 0, stack->levels[depth].thread_id, ts);
        stack->levels[depth].id = 0;
    }
    if (stack->top > depth)
        stack->top = (uint32_t)depth;
}

static void free_start_slot(struct import_file *f, size_t i)
{
    f->starts[i].depth = (uint32_t)f->free_start; /* a free slot holds the next free index + 1 */
    f->free_start = i + 1;
}

static void on_start(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), ts = trace_get_ts(fl), range_id = trace_get_u(fl),
             domain = trace_get_u(fl);
    uint64_t *prev = map_find(&f->open_starts, range_id + 1);
    if (prev) { /* the id was reused before its end arrived: the earlier range never ended */
        insert_range(f, &f->starts[*prev - 1], 1, 0, 0);
        free_start_slot(f, *prev - 1);
        map_remove(&f->open_starts, range_id + 1);
    }
    if (f->nstarts == f->starts_cap && !f->free_start) {
        size_t cap = f->starts_cap ? f->starts_cap * 2 : 64;
        struct open_range *starts = realloc(f->starts, cap * sizeof *starts);
        if (!starts)
            return;
        f->starts = starts;
        f->starts_cap = cap;
    }
    size_t slot;
    if (f->free_start) {
        slot = f->free_start - 1;
        f->free_start = f->starts[slot].depth;
    } else {
        slot = f->nstarts++;
    }
    struct open_range *r = &f->starts[slot];
    memset(r, 0, sizeof *r);
    read_event(f, fl, r);
    r->id = ++f->s->next_range_id;
    r->domain_id = domain_of(f, domain);
    r->thread_id = import_thread(f, idx);
    r->start_ns = ts;
    map_put(&f->open_starts, range_id + 1, slot + 1);
}

static void on_end(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), ts = trace_get_ts(fl), range_id = trace_get_u(fl);
    uint64_t *slot = map_find(&f->open_starts, range_id + 1);
    if (!slot)
        return; /* its start was dropped */
    size_t i = *slot - 1;
    insert_range(f, &f->starts[i], 1, import_thread(f, idx), ts);
    map_remove(&f->open_starts, range_id + 1);
    free_start_slot(f, i);
}

static void on_mark(struct import_file *f, struct trace_fields *fl)
{
    uint64_t idx = trace_get_u(fl), ts = trace_get_ts(fl), domain = trace_get_u(fl);
    struct open_range ev;
    read_event(f, fl, &ev);
    sqlite3_stmt *st =
        import_stmt(f, SLOT_MARK,
                    "INSERT INTO marks(process_id, thread_id, domain_id, name_id, category, "
                    "color, payload, ts_ns) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    int64_t thread_id = import_thread(f, idx);
    if (!st || !thread_id)
        return;
    sqlite3_bind_int64(st, 1, f->process_id);
    sqlite3_bind_int64(st, 2, thread_id);
    sqlite3_bind_int64(st, 3, domain_of(f, domain));
    bind_id_or_null(st, 4, ev.name_id);
    sqlite3_bind_int64(st, 5, (int64_t)ev.category);
    bind_color(st, 6, ev.color);
    bind_payload(st, 7, ev.payload_type, ev.payload_bits);
    sqlite3_bind_int64(st, 8, (int64_t)ts);
    if (step_done(st) == 0)
        f->s->summary.marks++;
}

/* ---- the record loop -------------------------------------------------------------------- */

/* Reads `before` varints, then the ts that follows them, to keep the chunk's clock. */
static void skip_to_ts(struct trace_fields *fl, int before)
{
    while (before--)
        trace_get_u(fl);
    trace_get_ts(fl);
}

static void import_core_record(struct import_file *f, unsigned type, struct trace_fields *fl)
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
        on_thread_label(f, fl, 0);
        break;
    case TRACE_THREAD_PYTHON_NAME:
        on_thread_label(f, fl, 1);
        break;
    case TRACE_PROCESS_INFO:
        on_process_info(f, fl);
        break;
    case TRACE_STRING:
        on_string(f, fl);
        break;
    case TRACE_DROPPED:
        on_dropped(f, fl);
        break;
    case TRACE_DOMAIN:
        on_domain(f, fl);
        break;
    case TRACE_CATEGORY:
        on_category(f, fl);
        break;
    case TRACE_PUSH:
        on_push(f, fl);
        break;
    case TRACE_POP:
        on_pop(f, fl);
        break;
    case TRACE_START:
        on_start(f, fl);
        break;
    case TRACE_END:
        on_end(f, fl);
        break;
    case TRACE_MARK:
        on_mark(f, fl);
        break;
    case TRACE_NAME_RESOURCE: /* CUDA handles named with NVTX: joined to CUPTI's ids there */
        import_cuda_resource_name(f, fl);
        break;
    case TRACE_UNBALANCED_POP:
        f->unbalanced++;
        skip_to_ts(fl, 1);
        break;
    /* informational, but their ts must be read: every ts is a delta from the previous one */
    case TRACE_DOMAIN_DESTROY:
        skip_to_ts(fl, 1);
        break;
    case TRACE_CLOCK:
        skip_to_ts(fl, 1);
        break;
    case TRACE_WRITE_ERROR:
        on_write_error(f, fl);
        break;
    default:
        f->s->summary.skipped++;
        break; /* a newer writer's record: skipped by length */
    }
}

/* Each source's records go to its module, by type range (src/trace/format.h). */
static void import_record(struct import_file *f, unsigned type, struct trace_fields *fl)
{
    if (type >= TRACE_CUDA_FIRST && type <= TRACE_CUDA_LAST) {
        f->s->cuda_records++;
        import_cuda_record(f, type, fl);
    } else if (type >= TRACE_NVML_FIRST && type <= TRACE_NVML_LAST)
        import_nvml_record(f, type, fl);
    else
        import_core_record(f, type, fl);
}

/* Ranges still open at the end of the file never ended (exit inside a range, or a kill). */
static void close_open_ranges(struct import_file *f)
{
    for (size_t i = 0; i < f->nstacks; i++) {
        stack_abandon_from(f, &f->stacks[i], 0);
        free(f->stacks[i].levels);
    }
    for (size_t i = 0; i < f->open_starts.cap; i++)
        if (f->open_starts.keys[i])
            insert_range(f, &f->starts[f->open_starts.values[i] - 1], 1, 0, 0);
    flush_ranges(f);
}

static void finish_process(struct import_file *f)
{
    struct import_session *s = f->s;
    uint64_t dropped =
        f->saw_end && f->dropped_total > f->dropped_sum ? f->dropped_total : f->dropped_sum;
    s->summary.dropped_events += dropped;
    if (f->is_launcher || !f->process_id)
        return;
    sqlite3_stmt *st =
        import_stmt(f, SLOT_PROCESS_END,
                    "UPDATE processes SET end_ns = ?, clean_exit = ?, dropped_events = ?, "
                    "unbalanced_pops = ?, import_warning = ? WHERE id = ?");
    if (!st)
        return;
    uint64_t end = f->saw_end ? f->end_ts : f->last_ts;
    if (end)
        sqlite3_bind_int64(st, 1, (int64_t)end);
    sqlite3_bind_int(st, 2, f->saw_end && f->clean);
    sqlite3_bind_int64(st, 3, (int64_t)dropped);
    sqlite3_bind_int64(st, 4, (int64_t)f->unbalanced);
    bind_text_or_null(st, 5, f->warning);
    sqlite3_bind_int64(st, 6, f->process_id);
    step_done(st);
}

static void file_release(struct import_file *f)
{
    for (int i = 0; i < IMPORT_SLOTS; i++)
        sqlite3_finalize(f->stmts[i]);
    free(f->strings.v);
    free(f->threads.v);
    free(f->domains.v);
    map_release(&f->thread_by_tid);
    map_release(&f->stack_index);
    map_release(&f->open_starts);
    free(f->stacks);
    free(f->starts);
    free(f->warning);
}

static void report_progress(struct import_session *s, const struct trace_reader *r, uint64_t base)
{
    if (s->opt && s->opt->progress)
        s->opt->progress(s->opt->ctx, base + r->pos, s->bytes_total);
}

/* Asks import_options.cancel whether to stop (a signal is pending): from the record loop and,
 * through sqlite3_progress_handler, from long SQL statements. */
static int import_cancelled(void *ctx)
{
    struct import_session *s = ctx;
    if (!s->cancelled && s->opt && s->opt->cancel && s->opt->cancel(s->opt->ctx))
        s->cancelled = 1;
    return s->cancelled;
}

static void import_file(struct import_session *s, const char *path, const char *name)
{
    struct import_file f = {.s = s, .name = name};
    f.is_launcher = strcmp(name, "launcher.lrt") == 0;
    struct trace_reader r;
    if (trace_reader_open(&r, path) < 0) {
        if (r.not_a_trace) { /* not a file an agent wrote: said, but not a process */
            s->summary.warnings++;
            if (s->opt && s->opt->warn) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s: %s; skipped", name, r.damage);
                s->opt->warn(s->opt->ctx, msg);
            }
            s->bytes_done += r.size;
            trace_reader_close(&r);
            file_release(&f);
            return;
        }
        import_process(&f);
        import_warn(&f, "%s: %s; %zu bytes lost", name, r.damage, r.bytes_lost);
        goto done;
    }
    s->lantern_files++;
    unsigned type;
    struct trace_fields fl;
    int rc = 0;
    uint64_t base = s->bytes_done;
    while (!s->cancelled && (rc = trace_reader_next(&r, &type, &fl)) == 1) {
        import_record(&f, type, &fl);
        if (fl.bad)
            f.malformed++;
        if (r.prev_ts > f.last_ts)
            f.last_ts = r.prev_ts;
        if (++s->summary.records % PROGRESS_EVERY == 0) {
            report_progress(s, &r, base);
            if (import_cancelled(s))
                break;
        }
    }
    if (rc < 0) {
        import_process(&f);
        import_warn(&f, "%s: %s; %zu bytes lost", name, r.damage, r.bytes_lost);
    }
    if (f.malformed)
        import_warn(&f, "%s: %d malformed records skipped", name, f.malformed);
    if (f.cut_strings) {
        s->truncated_strings += f.cut_strings;
        import_warn(&f, "%s: %llu names longer than %u bytes were cut (they end with \"%s\")", name,
                    (unsigned long long)f.cut_strings, TRACE_STRING_MAX, TRACE_STRING_CUT_MARK);
    }
done:
    trace_reader_close(&r);
    close_open_ranges(&f);
    finish_process(&f);
    s->summary.files++;
    s->bytes_done += r.size;
    file_release(&f);
}

/* ---- the session ----------------------------------------------------------------------- */

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
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (is_number)
        sqlite3_bind_int64(st, 2, number);
    else
        bind_text_or_null(st, 2, text);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static char *query_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* The session's meta rows; a session without a launcher file (synthetic, or the launcher
 * was killed early) takes them from its earliest process. */
static int write_meta(struct import_session *s)
{
    sqlite3 *db = s->db;
    if (!s->have_launcher) {
        s->command = query_text(db, "SELECT cmdline FROM processes ORDER BY start_ns, id LIMIT 1");
        s->host = query_text(db, "SELECT host FROM processes ORDER BY start_ns, id LIMIT 1");
        s->start_ns = s->first_process_start;
        s->start_wall_ns = s->first_process_wall;
    }
    if (!s->end_ns)
        s->end_ns = (uint64_t)query_int(db, "SELECT max(end_ns) FROM processes");
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

static void session_release(struct import_session *s)
{
    for (size_t i = 1; i <= s->strings; i++)
        free(s->string_values[i]);
    free(s->string_values);
    free(s->string_lengths);
    map_release(&s->string_ids);
    map_release(&s->domain_by_name);
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

/* Bulk load: no journal and no fsync while the new file fills (it is renamed into place
 * only when complete), then the normal settings for whoever opens it later. */
static int import_all(struct import_session *s, const char *dir, char **names, size_t count)
{
    if (exec_sql(s->db,
                 "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;") <
            0 ||
        exec_sql(s->db, "BEGIN") < 0 || exec_sql(s->db, import_schema_sql) < 0 ||
        exec_sql(s->db, "INSERT INTO domains(id, name_id) VALUES(0, NULL)") < 0 ||
        exec_sql(s->db, "CREATE TEMP TABLE ancestors(process_id INTEGER, depth INTEGER, "
                        "pid INTEGER)") < 0)
        return -EIO;
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
    /* (the CUDA pass sorts every range: skipped for sessions without CUDA) */
    if ((s->cuda_records && import_cuda_finish(s->db) < 0) || import_nvml_finish(s->db) < 0 ||
        link_parents(s->db) < 0)
        return -EIO;
    if (write_meta(s) < 0 || exec_sql(s->db, import_indexes_sql) < 0 ||
        exec_sql(s->db, "COMMIT") < 0)
        return -EIO;
    return exec_sql(s->db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
}

/* What an import that SQLite failed ran into: a full disk and an interruption say so. */
static int import_failure(struct import_session *s, int rc)
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
    struct import_session s = {.opt = opt, .exit_status = -1};
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
