/* The CPU sampling part of the importer: TRACE_CPU_* records (120-139) into cpu_sampling,
 * cpu_samples and the interned stacks (cpu_stacks -> cpu_callsites -> cpu_frames). Samples
 * are stored as they come, pointing at their stack's row; a file's stacks are symbolized when
 * the file ends, once its mappings are all known (they may follow the stacks that use them):
 * each distinct address once per file, through the ELF files' symbol tables
 * (import_symbols.c); frames and callsites are shared by the whole session. In a Python
 * process, each sample then takes its thread's nearest Python stack (TRACE_PY_*), spliced in
 * place of the interpreter's frames (import_cpu_python.c). The threads' off-CPU intervals
 * (TRACE_CPU_THREAD_STATE) go to cpu_thread_states as they come. Layouts: src/trace/records.def;
 * the tables: docs/schema.md. */
#include "common/u64_map.h"
#include "db/import_cpu_python.h"
#include "db/import_demangle.h"
#include "db/import_internal.h"
#include "db/import_symbols.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SLOT_STATUS,
    SLOT_TOTALS,
    SLOT_STACK,
    SLOT_SAMPLE,
    SLOT_FRAME,
    SLOT_CALLSITE,
    SLOT_STACK_CALLSITE,
    SLOT_QUALITY,
    SLOT_PID,
    SLOT_PY_STATUS,
    SLOT_PY_TOTALS,
    SLOT_GIL_WAIT,
    SLOT_RESTACK,
    SLOT_PY_QUALITY,
    SLOT_STACK_ROW,
    SLOT_PERIOD,
    SLOT_THREAD_STATE,
    SLOT_SWITCHES,
};

#define CPU_MAX_FRAMES 128u

/* The session's interning: frames by (module, name), callsites by (parent, frame). */
struct cpu_session {
    struct symbol_cache *symbols;
    struct u64_map frames;    /* hash of module and name -> cpu_frames.id */
    struct u64_map callsites; /* parent callsite << 32 | frame -> cpu_callsites.id */
};

struct cpu_mapping {
    uint64_t start, end, offset;
    char *path;
};

struct cpu_stack {
    int64_t row; /* cpu_stacks.id */
    uint8_t *frames;
    size_t len;
    int64_t *symbolized; /* its cpu_frames ids, leaf first, once symbolized */
    uint8_t *kinds;      /* their enum cpu_frame_kind */
    size_t depth;
};

/* A Python stack of the file: its frames' cpu_frames ids, innermost first. */
struct cpu_py_stack {
    int64_t *frames;
    uint8_t *entry; /* the outermost frame of an evaluation call */
    size_t depth;
    int64_t row; /* its cpu_stacks row alone (GIL waits), made at first need */
};

/* A sample as stored: its rows (first to last: 1 + its overruns), to give it a Python stack
 * at the file's end. */
struct cpu_sample_ref {
    int64_t row, last_row;
    uint32_t tid;
    uint64_t ts;
    uint32_t stack; /* index + 1 into stacks; 0: no user-space frame */
};

/* A perf map file's entry (/tmp/perf-PID.map: "START SIZE name", hex): code a JIT made. */
struct cpu_jit_symbol {
    uint64_t start, end;
    char *name;
};

struct cpu_file {
    struct import_file *f;
    struct cpu_jit_symbol *jit; /* the process's perf map, sorted (read on first need) */
    size_t jit_count;
    int jit_read;
    struct cpu_session *s;
    struct cpu_mapping *maps;
    size_t map_count, map_cap;
    struct id_vec stack_index; /* file stack id -> index + 1 in stacks */
    struct cpu_stack *stacks;
    size_t stack_count, stack_cap;
    struct u64_map address_frames; /* address + 1 -> cpu_frames.id (0: none, truncate) */
    struct u64_map frame_kinds;    /* cpu_frames.id -> enum cpu_frame_kind + 1 */
    uint64_t addresses, unsymbolized, truncated;
    /* Python (TRACE_PY_*) */
    char *interpreter; /* base name of the file with the interpreter's code; NULL: none */
    uint64_t py_tick_ns;
    struct id_vec py_frame_index; /* file frame id -> cpu_frames.id */
    struct id_vec py_stack_index; /* file stack id -> index + 1 in py_stacks */
    struct cpu_py_stack *py_stacks;
    size_t py_stack_count, py_stack_cap;
    struct cpu_py_look *looks;
    size_t look_count, look_cap;
    struct cpu_sample_ref *samples;
    size_t sample_count, sample_cap;
};

