/* Loading for `lantern kernels`: every kernel, memcpy and memset of the database with its
 * GPU, stream, launching thread and backtrace, sorted by GPU start; the GPUs' limits and peaks;
 * and the NVTX ranges open at some launch (ids and parents of all, names of those), parsed as
 * PyTorch markers (kernels_markers.c). kernels_attribute.c works on what this loads. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/gpu_peaks.h"
#include "model/kernels_load.h"

static int64_t column_int(sqlite3_stmt *st, int col, int64_t unknown)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? unknown : sqlite3_column_int64(st, col);
}

static double column_double(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : sqlite3_column_double(st, col);
}

/* strings.value of id, copied into the arena; NULL when absent. Called once per kernel name
 * (name_info_of remembers the rest). */
static const char *string_of(struct kernels_state *r, int64_t id)
{
    if (id <= 0)
        return NULL;
    sqlite3_reset(r->get_string);
    sqlite3_bind_int64(r->get_string, 1, id);
    if (sqlite3_step(r->get_string) != SQLITE_ROW)
        return NULL;
    const char *value = (const char *)sqlite3_column_text(r->get_string, 0);
    return kernels_arena_strndup(&r->arena, value ? value : "", value ? strlen(value) : 0);
}

/* Index of range id in the table, or -1. */
static ptrdiff_t range_index(const struct kernels_range_table *t, int64_t id)
{
    if (t->direct)
        return id < t->first_id || id - t->first_id >= t->span ? -1 : t->direct[id - t->first_id];
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->count && t->ids[lo] == id ? (ptrdiff_t)lo : -1;
}

struct kernels_range *kernels_range_of(struct kernels_state *r, int64_t id)
{
    ptrdiff_t i = range_index(&r->ranges, id);
    return i < 0 ? NULL : r->ranges.nodes[i];
}
static int load_range_ids(struct kernels_state *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, parent_id FROM ranges ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    struct kernels_range_table *t = &r->ranges;
    size_t capacity = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (t->count == capacity) {
            capacity = capacity ? capacity * 2 : 4096;
            int64_t *ids = realloc(t->ids, capacity * sizeof *ids);
            if (ids)
                t->ids = ids;
            int64_t *parents = realloc(t->parents, capacity * sizeof *parents);
            if (parents)
                t->parents = parents;
            if (!ids || !parents) {
                rc = -ENOMEM;
                break;
            }
        }
        t->ids[t->count] = sqlite3_column_int64(st, 0);
        t->parents[t->count++] = column_int(st, 1, 0);
    }
    sqlite3_finalize(st);
    if (rc == 0 && !(t->nodes = calloc(t->count ? t->count : 1, sizeof *t->nodes)))
        rc = -ENOMEM;
    if (rc == 0 && t->count > 0 && t->count < INT32_MAX) {
        t->first_id = t->ids[0];
        t->span = t->ids[t->count - 1] - t->first_id + 1;
        if (t->span <= 2 * (int64_t)t->count && (t->direct = malloc((size_t)t->span * 4))) {
            memset(t->direct, 0xff, (size_t)t->span * 4); /* -1 everywhere */
            for (size_t k = 0; k < t->count; k++)
                t->direct[t->ids[k] - t->first_id] = (int32_t)k;
        }
    }
    return rc;
}

/* Marks (with a placeholder node) the ranges open at some launch: each row's innermost range
 * and its ancestors. */
static struct kernels_range needed_marker;

static void mark_needed_ranges(struct kernels_state *r)
{
    struct kernels_range_table *t = &r->ranges;
    for (size_t i = 0; i < r->rows.count; i++) {
        int64_t id = r->rows.rows[i].range_id;
        for (int depth = 0; id > 0 && depth < KERNELS_MAX_RANGE_DEPTH; depth++) {
            ptrdiff_t k = range_index(t, id);
            if (k < 0 || t->nodes[k])
                break;
            t->nodes[k] = &needed_marker;
            id = t->parents[k];
        }
    }
}

