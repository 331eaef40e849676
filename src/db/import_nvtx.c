/* The NVTX source's importer: trace records 20-39 (written by src/agent/nvtx.c) into domains,
 * categories, ranges (push/pop pairs by depth, start/end pairs by id, batched inserts) and
 * marks; NVTX names of CUDA handles into cuda_resource_names (joined to CUPTI's ids by the CUDA
 * importer's finish); extended payloads and their schemas through import_nvtx_payload.c, told
 * which range or mark each event made. Record layouts: src/trace/records.def (read with its
 * generated decoders); tables: src/db/schema.sql. */
#include "common/index_map.h"
#include "common/u64_map.h"
#include "db/import_internal.h"
#include "db/import_nvtx_payload.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <stdio.h>

enum {
    SLOT_DOMAIN,
    SLOT_CATEGORY,
    SLOT_RANGE,
    SLOT_RANGE_BATCH,
    SLOT_MARK,
    SLOT_UNBALANCED,
    SLOT_RESOURCE_NAME,
};

/* An NVTX range between its push/start and its pop/end. */
struct open_range {
    int64_t id;        /* ranges.id, assigned when the range opens; 0: slot empty */
    int64_t parent_id; /* 0: none */
    int64_t name_id, domain_id, thread_id;
    uint64_t category, color, payload_type, payload_bits, start_ns;
    uint32_t depth;
    uint32_t file_domain; /* the file's domain id: its payloads' schemas are the domain's */
};

/* A range ready to be written (ranges are written in batches). */
struct finished_range {
    struct open_range range;
    enum import_range_style style;
    int64_t end_thread_id; /* 0: never ended */
    uint64_t end_ns;
};
#define RANGE_BATCH 64
_Static_assert(RANGE_BATCH <= 256, "flush_ranges orders a batch with uint8_t indexes");

/* The open push/pop ranges of one (thread, domain), outermost first, in increasing depth.
 * Only the levels whose push arrived are held (a dropped push leaves a gap in the depths), so
 * memory follows the ranges actually open, never a depth number: any nesting is kept, and a
 * corrupt depth cannot make the importer allocate gigabytes. */
struct range_stack {
    struct open_range *levels;
    size_t cap, count;
};

/* Across the session: domains are merged by name, range ids count across files. */
struct nvtx_session {
    struct u64_map domain_by_name; /* strings.id of the name -> domains.id */
    int64_t next_domain_id, next_range_id;
};

/* One file's NVTX state. */
struct nvtx_file {
    struct import_file *file;
    struct nvtx_session *session;
    struct id_vec domains;      /* the file's domain id -> domains.id */
    struct u64_map stack_index; /* (thread_idx << 32 | file domain) -> index in stacks + 1 */
    struct range_stack *stacks;
    size_t nstacks, stacks_cap;
    uint64_t last_stack_key;
    struct range_stack *last_stack;
    /* start/end ranges by the program's range id (range_id + 1 -> index in starts + 1): a START
     * waiting for its END, or an END that came first (finished_range.end_thread_id set): the
     * agent's writer drains thread after thread, so another thread's END of a range can precede
     * its START in the file; range.thread_id is 0 until the START came */
    struct u64_map open_starts;
    struct finished_range *starts;
    size_t nstarts, starts_cap, free_start; /* free_start: head of the free list + 1 */
    struct finished_range finished[RANGE_BATCH];
    int nfinished;
    uint64_t unbalanced; /* TRACE_UNBALANCED_POP records */
    struct nvtx_payloads *payloads;
};

static int64_t domain_of(struct nvtx_file *f, uint64_t file_domain)
{
    return file_domain ? id_vec_get(&f->domains, file_domain) : 0;
}