/* Grows *v (of *cap elements of `size` bytes) to hold one more: 0, or -ENOMEM. */
static int grow(void **v, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 0;
    size_t want = *cap ? *cap * 2 : 256;
    void *grown = realloc(*v, want * size);
    if (!grown)
        return -ENOMEM;
    *v = grown;
    *cap = want;
    return 0;
}

static int cpu_session_open(sqlite3 *db, void **state)
{
    (void)db;
    struct cpu_session *s = calloc(1, sizeof *s);
    if (!s || !(s->symbols = symbol_cache_new())) {
        free(s);
        return -ENOMEM;
    }
    *state = s;
    return 0;
}

static void cpu_session_close(void *state)
{
    struct cpu_session *s = state;
    if (!s)
        return;
    symbol_cache_free(s->symbols);
    u64_map_release(&s->frames);
    u64_map_release(&s->callsites);
    free(s);
}

static void *cpu_file_open(struct import_file *f, void *session_state)
{
    struct cpu_file *c = calloc(1, sizeof *c);
    if (c) {
        c->f = f;
        c->s = session_state;
    }
    return c;
}

static const char *status_name(uint64_t status)
{
    switch (status) {
    case TRACE_CPU_SAMPLING_ON:
        return "on";
    case TRACE_CPU_SAMPLING_NOT_PERMITTED:
        return "not permitted";
    case TRACE_CPU_SAMPLING_UNAVAILABLE:
        return "unavailable";
    default:
        return "failed";
    }
}

/* TRACE_CPU_SAMPLING's Python fields: the interpreter's file, kept for the splice. */
static int import_py_status(struct cpu_file *c, const struct trace_cpu_sampling *r)
{
    const uint8_t *path = r->python_interpreter.bytes, *slash = NULL;
    for (size_t i = 0; i < r->python_interpreter.len; i++)
        if (path[i] == '/')
            slash = &path[i];
    size_t from = slash ? (size_t)(slash + 1 - path) : 0;
    free(c->interpreter);
    c->interpreter = strndup((const char *)path + from, r->python_interpreter.len - from);
    if (!c->interpreter)
        return -ENOMEM;
    c->py_tick_ns = r->python_tick_ns;
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_PY_STATUS,
        "UPDATE cpu_sampling SET python_status = ?, python_reason = ? WHERE process_id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_TEXT(status_name(r->python_status)), IMPORT_BYTES(r->python_reason),
                    IMPORT_INT(import_process(c->f)));
    return import_step(c->f, st, "cannot store the Python sampling status: ");
}

static int import_py_totals(struct cpu_file *c, const struct trace_cpu_sampler *r)
{
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_PY_TOTALS,
        "UPDATE cpu_sampling SET python_snapshots = ?, python_lost = ?, python_unreadable = ?,"
        " python_cpu_ns = ? WHERE process_id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(r->python_snapshots), IMPORT_INT(r->python_lost),
                    IMPORT_INT(r->python_unreadable), IMPORT_INT(r->python_cpu_ns),
                    IMPORT_INT(import_process(c->f)));
    return import_step(c->f, st, "cannot store the Python sampler's totals: ");
}

static int import_status(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_cpu_sampling r;
    trace_get_cpu_sampling(fl, &r);
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_STATUS,
        "INSERT INTO cpu_sampling(process_id, status, period_ns, reason) VALUES(?, ?, ?, ?)"
        " ON CONFLICT(process_id) DO UPDATE SET status = excluded.status,"
        " period_ns = excluded.period_ns, reason = excluded.reason");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_process(c->f)), IMPORT_TEXT(status_name(r.status)),
                    IMPORT_INT(r.period_ns), IMPORT_BYTES(r.reason));
    if (import_step(c->f, st, "cannot store the CPU sampling status: ") < 0)
        return -EIO;
    return r.optional_present ? import_py_status(c, &r) : 0;
}