/* Reads and parses the names of the marked ranges, in one scan. */
static int load_range_names(struct kernels_state *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT r.id, s.value FROM ranges r LEFT JOIN strings s"
                           " ON s.id = r.name_id ORDER BY r.id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct kernels_range_table *t = &r->ranges;
    int rc = 0;
    for (size_t k = 0; sqlite3_step(st) == SQLITE_ROW;) {
        int64_t id = sqlite3_column_int64(st, 0);
        while (k < t->count && t->ids[k] < id)
            k++;
        if (k == t->count || t->ids[k] != id || t->nodes[k] != &needed_marker)
            continue;
        /* range names are nearly all distinct (emit_nvtx puts seq and shapes in them):
         * copied here rather than kept in the strings map */
        const char *value = (const char *)sqlite3_column_text(st, 1);
        size_t len = value ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        struct kernels_range *node = kernels_arena_alloc(&r->arena, sizeof *node);
        char *name = kernels_arena_strndup(&r->arena, value ? value : "", len);
        if (!node || !name) {
            rc = -ENOMEM;
            break;
        }
        node->id = id;
        node->parent_id = t->parents[k];
        node->user_path = NULL;
        node->context = NULL;
        node->op_instance = NULL;
        node->engine_seq = -1;
        kernels_marker_parse(name, &node->marker);
        t->nodes[k] = node;
    }
    sqlite3_finalize(st);
    return rc;
}

static const struct kernels_name_info *name_info_of(struct kernels_state *r, int64_t name_id)
{
    struct kernels_name_info *info = kernels_map_get(&r->names, name_id);
    if (info)
        return info;
    const char *name = string_of(r, name_id);
    info = kernels_arena_alloc(&r->arena, sizeof *info);
    if (!info)
        return NULL;
    if (!name)
        name = "na";
    char short_name[4096];
    kernels_name_short(name, short_name, sizeof short_name);
    info->short_name = kernels_arena_strndup(&r->arena, short_name, strlen(short_name));
    info->dtype = kernels_name_dtype(name);
    info->tc = kernels_name_tensor_cores(name);
    info->part = kernels_name_part(name);
    if (!info->short_name || kernels_map_put(&r->names, name_id, info) < 0)
        return NULL;
    return info;
}

/* A launch's backtrace (cuda_api.backtrace_id): a loop repeats a few stacks, read once each. */
static const char *trace_of(struct kernels_state *r, int64_t backtrace_id)
{
    if (backtrace_id <= 0)
        return NULL;
    const char *trace = kernels_map_get(&r->traces, backtrace_id);
    if (trace)
        return trace;
    trace = string_of(r, backtrace_id);
    if (trace && kernels_map_put(&r->traces, backtrace_id, (void *)trace) < 0)
        return NULL;
    return trace;
}

static const struct kernels_gpu *gpu_of(const struct kernels_state *r, int64_t gpu_id)
{
    for (size_t i = 0; i < r->gpu_count; i++)
        if (r->gpus[i].id == gpu_id)
            return &r->gpus[i];
    return NULL;
}

/* The device's peak rates for peak%: the one place the kernels report reads them. The FLOP
 * peaks are computed from the row (db/gpu_peaks.h); the stored ones only where the row
 * lacks the compute capability, SM count or clock (a hand-written database). PEAK_COLUMNS are
 * the columns read_peaks reads from `first` on. */
#define PEAK_COLUMNS                                                                               \
    "peak_fp32_flops, peak_fp16_flops, peak_bf16_flops, peak_tf32_flops, peak_fp64_flops,"         \
    " peak_dram_bytes_per_s, cc_major, cc_minor, sm_count, sm_clock_khz"

static void read_peaks(sqlite3_stmt *st, int first, struct kernels_gpu *g)
{
    g->peak_fp32 = column_double(st, first);
    g->peak_fp16 = column_double(st, first + 1);
    g->peak_bf16 = column_double(st, first + 2);
    g->peak_tf32 = column_double(st, first + 3);
    g->peak_fp64 = column_double(st, first + 4);
    g->peak_dram = column_double(st, first + 5);
    struct gpu_peaks p;
    if (gpu_peaks_flops(column_int(st, first + 6, 0), column_int(st, first + 7, 0),
                        column_int(st, first + 8, 0), column_int(st, first + 9, 0), &p)) {
        g->peak_fp32 = p.fp32;
        g->peak_fp16 = p.fp16;
        g->peak_bf16 = p.bf16;
        g->peak_tf32 = p.tf32;
        g->peak_fp64 = p.fp64;
    }
}