static void on_domain(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_domain r;
    trace_get_domain(fl, &r);
    int64_t name_id = import_string(f->file, r.name);
    int64_t *slot = id_vec_slot(&f->domains, r.domain);
    if (!slot || !r.domain)
        return;
    /* domains are merged by name across processes: one row per distinct name */
    uint64_t *known = name_id ? u64_map_find(&f->session->domain_by_name, (uint64_t)name_id) : NULL;
    if (known) {
        *slot = (int64_t)*known;
        return;
    }
    sqlite3_stmt *st = import_stmt(f->file, SLOT_DOMAIN, "INSERT INTO domains(id, name_id) VALUES(?, ?)");
    if (!st)
        return;
    int64_t domain_id = ++f->session->next_domain_id;
    import_bind_row(st, IMPORT_INT(domain_id), IMPORT_NONZERO(name_id));
    if (import_step(f->file, st, NULL) < 0)
        return;
    if (name_id)
        u64_map_put(&f->session->domain_by_name, (uint64_t)name_id, (uint64_t)domain_id);
    *slot = domain_id;
}

static void on_category(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_category r;
    trace_get_category(fl, &r);
    sqlite3_stmt *st = import_stmt(
        f->file, SLOT_CATEGORY,
        "INSERT OR REPLACE INTO categories(domain_id, category, name_id) VALUES(?, ?, ?)");
    if (!st)
        return;
    import_bind_row(st, IMPORT_INT(domain_of(f, r.domain)), IMPORT_INT(r.category),
                    IMPORT_NONZERO(import_string(f->file, r.name)));
    import_step(f->file, st, NULL);
}

/* An event's attributes (records.def's TRACE_EVENT_FIELDS, the same names in PUSH, START and
 * MARK) into r. */
#define SET_EVENT(f, r, rec)                                                                       \
    set_event(f, r, (rec).name, (rec).category, (rec).color, (rec).payload_type, (rec).payload)
static void set_event(struct nvtx_file *f, struct open_range *r, uint64_t name, uint64_t category,
                      uint64_t color, uint64_t payload_type, uint64_t payload)
{
    r->name_id = import_string(f->file, name);
    r->category = category;
    r->color = color; /* ARGB + 1 */
    r->payload_type = payload_type;
    r->payload_bits = payload;
}

/* The payload as the NVTX type it was given in (nvToolsExt.h's NVTX_PAYLOAD_TYPE_*). */
static struct import_value payload_value(uint64_t type, uint64_t bits)
{
    uint32_t low = (uint32_t)bits;
    double d;
    float fl;
    switch (type) {
    case 1: /* UNSIGNED_INT64: SQLite integers are signed; values above 2^63 wrap */
    case 2: /* INT64 */
        return IMPORT_INT(bits);
    case 3: /* DOUBLE */
        memcpy(&d, &bits, sizeof d);
        return IMPORT_REAL(d);
    case 4: /* UNSIGNED_INT32 */
        return IMPORT_INT(low);
    case 5: /* INT32 */
        return IMPORT_INT((int32_t)low);
    case 6: /* FLOAT */
        memcpy(&fl, &low, sizeof fl);
        return IMPORT_REAL(fl);
    default:
        return IMPORT_NULL;
    }
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
    int nested = row->style == IMPORT_RANGE_PUSH_POP; /* depth and parent: push/pop ranges' */
    import_bind_row_at(st, col, IMPORT_INT(r->id), IMPORT_INT(process_id), IMPORT_INT(r->domain_id),
                       IMPORT_NONZERO(r->name_id), IMPORT_INT(r->category),
                       IMPORT_PLUS_ONE(r->color), payload_value(r->payload_type, r->payload_bits),
                       IMPORT_INT(row->style), nested ? IMPORT_INT(r->depth) : IMPORT_NULL,
                       nested ? IMPORT_NONZERO(r->parent_id) : IMPORT_NULL,
                       IMPORT_INT(r->thread_id), IMPORT_NONZERO(row->end_thread_id),
                       IMPORT_INT(r->start_ns),
                       row->end_thread_id ? IMPORT_INT(row->end_ns) : IMPORT_NULL);
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

/* The batch's row indexes in id order: an insertion sort, since the ids come in short reversed
 * runs (nested ranges); it moves bytes where qsort would merge whole rows through a callback. */
static void order_by_id(const struct finished_range *rows, int n, uint8_t *order)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && rows[order[j - 1]].range.id > rows[i].range.id; j--)
            order[j] = order[j - 1];
        order[j] = (uint8_t)i;
    }
}

