/* The CUDA part of the Perfetto export: CUDA API calls on a "CUDA API" child track of their
 * thread, a track per GPU with a child track per (process, stream) holding its kernels,
 * copies and sets, a flow from each launching call to its GPU work, and a device-memory-in-use
 * counter track under the GPU's track. */
#include "export/perfetto_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* GPU work from the gpu_ops view (src/db/schema.sql, the one definition of GPU work),
 * numbered for flows as chrome_cuda.c numbers it (id * 4 + kind), sorted by (GPU, process,
 * stream) and time: each such stream is one track. */
#define GPU_OPS_SQL                                                                                \
    "SELECT k, o.id * 4 + k AS flow, o.process_id AS process_id, coalesce(o.gpu_id, 0) AS gpu,"    \
    " o.stream AS stream, o.start_ns AS start_ns, o.end_ns AS end_ns, o.name_id, o.copy_kind,"     \
    " o.api_id, o.correlation_id, o.grid_x, o.grid_y, o.grid_z, o.block_x, o.block_y, o.block_z,"  \
    " o.bytes, o.regs_per_thread, o.static_smem + o.dynamic_smem,"                                 \
    " CASE k WHEN 1 THEN o.src_kind END, CASE k WHEN 1 THEN o.dst_kind END"                        \
    " FROM (SELECT *, CASE kind WHEN 'kernel' THEN 0 WHEN 'memcpy' THEN 1 ELSE 2 END AS k"         \
    " FROM gpu_ops) o ORDER BY gpu, process_id, stream, start_ns, end_ns DESC, flow"
enum {
    OP_KIND,
    OP_FLOW,
    OP_PROCESS,
    OP_GPU,
    OP_STREAM,
    OP_START,
    OP_END,
    OP_NAME,
    OP_COPY_KIND,
    OP_API,
    OP_CORRELATION,
    OP_GRID,
    OP_BLOCK = OP_GRID + 3,
    OP_BYTES = OP_BLOCK + 3,
    OP_REGS,
    OP_SMEM,
    OP_SRC_KIND,
    OP_DST_KIND
};

/* Launching call -> flow ids of its GPU work, sorted by call (a graph launch has many). */
struct flow {
    int64_t api;
    uint64_t id;
};
struct flow_index {
    struct flow *flows;
    size_t count;
};

static int compare_flows(const void *a, const void *b)
{
    const struct flow *x = a, *y = b;
    if (x->api != y->api)
        return x->api < y->api ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int load_flows(struct perfetto_writer *w, struct flow_index *fi)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT api_id, id * 4 FROM kernels WHERE api_id IS NOT NULL"
                      " UNION ALL SELECT api_id, id * 4 + 1 FROM memcpys WHERE api_id IS NOT NULL"
                      " UNION ALL SELECT api_id, id * 4 + 2 FROM memsets WHERE api_id IS NOT NULL";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (fi->count == cap) {
            cap = cap ? cap * 2 : 1024;
            struct flow *grown = realloc(fi->flows, cap * sizeof *grown);
            if (!grown) {
                sqlite3_finalize(st);
                return -ENOMEM;
            }
            fi->flows = grown;
        }
        fi->flows[fi->count++] =
            (struct flow){sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1)};
    }
    if (fi->count)
        qsort(fi->flows, fi->count, sizeof *fi->flows, compare_flows);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* The flows that start at this call: its GPU work's flow ids. */
static void put_flows(struct perfetto_writer *w, const struct flow_index *fi, int64_t api)
{
    size_t lo = 0, hi = fi->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (fi->flows[mid].api < api)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < fi->count && fi->flows[lo].api == api; lo++)
        pb_fixed64(&w->event, PF_EVENT_FLOW_IDS, fi->flows[lo].id);
}

/* CUDA API calls: nested slices (a runtime call holds the driver calls it makes) on a child
 * track of the calling thread. */