static int load_gpus(struct kernels_state *r)
{
    static const char sql[] =
        "SELECT id, sm_count, cc_major, max_threads_per_sm, max_regs_per_sm, max_smem_per_sm,"
        " max_blocks_per_sm, " PEAK_COLUMNS " FROM gpus";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct kernels_gpu *grown = realloc(r->gpus, (r->gpu_count + 1) * sizeof *grown);
        if (!grown) {
            rc = -ENOMEM;
            break;
        }
        r->gpus = grown;
        struct kernels_gpu *g = &r->gpus[r->gpu_count++];
        g->id = column_int(st, 0, -1);
        g->sm_count = column_int(st, 1, -1);
        g->sm.cc_major = (int)column_int(st, 2, -1);
        g->sm.max_threads_per_sm = column_int(st, 3, -1);
        g->sm.max_regs_per_sm = column_int(st, 4, -1);
        g->sm.max_smem_per_sm = column_int(st, 5, -1);
        g->sm.max_blocks_per_sm = column_int(st, 6, -1);
        read_peaks(st, 7, g);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The threads table is small: read once, so the row query needs no join for the tid. */
static int load_threads(struct kernels_state *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT id, tid FROM threads WHERE tid IS NOT NULL", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = kernels_map_put(&r->tids, sqlite3_column_int64(st, 0),
                             (void *)(intptr_t)(sqlite3_column_int64(st, 1) + 1));
    sqlite3_finalize(st);
    return rc;
}

static int64_t tid_of(const struct kernels_state *r, int64_t thread_id)
{
    return (int64_t)(intptr_t)kernels_map_get(&r->tids, thread_id) - 1;
}