/* Writes the finished ranges held back: a full batch in one statement (one VDBE run for
 * RANGE_BATCH rows instead of one per row: the importer's largest saving), the rest one by one.
 * Nested ranges finish innermost first, so their ids (given at the push) come in reverse; in
 * id order SQLite appends each row at the end of the table instead of searching for its place
 * (measured: ~12% of the import). */
static void flush_ranges(struct nvtx_file *f)
{
    uint8_t order[RANGE_BATCH];
    order_by_id(f->finished, f->nfinished, order);
    int full = f->nfinished == RANGE_BATCH;
    int64_t process_id = import_known_process(f->file);
    sqlite3_stmt *st = full ? import_stmt(f->file, SLOT_RANGE_BATCH, range_batch_sql()) : NULL;
    if (st) {
        for (int i = 0; i < RANGE_BATCH; i++)
            bind_range(st, 1 + i * RANGE_FIELDS, process_id, &f->finished[order[i]]);
        if (import_step(f->file, st, NULL) == 0)
            import_summary_of(f->file)->ranges += RANGE_BATCH;
        f->nfinished = 0;
        return;
    }
    for (int i = 0; i < f->nfinished; i++) {
        st = import_stmt(f->file, SLOT_RANGE, RANGE_COLUMNS RANGE_VALUES);
        if (!st)
            break;
        bind_range(st, 1, process_id, &f->finished[order[i]]);
        if (import_step(f->file, st, NULL) == 0)
            import_summary_of(f->file)->ranges++;
    }
    f->nfinished = 0;
}