static int put_api_calls(struct perfetto_writer *w, const struct flow_index *fi)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT a.thread_id, a.start_ns, a.end_ns, a.name_id, a.correlation_id, a.id"
                      " FROM cuda_api a ORDER BY a.thread_id, a.start_ns, a.end_ns DESC";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        uint64_t start = perfetto_thread_slice(
            w, &nest, st, PERFETTO_API_TRACK(sqlite3_column_int64(st, 0)), "CUDA API");
        perfetto_event_name_id(w, sqlite3_column_int64(st, 3));
        perfetto_event_category(w, PERFETTO_CATEGORY_CUDA_API, "cuda_api");
        perfetto_annotation_int(w, PF_ARG_CORRELATION, sqlite3_column_int64(st, 4));
        put_flows(w, fi, sqlite3_column_int64(st, 5));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* A stream's track under its GPU: the NVTX name the program gave the stream, else
 * "Stream N", and the process when there are several. */
static void put_stream_track(struct perfetto_writer *w, uint64_t lane, sqlite3_stmt *op)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT coalesce((SELECT s.value FROM cuda_streams cs JOIN strings s ON s.id = cs.name_id"
        " WHERE cs.process_id = ?1 AND cs.stream IS ?2 LIMIT 1), 'Stream ' || coalesce(?2, '?'))"
        " || CASE WHEN (SELECT count(*) FROM processes) > 1 THEN ' (pid ' || (SELECT pid FROM"
        " processes WHERE id = ?1) || ')' ELSE '' END";
    int64_t gpu = sqlite3_column_int64(op, OP_GPU);
    perfetto_gpu_track(w, gpu);
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, sqlite3_column_int64(op, OP_PROCESS));
    sqlite3_bind_value(st, 2, sqlite3_column_value(op, OP_STREAM));
    if (sqlite3_step(st) == SQLITE_ROW)
        perfetto_track(w, PERFETTO_STREAM_TRACK(lane), PERFETTO_GPU_TRACK(gpu),
                       (const char *)sqlite3_column_text(st, 0), NULL, NULL, 0);
    sqlite3_finalize(st);
}

/* "x,y,z" of three integer columns. */
static size_t format_dim3(char *out, sqlite3_stmt *st, int col)
{
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        char digits[24];
        int len = 0;
        unsigned long long v = (unsigned long long)sqlite3_column_int64(st, col + i);
        do
            digits[len++] = (char)('0' + v % 10);
        while ((v /= 10) && len < 20);
        if (i)
            out[n++] = ',';
        while (len)
            out[n++] = digits[--len];
    }
    return n;
}

/* Synthetic names (not in strings): copies by kind, and memsets. */
static const char *const copy_kinds[] = {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP",
                                         "HtoA", "AtoH", "AtoA", "AtoD", "DtoA"};
enum { SYNTHETIC_MEMSET = 0, SYNTHETIC_COPY_UNKNOWN = 1, SYNTHETIC_COPY_FIRST = 2 };

static void put_copy_name(struct perfetto_writer *w, const char *kind)
{
    char name[32];
    for (unsigned i = 0; kind && i < sizeof copy_kinds / sizeof copy_kinds[0]; i++)
        if (!strcmp(kind, copy_kinds[i])) {
            snprintf(name, sizeof name, "Memcpy %s", kind);
            perfetto_event_name_text(w, SYNTHETIC_COPY_FIRST + i, name);
            return;
        }
    perfetto_event_name_text(w, SYNTHETIC_COPY_UNKNOWN, "Memcpy");
}

/* Kernels, copies and sets as slices on their stream's track; each ends the flow its
 * launching call started. */