static int import_totals(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_cpu_sampler r;
    trace_get_cpu_sampler(fl, &r);
    sqlite3_stmt *st = import_stmt(c->f, SLOT_TOTALS,
                                   "UPDATE cpu_sampling SET samples = ?, lost = ?, threads = ?,"
                                   " threads_unsampled = ?, cpu_ns = ?, paused_samples = ?"
                                   " WHERE process_id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(r.samples), IMPORT_INT(r.lost), IMPORT_INT(r.threads),
                    IMPORT_INT(r.threads_unsampled), IMPORT_INT(r.cpu_ns),
                    IMPORT_INT(r.paused_samples), IMPORT_INT(import_process(c->f)));
    if (import_step(c->f, st, "cannot store the CPU sampler's totals: ") < 0)
        return -EIO;
    if (r.optional_present >= 8) { /* the thread states' fields (schema 9) */
        st = import_stmt(c->f, SLOT_SWITCHES,
                         "UPDATE cpu_sampling SET switches = ?, thread_states = ? WHERE process_id = ?");
        if (!st)
            return -EIO;
        import_bind_row(st, IMPORT_INT(r.switches), IMPORT_INT(r.states),
                        IMPORT_INT(import_process(c->f)));
        if (import_step(c->f, st, "cannot store the CPU sampler's totals: ") < 0)
            return -EIO;
    }
    /* the Python totals where the Python sampler said it ran (the later fields, written when
     * set, make the encoder write these too, as zeros) */
    return r.optional_present && c->interpreter ? import_py_totals(c, &r) : 0;
}