static struct kernels_row *new_row(struct kernels_state *r)
{
    if (r->rows.count == r->row_capacity) {
        size_t capacity = r->row_capacity ? r->row_capacity * 2 : 4096;
        struct kernels_row *grown = realloc(r->rows.rows, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        r->rows.rows = grown;
        r->row_capacity = capacity;
    }
    struct kernels_row *row = &r->rows.rows[r->rows.count++];
    memset(row, 0, sizeof *row);
    for (int i = 0; i < 3; i++)
        row->grid[i] = row->block[i] = -1;
    row->regs = row->smem = row->copy_bytes = -1;
    row->sub = -1;
    row->flops = row->bytes = -1;
    row->sm_active = row->warp_occupancy = row->tensor_active = -1;
    row->tc = KERNELS_TC_NO; /* a copy or set; a kernel's comes from its name */
    return row;
}

/* Columns 0-7 of every activity query; the launching thread comes from the API call. */
/* NULLs become -1 (or 0 for ids) in SQL: one column call per value instead of two. */
#define ACTIVITY_COLUMNS                                                                           \
    "x.start_ns, x.end_ns, COALESCE(x.process_id, 0), COALESCE(x.gpu_id, -1),"                     \
    " COALESCE(x.device, -1), COALESCE(x.stream, -1),"                                             \
    " COALESCE(x.nvtx_range_id, a.nvtx_range_id, 0), COALESCE(a.thread_id, 0)"
#define ACTIVITY_JOIN " LEFT JOIN cuda_api a ON a.id = x.api_id"
/* The last column of every activity query. */
#define ACTIVITY_TRACE_COLUMN ", COALESCE(a.backtrace_id, 0)"

static int load_activity_row(struct kernels_state *r, sqlite3_stmt *st, enum kernels_row_kind kind)
{
    struct kernels_row *row = new_row(r);
    if (!row)
        return -ENOMEM;
    row->kind = kind;
    row->start_ns = sqlite3_column_int64(st, 0);
    row->end_ns = sqlite3_column_int64(st, 1);
    row->process_id = sqlite3_column_int64(st, 2);
    row->gpu = gpu_of(r, sqlite3_column_int64(st, 3));
    row->device = sqlite3_column_int64(st, 4);
    row->stream = sqlite3_column_int64(st, 5);
    row->range_id = sqlite3_column_int64(st, 6);
    row->tid = tid_of(r, sqlite3_column_int64(st, 7));
    row->trace = trace_of(r, sqlite3_column_int64(st, sqlite3_column_count(st) - 1));
    if (kind == KERNELS_ROW_KERNEL) {
        row->name = name_info_of(r, sqlite3_column_int64(st, 8));
        if (!row->name)
            return -ENOMEM;
        row->tc = row->name->tc;
        for (int i = 0; i < 3; i++) {
            row->grid[i] = sqlite3_column_int64(st, 9 + i);
            row->block[i] = sqlite3_column_int64(st, 12 + i);
        }
        row->regs = sqlite3_column_int64(st, 15);
        int64_t static_smem = sqlite3_column_int64(st, 16);
        int64_t dynamic_smem = sqlite3_column_int64(st, 17);
        row->smem = static_smem < 0 && dynamic_smem < 0 ? -1
                                                        : (static_smem > 0 ? static_smem : 0) +
                                                              (dynamic_smem > 0 ? dynamic_smem : 0);
        return 0;
    }
    row->copy_bytes = sqlite3_column_int64(st, 8);
    if (kind == KERNELS_ROW_MEMCPY) {
        const char *copy_kind = (const char *)sqlite3_column_text(st, 9);
        row->copy_kind =
            copy_kind ? kernels_arena_strndup(&r->arena, copy_kind, strlen(copy_kind)) : "na";
        if (!row->copy_kind)
            return -ENOMEM;
    }
    return 0;
}

static int load_activities(struct kernels_state *r, const char *sql, enum kernels_row_kind kind)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = load_activity_row(r, st, kind);
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int compare_rows(const void *a, const void *b)
{
    const struct kernels_row *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* Sizes the row array once: growing a million rows by doubling copies them all twice. */
static int reserve_rows(struct kernels_state *r, int no_memops)
{
    sqlite3_stmt *st;
    const char *sql = no_memops
                          ? "SELECT count(*) FROM kernels"
                          : "SELECT (SELECT count(*) FROM kernels) +"
                            " (SELECT count(*) FROM memcpys) + (SELECT count(*) FROM memsets)";
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int64_t count = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (count <= 0)
        return 0;
    struct kernels_row *rows = malloc((size_t)count * sizeof *rows);
    if (!rows)
        return -ENOMEM;
    r->rows.rows = rows;
    r->row_capacity = (size_t)count;
    return 0;
}

static int load_rows(struct kernels_state *r, int no_memops)
{
    static const char kernels_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.demangled_id, x.name_id, 0),"
        " COALESCE(x.grid_x, -1), COALESCE(x.grid_y, -1), COALESCE(x.grid_z, -1),"
        " COALESCE(x.block_x, -1), COALESCE(x.block_y, -1), COALESCE(x.block_z, -1),"
        " COALESCE(x.regs_per_thread, -1), COALESCE(x.static_smem, -1),"
        " COALESCE(x.dynamic_smem, -1)" ACTIVITY_TRACE_COLUMN " FROM kernels x" ACTIVITY_JOIN;
    static const char memcpys_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.bytes, -1), x.copy_kind" ACTIVITY_TRACE_COLUMN
        " FROM memcpys x" ACTIVITY_JOIN;
    static const char memsets_sql[] =
        "SELECT " ACTIVITY_COLUMNS ", COALESCE(x.bytes, -1)" ACTIVITY_TRACE_COLUMN
        " FROM memsets x" ACTIVITY_JOIN;
    int rc = reserve_rows(r, no_memops);
    if (rc == 0)
        rc = load_activities(r, kernels_sql, KERNELS_ROW_KERNEL);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memcpys_sql, KERNELS_ROW_MEMCPY);
    if (rc == 0 && !no_memops)
        rc = load_activities(r, memsets_sql, KERNELS_ROW_MEMSET);
    if (rc == 0 && r->rows.count > 1) /* qsort's base must not be NULL, even for 0 rows */
        qsort(r->rows.rows, r->rows.count, sizeof *r->rows.rows, compare_rows);
    return rc;
}

int kernels_load(struct kernels_state *r, int no_memops)
{
    int rc;
    r->empty_context.seq = r->empty_context.altseq = -1;
    if (sqlite3_prepare_v2(r->db, "SELECT value FROM strings WHERE id = ?", -1, &r->get_string,
                           NULL) != SQLITE_OK)
        return -EIO;
    if ((rc = load_gpus(r)) < 0 || (rc = load_threads(r)) < 0 || (rc = load_rows(r, no_memops)) < 0)
        return rc;
    if ((rc = load_range_ids(r)) < 0)
        return rc;
    mark_needed_ranges(r);
    return load_range_names(r);
}

void kernels_state_release(struct kernels_state *r)
{
    sqlite3_finalize(r->get_string);
    free(r->ranges.ids);
    free(r->ranges.parents);
    free(r->ranges.nodes);
    free(r->ranges.direct);
    free(r->forward.entries);
    struct u64_map *maps[] = {&r->names, &r->tids, &r->last_dtype, &r->traces, &r->conv_out_by_seq};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        u64_map_release(maps[i]);
    kernels_arena_release(&r->arena);
    free(r->gpus);
    free(r->rows.rows);
}