static int put_gpu_ops(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, GPU_OPS_SQL, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    struct perfetto_nest nest = {0};
    uint64_t lane = 0;
    int64_t gpu = -1, process = -1;
    sqlite3_value *stream = NULL; /* the current lane's stream (a copy) */
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        if (!lane || sqlite3_column_int64(st, OP_GPU) != gpu ||
            sqlite3_column_int64(st, OP_PROCESS) != process ||
            sqlite3_column_int64(st, OP_STREAM) != sqlite3_value_int64(stream) ||
            sqlite3_column_type(st, OP_STREAM) != sqlite3_value_type(stream)) {
            gpu = sqlite3_column_int64(st, OP_GPU);
            process = sqlite3_column_int64(st, OP_PROCESS);
            sqlite3_value_free(stream);
            stream = sqlite3_value_dup(sqlite3_column_value(st, OP_STREAM));
            put_stream_track(w, ++lane, st);
        }
        uint64_t track = PERFETTO_STREAM_TRACK(lane);
        int kind = sqlite3_column_int(st, OP_KIND);
        uint64_t start = (uint64_t)sqlite3_column_int64(st, OP_START);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, OP_END);
        perfetto_nest_begin(w, &nest, track, start, &end);
        perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
        if (kind == 0) {
            char dims[72];
            perfetto_event_name_id(w, sqlite3_column_int64(st, OP_NAME));
            perfetto_event_category(w, PERFETTO_CATEGORY_KERNEL, "kernel");
            perfetto_annotation_string(w, PF_ARG_GRID, dims, format_dim3(dims, st, OP_GRID));
            perfetto_annotation_string(w, PF_ARG_BLOCK, dims, format_dim3(dims, st, OP_BLOCK));
            perfetto_annotation_int(w, PF_ARG_REGISTERS, sqlite3_column_int64(st, OP_REGS));
            perfetto_annotation_int(w, PF_ARG_SHARED_MEMORY, sqlite3_column_int64(st, OP_SMEM));
        } else {
            if (kind == 1)
                put_copy_name(w, (const char *)sqlite3_column_text(st, OP_COPY_KIND));
            else
                perfetto_event_name_text(w, SYNTHETIC_MEMSET, "Memset");
            perfetto_event_category(w,
                                    kind == 1 ? PERFETTO_CATEGORY_MEMCPY : PERFETTO_CATEGORY_MEMSET,
                                    kind == 1 ? "memcpy" : "memset");
            perfetto_annotation_int(w, PF_ARG_BYTES, sqlite3_column_int64(st, OP_BYTES));
            /* pageable or pinned: what tells a slow copy from a fast one */
            if (sqlite3_column_type(st, OP_SRC_KIND) != SQLITE_NULL)
                perfetto_annotation_string(w, PF_ARG_SRC_KIND,
                                           (const char *)sqlite3_column_text(st, OP_SRC_KIND),
                                           (size_t)sqlite3_column_bytes(st, OP_SRC_KIND));
            if (sqlite3_column_type(st, OP_DST_KIND) != SQLITE_NULL)
                perfetto_annotation_string(w, PF_ARG_DST_KIND,
                                           (const char *)sqlite3_column_text(st, OP_DST_KIND),
                                           (size_t)sqlite3_column_bytes(st, OP_DST_KIND));
        }
        perfetto_annotation_int(w, PF_ARG_CORRELATION, sqlite3_column_int64(st, OP_CORRELATION));
        if (sqlite3_column_type(st, OP_API) != SQLITE_NULL)
            pb_fixed64(&w->event, PF_EVENT_TERMINATING_FLOW_IDS,
                       (uint64_t)sqlite3_column_int64(st, OP_FLOW));
        perfetto_event_end(w, start);
    }
    perfetto_nest_release(w, &nest);
    sqlite3_value_free(stream);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -EIO;
}

/* Device memory in use per GPU (allocations minus frees, in CUPTI's order, with
 * --cuda-memory-usage=true) as a counter track under the GPU's track. A producer of its own: it
 * follows the NVML counters in the trace. */
int perfetto_cuda_memory_counter(struct perfetto_writer *w)
{
    return perfetto_gpu_counter(
        w, "Device memory in use (B)",
        "SELECT coalesce(gpu_id, 0), ts_ns, sum(CASE op WHEN 'alloc' THEN bytes ELSE -bytes END)"
        " OVER (PARTITION BY coalesce(gpu_id, 0) ORDER BY ts_ns, id ROWS UNBOUNDED PRECEDING)"
        " FROM cuda_memory WHERE mem_kind IS NULL OR mem_kind = 'device'"
        " ORDER BY coalesce(gpu_id, 0), ts_ns, id");
}

int perfetto_cuda_events(struct perfetto_writer *w)
{
    struct flow_index flows = {0};
    int rc = -EIO;
    if (load_flows(w, &flows) < 0 || put_api_calls(w, &flows) < 0 || put_gpu_ops(w) < 0)
        goto out;
    rc = 0;
out:
    free(flows.flows);
    return rc;
}