static int import_mapping(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_cpu_mapping r;
    trace_get_cpu_mapping(fl, &r);
    if (r.end <= r.start) {
        import_malformed(c->f);
        return 0;
    }
    if (c->map_count == c->map_cap) {
        size_t cap = c->map_cap ? c->map_cap * 2 : 64;
        struct cpu_mapping *grown = realloc(c->maps, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        c->maps = grown;
        c->map_cap = cap;
    }
    char *path = strndup((const char *)r.path.bytes, r.path.len);
    if (!path)
        return -ENOMEM;
    c->maps[c->map_count++] = (struct cpu_mapping){r.start, r.end, r.file_offset, path};
    return 0;
}

static int import_stack(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_cpu_stack r;
    trace_get_cpu_stack(fl, &r);
    int64_t *slot = id_vec_slot(&c->stack_index, r.stack_id);
    if (!slot || r.stack_id == 0) {
        import_malformed(c->f);
        return 0;
    }
    sqlite3_stmt *st =
        import_stmt(c->f, SLOT_STACK, "INSERT INTO cpu_stacks(process_id) VALUES(?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_process(c->f)));
    if (import_step(c->f, st, "cannot store a CPU stack: ") < 0)
        return -EIO;
    if (c->stack_count == c->stack_cap) {
        size_t cap = c->stack_cap ? c->stack_cap * 2 : 256;
        struct cpu_stack *grown = realloc(c->stacks, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        c->stacks = grown;
        c->stack_cap = cap;
    }
    struct cpu_stack *s = &c->stacks[c->stack_count];
    *s = (struct cpu_stack){.row = sqlite3_last_insert_rowid(import_db(c->f))};
    s->len = r.frames.len;
    s->frames = malloc(r.frames.len ? r.frames.len : 1);
    if (!s->frames)
        return -ENOMEM;
    memcpy(s->frames, r.frames.bytes, r.frames.len);
    *slot = (int64_t)++c->stack_count;
    return 0;
}

/* A sample that stands for 1 + overruns periods (CPU-time timers: expiries a late tick folded
 * into one signal) is stored as that many rows, the same but for their rowid: every reader of
 * cpu_samples counts periods of CPU time by counting rows. */
static int import_sample(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_cpu_sample r;
    trace_get_cpu_sample(fl, &r);
    int64_t index = id_vec_get(&c->stack_index, r.stack_id);
    if ((r.stack_id && !index) || r.overruns >= TRACE_CPU_SAMPLE_WEIGHT_MAX) {
        import_malformed(c->f); /* a stack the file never described, or a weight no agent writes */
        return 0;
    }
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_SAMPLE, "INSERT INTO cpu_samples(thread_id, ts_ns, stack_id) VALUES(?, ?, ?)");
    if (!st)
        return -EIO;
    int64_t thread = import_thread_by_tid(c->f, r.os_tid), first = 0;
    for (uint64_t i = 0; i <= r.overruns; i++) {
        import_bind_row(st, IMPORT_INT(thread), IMPORT_INT(r.ts),
                        IMPORT_NONZERO(index ? c->stacks[index - 1].row : 0));
        if (import_step(c->f, st, "cannot store a CPU sample: ") < 0)
            return -EIO;
        if (!first)
            first = sqlite3_last_insert_rowid(import_db(c->f));
    }
    if (grow((void **)&c->samples, &c->sample_cap, c->sample_count, sizeof *c->samples) < 0)
        return -ENOMEM;
    c->samples[c->sample_count++] =
        (struct cpu_sample_ref){first, sqlite3_last_insert_rowid(import_db(c->f)),
                                (uint32_t)r.os_tid, r.ts, (uint32_t)index};
    return 0;
}

/* ---- symbolizing a file's stacks, at its end ---- */

static uint64_t text_hash(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL;
}

/* cpu_frames.id of (name, module, and for a Python function its file and first line), made
 * the first time; 0 on failure. A 64-bit hash of them is the key: a collision among the
 * session's few thousand frames is ~1e-12. */
static int64_t frame_id(struct cpu_file *c, const char *name, const char *module, const char *file,
                        int64_t line)
{
    uint64_t key = text_hash(text_hash(0xcbf29ce484222325ULL, module), name);
    if (file)
        key = text_hash(key, file) ^ (uint64_t)line * 0x9E3779B97F4A7C15u;
    key |= 1;
    uint64_t *known = u64_map_find(&c->s->frames, key);
    if (known)
        return (int64_t)*known;
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_FRAME, "INSERT INTO cpu_frames(name, module, file, line) VALUES(?, ?, ?, ?)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_TEXT(name), IMPORT_TEXT(*module ? module : NULL), IMPORT_TEXT(file),
                    IMPORT_NONZERO(file ? line : 0));
    if (import_step(c->f, st, "cannot store a CPU frame: ") < 0)
        return 0;
    int64_t id = sqlite3_last_insert_rowid(import_db(c->f));
    return u64_map_put(&c->s->frames, key, (uint64_t)id) == 0 ? id : 0;
}

static const struct cpu_mapping *mapping_of(const struct cpu_file *c, uint64_t address)
{
    for (size_t i = c->map_count; i-- > 0;) /* the latest mapping of a reused range */
        if (address >= c->maps[i].start && address < c->maps[i].end)
            return &c->maps[i];
    return NULL;
}

static int jit_order(const void *a, const void *b)
{
    const struct cpu_jit_symbol *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The process's perf map file (LANTERN_PERF_MAP_DIR, else /tmp: perf-PID.map), which JITs
 * write for perf (python -X perf, node --perf-basic-prof, Java's perf-map-agent). */
static void jit_read(struct cpu_file *c)
{
    c->jit_read = 1;
    sqlite3_stmt *st = import_stmt(c->f, SLOT_PID, "SELECT pid FROM processes WHERE id = ?");
    if (!st)
        return;
    import_bind_row(st, IMPORT_INT(import_process(c->f)));
    if (sqlite3_step(st) != SQLITE_ROW)
        return;
    const char *folder = getenv(trace_env_name(TRACE_ENV_PERF_MAP_DIR));
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/perf-%lld.map", folder && *folder ? folder : "/tmp",
             (long long)sqlite3_column_int64(st, 0));
    FILE *map = fopen(path, "re");
    size_t cap = 0;
    while (map && fgets(line, sizeof line, map)) {
        unsigned long long start, size;
        int at = 0;
        if (sscanf(line, "%llx %llx %n", &start, &size, &at) < 2 || !at || !size)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (c->jit_count == cap) {
            cap = cap ? cap * 2 : 256;
            struct cpu_jit_symbol *grown = realloc(c->jit, cap * sizeof *grown);
            if (!grown)
                break;
            c->jit = grown;
        }
        char *name = strdup(line + at);
        if (!name)
            break;
        c->jit[c->jit_count++] = (struct cpu_jit_symbol){start, start + size, name};
    }
    if (map)
        fclose(map);
    if (c->jit_count)
        qsort(c->jit, c->jit_count, sizeof *c->jit, jit_order);
}

/* The JIT's name of an address, or NULL. */
static const char *jit_name(struct cpu_file *c, uint64_t address)
{
    if (!c->jit_read)
        jit_read(c);
    size_t lo = 0, hi = c->jit_count; /* the last entry starting at or below the address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->jit[mid].start <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && address < c->jit[lo - 1].end ? c->jit[lo - 1].name : NULL;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The frame of an address (a return address looked up one byte back, inside its call): -1
 * for an address in no executable mapping, where a frame-pointer walk went astray. */
static int64_t address_frame(struct cpu_file *c, uint64_t address, int leaf)
{
    uint64_t *known = u64_map_find(&c->address_frames, address + 1);
    if (known)
        return (int64_t)*known - 1;
    c->addresses++;
    const struct cpu_mapping *m = mapping_of(c, address);
    const char *jit = !m || !*m->path ? jit_name(c, address - (leaf ? 0 : 1)) : NULL;
    int64_t id = -1;
    if (jit) {
        id = frame_id(c, jit, "[jit]", NULL, 0);
        u64_map_put(&c->frame_kinds, (uint64_t)id,
                    cpu_python_frame_kind(jit, "[jit]", c->interpreter) + 1u);
    } else if (m) {
        uint64_t offset = address - m->start + m->offset - (leaf ? 0 : 1);
        const char *name = symbol_lookup(c->s->symbols, m->path, offset);
        const char *module = *m->path ? base_name(m->path) : "[anon]";
        char unknown[512];
        if (!name) {
            c->unsymbolized++;
            snprintf(unknown, sizeof unknown, "%s+0x%llx", module, (unsigned long long)offset);
            name = unknown;
        }
        char *demangled = import_demangle(name); /* C++: "at::native::add_kernel(...)" */
        id = frame_id(c, demangled ? demangled : name, module, NULL, 0);
        if (id > 0)
            u64_map_put(&c->frame_kinds, (uint64_t)id,
                        cpu_python_frame_kind(demangled ? demangled : name, module,
                                              c->interpreter) + 1u);
        free(demangled);
    } else {
        c->unsymbolized++;
    }
    u64_map_put(&c->address_frames, address + 1, (uint64_t)(id + 1));
    return id;
}

/* cpu_callsites.id of frame under parent (0: the outermost), made the first time. */
static int64_t callsite_id(struct cpu_file *c, int64_t parent, int64_t frame, int depth)
{
    uint64_t key = (uint64_t)parent << 32 | (uint64_t)frame;
    uint64_t *known = u64_map_find(&c->s->callsites, key);
    if (known)
        return (int64_t)*known;
    sqlite3_stmt *st =
        import_stmt(c->f, SLOT_CALLSITE,
                    "INSERT INTO cpu_callsites(parent_id, frame_id, depth) VALUES(?, ?, ?)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_NONZERO(parent), IMPORT_INT(frame), IMPORT_INT(depth));
    if (import_step(c->f, st, "cannot store a CPU callsite: ") < 0)
        return 0;
    int64_t id = sqlite3_last_insert_rowid(import_db(c->f));
    return u64_map_put(&c->s->callsites, key, (uint64_t)id) == 0 ? id : 0;
}

/* ---- Python (TRACE_PY_*) ---- */

static int import_py_frame(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_py_frame r;
    trace_get_py_frame(fl, &r);
    int64_t *slot = id_vec_slot(&c->py_frame_index, r.frame_id);
    if (!slot || r.frame_id == 0) {
        import_malformed(c->f);
        return 0;
    }
    char *file = strndup((const char *)r.file.bytes, r.file.len);
    char *name = strndup((const char *)r.function.bytes, r.function.len);
    int64_t id = file && name ? frame_id(c, name, base_name(file), file, (int64_t)r.first_line)
                              : 0;
    free(file);
    free(name);
    if (id <= 0)
        return -EIO;
    *slot = id;
    return 0;
}

static int import_py_stack(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_py_stack r;
    trace_get_py_stack(fl, &r);
    int64_t *slot = id_vec_slot(&c->py_stack_index, r.stack_id);
    if (!slot || r.stack_id == 0) {
        import_malformed(c->f);
        return 0;
    }
    if (grow((void **)&c->py_stacks, &c->py_stack_cap, c->py_stack_count, sizeof *c->py_stacks))
        return -ENOMEM;
    struct cpu_py_stack *ps = &c->py_stacks[c->py_stack_count];
    *ps = (struct cpu_py_stack){0};
    ps->frames = malloc(CPU_MAX_FRAMES * sizeof *ps->frames);
    ps->entry = malloc(CPU_MAX_FRAMES);
    if (!ps->frames || !ps->entry) {
        free(ps->frames);
        free(ps->entry);
        return -ENOMEM;
    }
    uint64_t prev_ts = 0;
    struct trace_fields f = {.p = r.frames.bytes, .end = r.frames.bytes + r.frames.len,
                             .prev_ts = &prev_ts};
    while (f.p < f.end && ps->depth < CPU_MAX_FRAMES) {
        uint64_t v = trace_get_u(&f);
        if (f.bad)
            break;
        int64_t frame = id_vec_get(&c->py_frame_index, v >> 1);
        if (!frame) /* the sampler could not name it (its table full, its names unreadable) */
            frame = frame_id(c, "[unknown Python function]", "", NULL, 0);
        if (frame <= 0)
            return -EIO;
        ps->frames[ps->depth] = frame;
        ps->entry[ps->depth++] = (uint8_t)(v & 1);
    }
    *slot = (int64_t)++c->py_stack_count;
    return 0;
}

/* A cpu_stacks row for frames (leaf first): 0 on failure. */
static int64_t stack_row(struct cpu_file *c, const int64_t *frames, size_t n)
{
    int64_t callsite = 0;
    for (size_t i = n; i-- > 0;) /* outermost first */
        if (!(callsite = callsite_id(c, callsite, frames[i], (int)(n - 1 - i))))
            return 0;
    sqlite3_stmt *st = import_stmt(c->f, SLOT_STACK_ROW,
                                   "INSERT INTO cpu_stacks(process_id, callsite_id) VALUES(?, ?)");
    if (!st)
        return 0;
    import_bind_row(st, IMPORT_INT(import_process(c->f)), IMPORT_NONZERO(callsite));
    if (import_step(c->f, st, "cannot store a CPU stack: ") < 0)
        return 0;
    return sqlite3_last_insert_rowid(import_db(c->f));
}

/* A look at a thread: joined with the native samples at the file's end (state 0), or a
 * GIL wait (state 1), stored now with its Python stack. */
static int import_py_sample(struct cpu_file *c, struct trace_fields *fl)
{
    struct trace_py_sample r;
    trace_get_py_sample(fl, &r);
    int64_t index = id_vec_get(&c->py_stack_index, r.stack_id);
    if (r.stack_id && !index) {
        import_malformed(c->f);
        return 0;
    }
    if (r.state == 0) {
        if (grow((void **)&c->looks, &c->look_cap, c->look_count, sizeof *c->looks) < 0)
            return -ENOMEM;
        c->looks[c->look_count++] = (struct cpu_py_look){(uint32_t)r.os_tid, r.ts, (uint32_t)index};
        return 0;
    }
    struct cpu_py_stack *ps = index ? &c->py_stacks[index - 1] : NULL;
    if (ps && !ps->row && !(ps->row = stack_row(c, ps->frames, ps->depth)))
        return -EIO;
    sqlite3_stmt *st = import_stmt(
        c->f, SLOT_GIL_WAIT,
        "INSERT INTO cpu_gil_waits(thread_id, ts_ns, duration_ns, stack_id) VALUES(?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_thread_by_tid(c->f, r.os_tid)), IMPORT_INT(r.ts),
                    IMPORT_INT(r.span_ns), IMPORT_NONZERO(ps ? ps->row : 0));
    return import_step(c->f, st, "cannot store a GIL wait: ");
}

/* A thread off the CPU, blocked or preempted, with the switch-outs merged into it. */
static int import_thread_state(struct cpu_file *c, struct trace_fields *fl)
{
    static const char *const names[] = {[TRACE_CPU_STATE_BLOCKED] = "blocked",
                                        [TRACE_CPU_STATE_PREEMPTED] = "preempted"};
    struct trace_cpu_thread_state r;
    trace_get_cpu_thread_state(fl, &r);
    if (r.end <= r.start || r.on_ns >= r.end - r.start || r.state >= sizeof names / sizeof *names ||
        !names[r.state]) {
        import_malformed(c->f);
        return 0;
    }
    sqlite3_stmt *st = import_stmt(c->f, SLOT_THREAD_STATE,
                                   "INSERT INTO cpu_thread_states(thread_id, start_ns, end_ns,"
                                   " state, state_ns, switches) VALUES(?, ?, ?, ?, ?, ?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_thread_by_tid(c->f, r.os_tid)), IMPORT_INT(r.start),
                    IMPORT_INT(r.end), IMPORT_TEXT(names[r.state]),
                    IMPORT_INT(r.end - r.start - r.on_ns), IMPORT_INT(r.merged + 1));
    return import_step(c->f, st, "cannot store a thread state: ");
}

static int cpu_record(void *ctx, unsigned type, struct trace_fields *fl)
{
    struct cpu_file *c = ctx;
    switch (type) {
    case TRACE_CPU_SAMPLING:
        return import_status(c, fl);
    case TRACE_CPU_MAPPING:
        return import_mapping(c, fl);
    case TRACE_CPU_STACK:
        return import_stack(c, fl);
    case TRACE_CPU_SAMPLE:
        return import_sample(c, fl);
    case TRACE_CPU_SAMPLER:
        return import_totals(c, fl);
    case TRACE_CPU_THREAD_STATE:
        return import_thread_state(c, fl);
    case TRACE_PY_FRAME:
        return import_py_frame(c, fl);
    case TRACE_PY_STACK:
        return import_py_stack(c, fl);
    case TRACE_PY_SAMPLE:
        return import_py_sample(c, fl);
    default:
        return IMPORT_RECORD_UNKNOWN;
    }
}

/* The frames of a stack's bytes (leaf first): the number decoded. */
static size_t decode_frames(const struct cpu_stack *s, uint64_t *out)
{
    uint64_t prev_ts = 0;
    struct trace_fields f = {.p = s->frames, .end = s->frames + s->len, .prev_ts = &prev_ts};
    size_t n = 0;
    while (f.p < f.end && !f.bad && n < CPU_MAX_FRAMES) {
        uint64_t v = trace_get_u(&f);
        if (f.bad)
            break;
        out[n] = n == 0 ? v : out[n - 1] + (uint64_t)((int64_t)(v >> 1) ^ -(int64_t)(v & 1));
        n++;
    }
    return n;
}

static int symbolize_stack(struct cpu_file *c, struct cpu_stack *s)
{
    uint64_t addresses[CPU_MAX_FRAMES];
    int64_t frames[CPU_MAX_FRAMES];
    size_t n = decode_frames(s, addresses), kept = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t frame = address_frame(c, addresses[i], i == 0);
        if (frame < 0 && i > 0) { /* the walk left the code: the rest is not a caller */
            c->truncated++;
            break;
        }
        if (frame < 0)
            frame = frame_id(c, "[unknown]", "", NULL, 0);
        if (frame <= 0)
            return -EIO;
        frames[kept++] = frame;
    }
    if (c->look_count) { /* kept for the Python stacks' splice */
        s->symbolized = malloc((kept ? kept : 1) * sizeof *s->symbolized);
        s->kinds = malloc(kept ? kept : 1);
        if (!s->symbolized || !s->kinds)
            return -ENOMEM;
        for (size_t i = 0; i < kept; i++) {
            uint64_t *kind = u64_map_find(&c->frame_kinds, (uint64_t)frames[i]);
            s->symbolized[i] = frames[i];
            s->kinds[i] = kind ? (uint8_t)(*kind - 1) : CPU_FRAME_NATIVE;
        }
        s->depth = kept;
    }
    int64_t callsite = 0;
    for (size_t i = kept; i-- > 0;) /* outermost first */
        if (!(callsite = callsite_id(c, callsite, frames[i], (int)(kept - 1 - i))))
            return -EIO;
    sqlite3_stmt *st = import_stmt(c->f, SLOT_STACK_CALLSITE,
                                   "UPDATE cpu_stacks SET callsite_id = ? WHERE id = ?");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_NONZERO(callsite), IMPORT_INT(s->row));
    return import_step(c->f, st, "cannot store a CPU stack: ");
}

/* Each sample of a thread the Python sampler looked at takes the nearest look within two
 * periods (of the sampling period and the sampler's tick, the larger), and no less than
 * CPU_PYTHON_WINDOW_MIN_NS (a sampler kept off a CPU on a loaded machine): its stack becomes the
 * splice of the two (import_cpu_python.h), one cpu_stacks row per pair of stacks. */
static int join_python(struct cpu_file *c)
{
    cpu_python_sort_looks(c->looks, c->look_count);
    uint64_t period = 0, matched = 0, unmatched = 0;
    sqlite3_stmt *st = import_stmt(c->f, SLOT_PERIOD,
                                   "SELECT period_ns FROM cpu_sampling WHERE process_id = ?");
    if (st) {
        import_bind_row(st, IMPORT_INT(import_process(c->f)));
        if (sqlite3_step(st) == SQLITE_ROW)
            period = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
    }
    uint64_t within = 2 * (period > c->py_tick_ns ? period : c->py_tick_ns);
    if (within < CPU_PYTHON_WINDOW_MIN_NS)
        within = CPU_PYTHON_WINDOW_MIN_NS;
    struct u64_map rows = {0}; /* native index << 32 | Python index -> cpu_stacks.id */
    int64_t spliced[CPU_MAX_FRAMES * 2];
    int rc = 0;
    for (size_t i = 0; i < c->sample_count && rc == 0; i++) {
        const struct cpu_sample_ref *sr = &c->samples[i];
        uint64_t periods = (uint64_t)(sr->last_row - sr->row) + 1; /* counted as samples are */
        const struct cpu_py_look *look =
            cpu_python_nearest(c->looks, c->look_count, sr->tid, sr->ts, within);
        if (!look) {
            /* a thread the sampler never looked at runs no Python */
            if (cpu_python_nearest(c->looks, c->look_count, sr->tid, sr->ts, UINT64_MAX - 1))
                unmatched += periods;
            continue;
        }
        matched += periods;
        if (!look->stack)
            continue;
        uint64_t key = (uint64_t)sr->stack << 32 | look->stack;
        uint64_t *known = u64_map_find(&rows, key);
        int64_t row = known ? (int64_t)*known : 0;
        if (!row) {
            const struct cpu_stack *ns = sr->stack ? &c->stacks[sr->stack - 1] : NULL;
            const struct cpu_py_stack *ps = &c->py_stacks[look->stack - 1];
            size_t n = cpu_python_splice(ns ? ns->symbolized : NULL, ns ? ns->kinds : NULL,
                                         ns ? ns->depth : 0, ps->frames, ps->entry, ps->depth,
                                         spliced, sizeof spliced / sizeof spliced[0]);
            if (!(row = stack_row(c, spliced, n)) || u64_map_put(&rows, key, (uint64_t)row) < 0) {
                rc = -EIO;
                break;
            }
        }
        st = import_stmt(c->f, SLOT_RESTACK,
                         "UPDATE cpu_samples SET stack_id = ? WHERE rowid BETWEEN ? AND ?");
        import_bind_row(st, IMPORT_INT(row), IMPORT_INT(sr->row), IMPORT_INT(sr->last_row));
        rc = import_step(c->f, st, "cannot store a CPU sample's Python stack: ");
    }
    u64_map_release(&rows);
    st = import_stmt(c->f, SLOT_PY_QUALITY,
                     "UPDATE cpu_sampling SET python_matched = ?, python_unmatched = ?"
                     " WHERE process_id = ?");
    if (st) {
        import_bind_row(st, IMPORT_INT(matched), IMPORT_INT(unmatched),
                        IMPORT_INT(import_process(c->f)));
        import_step(c->f, st, "cannot store the Python sampling counts: ");
    }
    return rc;
}

static void cpu_file_close(void *ctx)
{
    struct cpu_file *c = ctx;
    int failed = 0;
    for (size_t i = 0; i < c->stack_count && !failed; i++)
        failed = symbolize_stack(c, &c->stacks[i]) < 0;
    if (failed)
        import_warn(c->f, "CPU stacks could not all be symbolized");
    else if (c->look_count && join_python(c) < 0)
        import_warn(c->f, "CPU samples could not all be given their Python stacks");
    if (c->stack_count) {
        sqlite3_stmt *st = import_stmt(c->f, SLOT_QUALITY,
                                       "UPDATE cpu_sampling SET addresses = ?, unsymbolized = ?,"
                                       " truncated_stacks = ? WHERE process_id = ?");
        if (st) {
            import_bind_row(st, IMPORT_INT(c->addresses), IMPORT_INT(c->unsymbolized),
                            IMPORT_INT(c->truncated), IMPORT_INT(import_process(c->f)));
            import_step(c->f, st, "cannot store the CPU sampling counts: ");
        }
    }
    for (size_t i = 0; i < c->map_count; i++)
        free(c->maps[i].path);
    for (size_t i = 0; i < c->stack_count; i++) {
        free(c->stacks[i].frames);
        free(c->stacks[i].symbolized);
        free(c->stacks[i].kinds);
    }
    for (size_t i = 0; i < c->py_stack_count; i++) {
        free(c->py_stacks[i].frames);
        free(c->py_stacks[i].entry);
    }
    free(c->py_stacks);
    free(c->py_frame_index.v);
    free(c->py_stack_index.v);
    free(c->looks);
    free(c->samples);
    free(c->interpreter);
    u64_map_release(&c->frame_kinds);
    for (size_t i = 0; i < c->jit_count; i++)
        free(c->jit[i].name);
    free(c->jit);
    free(c->maps);
    free(c->stacks);
    free(c->stack_index.v);
    u64_map_release(&c->address_frames);
    free(c);
}

extern const char import_cpu_window_sql[];

const struct import_source import_source_CPU = {
    .session_open = cpu_session_open,
    .file_open = cpu_file_open,
    .record = cpu_record,
    .file_close = cpu_file_close,
    .session_close = cpu_session_close,
    .window_sql = import_cpu_window_sql,
};