/* Queues one range for writing; end_thread_id 0: never ended. */
static void insert_range(struct nvtx_file *f, const struct open_range *r,
                         enum import_range_style style,
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

static struct range_stack *stack_for(struct nvtx_file *f, uint64_t thread_idx, uint64_t domain)
{
    uint64_t key = (thread_idx << 32 | (domain & 0xffffffffu)) + 1;
    if (key == f->last_stack_key)
        return f->last_stack;
    uint64_t *index = u64_map_find(&f->stack_index, key);
    if (!index) {
        if (index_reserve((void **)&f->stacks, &f->stacks_cap, f->nstacks, sizeof *f->stacks) < 0)
            return NULL;
        memset(&f->stacks[f->nstacks], 0, sizeof f->stacks[0]);
        if (u64_map_put(&f->stack_index, key, ++f->nstacks) < 0)
            return NULL;
        index = u64_map_find(&f->stack_index, key);
    }
    f->last_stack_key = key;
    f->last_stack = &f->stacks[*index - 1];
    return f->last_stack;
}

/* Levels at depth >= `from` whose pops were lost (dropped records): they never ended. */
static void stack_abandon_from(struct nvtx_file *f, struct range_stack *stack, uint64_t from)
{
    while (stack->count && stack->levels[stack->count - 1].depth >= from)
        insert_range(f, &stack->levels[--stack->count], IMPORT_RANGE_PUSH_POP, 0, 0);
}

static struct open_range *stack_push(struct range_stack *stack)
{
    if (index_reserve((void **)&stack->levels, &stack->cap, stack->count, sizeof *stack->levels) <
        0)
        return NULL;
    return &stack->levels[stack->count++];
}

static void on_push(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_push p;
    trace_get_push(fl, &p);
    struct range_stack *stack = stack_for(f, p.thread_idx, p.domain);
    if (!stack || p.depth > UINT32_MAX) { /* the agent's depths are 32-bit */
        import_malformed(f->file);
        return;
    }
    stack_abandon_from(f, stack, p.depth);
    const struct open_range *outer = stack->count ? &stack->levels[stack->count - 1] : NULL;
    int64_t parent_id = outer && outer->depth + 1 == p.depth ? outer->id : 0;
    struct open_range *r = stack_push(stack);
    if (!r) {
        import_lost(f->file, IMPORT_LOST_MEMORY, 1);
        return;
    }
    SET_EVENT(f, r, p);
    r->id = ++f->session->next_range_id;
    r->parent_id = parent_id;
    r->domain_id = domain_of(f, p.domain);
    r->thread_id = import_thread(f->file, p.thread_idx);
    r->start_ns = p.ts;
    r->depth = (uint32_t)p.depth;
    r->file_domain = (uint32_t)p.domain;
    nvtx_payloads_owner(f->payloads, p.thread_idx, p.domain, r->id, 0);
}

static void on_pop(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_pop p;
    trace_get_pop(fl, &p);
    struct range_stack *stack = stack_for(f, p.thread_idx, p.domain);
    if (!stack) {
        import_lost(f->file, IMPORT_LOST_MEMORY, 1);
        return;
    }
    stack_abandon_from(f, stack, p.depth + 1);
    struct open_range *top = stack->count ? &stack->levels[stack->count - 1] : NULL;
    if (!top || top->depth != p.depth)
        return; /* its push was dropped */
    nvtx_payloads_owner(f->payloads, p.thread_idx, p.domain, top->id, 0);
    insert_range(f, top, IMPORT_RANGE_PUSH_POP, top->thread_id, p.ts);
    stack->count--;
}

/* A slot of `starts` for the range id (created empty if new), or NULL without memory. */
static struct finished_range *start_slot(struct nvtx_file *f, uint64_t range_id)
{
    uint64_t *known = u64_map_find(&f->open_starts, range_id + 1);
    if (known)
        return &f->starts[*known - 1];
    if (f->nstarts == f->starts_cap && !f->free_start) {
        size_t cap = f->starts_cap ? f->starts_cap * 2 : 64;
        struct finished_range *starts = realloc(f->starts, cap * sizeof *starts);
        if (!starts)
            return NULL;
        f->starts = starts;
        f->starts_cap = cap;
    }
    size_t slot;
    if (f->free_start) {
        slot = f->free_start - 1;
        f->free_start = f->starts[slot].range.depth;
    } else {
        slot = f->nstarts++;
    }
    if (u64_map_put(&f->open_starts, range_id + 1, slot + 1) < 0) {
        f->starts[slot].range.depth = (uint32_t)f->free_start;
        f->free_start = slot + 1;
        return NULL;
    }
    memset(&f->starts[slot], 0, sizeof f->starts[slot]);
    f->starts[slot].style = IMPORT_RANGE_START_END;
    return &f->starts[slot];
}

/* Writes the range of a slot and frees the slot (a free slot holds the next free index + 1). */
static void start_finish(struct nvtx_file *f, uint64_t range_id, struct finished_range *row)
{
    insert_range(f, &row->range, IMPORT_RANGE_START_END, row->end_thread_id, row->end_ns);
    size_t i = (size_t)(row - f->starts);
    u64_map_remove(&f->open_starts, range_id + 1);
    f->starts[i].range.depth = (uint32_t)f->free_start;
    f->free_start = i + 1;
}

static void on_start(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_start p;
    trace_get_start(fl, &p);
    struct finished_range *row = start_slot(f, p.range_id);
    if (row && row->range.thread_id && !row->end_thread_id) {
        /* the id was reused before its end arrived: the earlier range never ended */
        start_finish(f, p.range_id, row);
        row = start_slot(f, p.range_id);
    }
    if (!row) {
        import_lost(f->file, IMPORT_LOST_MEMORY, 1);
        return;
    }
    struct open_range *r = &row->range;
    SET_EVENT(f, r, p);
    if (!r->id) /* an END that came first gave it its id already */
        r->id = ++f->session->next_range_id;
    r->domain_id = domain_of(f, p.domain);
    r->thread_id = import_thread(f->file, p.thread_idx);
    r->start_ns = p.ts;
    r->file_domain = (uint32_t)p.domain;
    nvtx_payloads_owner(f->payloads, p.thread_idx, p.domain, r->id, 0);
    if (row->end_thread_id)
        start_finish(f, p.range_id, row);
}

/* An END whose START is still to come (another thread's buffer, drained later) waits in its
 * slot with its range's id, so its payloads are owned at once (decoded with the default
 * domain's schemas: the domain comes with the START). An END whose START never comes (it was
 * dropped, or it was started in the parent before a fork) writes nothing. */
static void on_end(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_end e;
    trace_get_end(fl, &e);
    struct finished_range *row = start_slot(f, e.range_id);
    if (!row) {
        import_lost(f->file, IMPORT_LOST_MEMORY, 1);
        return;
    }
    if (row->end_thread_id)
        return; /* a second END of the id: its START is still to come for the first */
    if (!row->range.id)
        row->range.id = ++f->session->next_range_id;
    row->end_thread_id = import_thread(f->file, e.thread_idx);
    row->end_ns = e.ts;
    nvtx_payloads_owner(f->payloads, e.thread_idx, row->range.file_domain, row->range.id, 0);
    if (row->range.thread_id) /* its START came first */
        start_finish(f, e.range_id, row);
}

static void on_mark(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_mark m;
    trace_get_mark(fl, &m);
    struct open_range ev;
    SET_EVENT(f, &ev, m);
    sqlite3_stmt *st =
        import_stmt(f->file, SLOT_MARK,
                    "INSERT INTO marks(process_id, thread_id, domain_id, name_id, category, "
                    "color, payload, ts_ns) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    int64_t thread_id = import_thread(f->file, m.thread_idx);
    if (!st || !thread_id)
        return;
    import_bind_row(st, IMPORT_INT(import_known_process(f->file)), IMPORT_INT(thread_id),
                    IMPORT_INT(domain_of(f, m.domain)), IMPORT_NONZERO(ev.name_id),
                    IMPORT_INT(ev.category), IMPORT_PLUS_ONE(ev.color),
                    payload_value(ev.payload_type, ev.payload_bits), IMPORT_INT(m.ts));
    if (import_step(f->file, st, NULL) == 0) {
        import_summary_of(f->file)->marks++;
        nvtx_payloads_owner(f->payloads, m.thread_idx, m.domain, 0,
                            sqlite3_last_insert_rowid(import_db(f->file)));
    }
}



/* Ranges still open at the end of the file never ended (exit inside a range, or a kill);
 * ENDs whose START never came are dropped. */
static void close_open_ranges(struct nvtx_file *f)
{
    for (size_t i = 0; i < f->nstacks; i++) {
        stack_abandon_from(f, &f->stacks[i], 0);
        free(f->stacks[i].levels);
    }
    for (size_t i = 0; i < f->open_starts.cap; i++) {
        struct finished_range *row;
        if (!f->open_starts.keys[i])
            continue;
        row = &f->starts[f->open_starts.values[i] - 1];
        if (!row->end_thread_id)
            insert_range(f, &row->range, IMPORT_RANGE_START_END, 0, 0);
    }
    flush_ranges(f);
}

/* NVTX names of CUDA streams and contexts (nvtxNameCuStreamA, nvtxNameCudaStreamA, ...),
 * kept with their handle until the CUDA importer's finish joins them to CUPTI's ids. */
static int on_name_resource(struct nvtx_file *f, struct trace_fields *fl)
{
    struct trace_name_resource r;
    trace_get_name_resource(fl, &r);
    uint64_t kind = r.kind;
    int64_t name = import_string(f->file, r.name);
    if (kind < TRACE_RESOURCE_CU_DEVICE || kind > TRACE_RESOURCE_CUDART_EVENT || !name)
        return 0;
    sqlite3_stmt *st = import_stmt(
        f->file, SLOT_RESOURCE_NAME,
        "INSERT INTO cuda_resource_names(process_id, kind, handle, name_id) VALUES(?,?,?,?)");
    if (!st)
        return -EIO;
    import_bind_row(st, IMPORT_INT(import_process(f->file)), IMPORT_INT(kind), IMPORT_INT(r.handle),
                    IMPORT_INT(name));
    return import_step(f->file, st, "CUDA import: ");
}

static int nvtx_record(void *ctx, unsigned type, struct trace_fields *fl)
{
    struct nvtx_file *f = ctx;
    if (type >= TRACE_PAYLOAD_SCHEMA && type <= TRACE_PAYLOAD)
        return nvtx_payloads_record(f->payloads, type, fl);
    /* payloads follow their event at once: any other record ends its chance to have some */
    nvtx_payloads_owner(f->payloads, 0, 0, 0, 0);
    switch (type) {
    case TRACE_DOMAIN:
        on_domain(f, fl);
        return 0;
    case TRACE_CATEGORY:
        on_category(f, fl);
        return 0;
    case TRACE_PUSH:
        on_push(f, fl);
        return 0;
    case TRACE_POP:
        on_pop(f, fl);
        return 0;
    case TRACE_START:
        on_start(f, fl);
        return 0;
    case TRACE_END:
        on_end(f, fl);
        return 0;
    case TRACE_MARK:
        on_mark(f, fl);
        return 0;
    case TRACE_NAME_RESOURCE: /* CUDA handles named with NVTX */
        return on_name_resource(f, fl);
    case TRACE_UNBALANCED_POP: {
        struct trace_unbalanced_pop unused; /* only counted, but its ts keeps the chunk's clock */
        trace_get_unbalanced_pop(fl, &unused);
        f->unbalanced++;
        return 0;
    }
    /* informational, but its ts must be read: every ts is a delta from the previous one */
    case TRACE_DOMAIN_DESTROY: {
        struct trace_domain_destroy unused;
        trace_get_domain_destroy(fl, &unused);
        return 0;
    }
    default:
        return IMPORT_RECORD_UNKNOWN; /* a newer writer's record: skipped by length */
    }
}

static void *nvtx_file_open(struct import_file *file, void *session_state)
{
    struct nvtx_file *f = calloc(1, sizeof *f);
    if (f) {
        f->file = file;
        f->session = session_state;
        f->payloads = nvtx_payloads_open(file, &f->domains);
    }
    return f;
}

/* processes.unbalanced_pops: pops without a push (the column's default is 0). */
static void store_unbalanced(struct nvtx_file *f)
{
    int64_t process_id = import_known_process(f->file);
    if (!f->unbalanced || !process_id)
        return;
    sqlite3_stmt *st = import_stmt(f->file, SLOT_UNBALANCED,
                                   "UPDATE processes SET unbalanced_pops = ? WHERE id = ?");
    if (!st)
        return;
    import_bind_row(st, IMPORT_INT(f->unbalanced), IMPORT_INT(process_id));
    import_step(f->file, st, NULL);
}

static void nvtx_file_close(void *ctx)
{
    struct nvtx_file *f = ctx;
    close_open_ranges(f);
    store_unbalanced(f);
    nvtx_payloads_close(f->payloads);
    free(f->domains.v);
    u64_map_release(&f->stack_index);
    u64_map_release(&f->open_starts);
    free(f->stacks);
    free(f->starts);
    free(f);
}

/* Domain 0 is NVTX's default domain (name NULL). */
static int nvtx_session_open(sqlite3 *db, void **state)
{
    if (!(*state = calloc(1, sizeof(struct nvtx_session))))
        return -ENOMEM;
    return sqlite3_exec(db, "INSERT INTO domains(id, name_id) VALUES(0, NULL)", NULL, NULL,
                        NULL) == SQLITE_OK
               ? 0
               : -EIO;
}

static void nvtx_session_close(void *state)
{
    struct nvtx_session *s = state;
    if (s)
        u64_map_release(&s->domain_by_name);
    free(s);
}

extern const char import_nvtx_window_sql[];

const struct import_source import_source_NVTX = {
    .session_open = nvtx_session_open,
    .file_open = nvtx_file_open,
    .record = nvtx_record,
    .file_close = nvtx_file_close,
    .session_close = nvtx_session_close,
    .window_sql = import_nvtx_window_sql,
};
