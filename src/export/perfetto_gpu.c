/* The GPU part of the Perfetto export: CUDA API calls on a "CUDA API" child track of their
 * thread, a track per GPU with a child track per (process, stream) holding its kernels,
 * copies and sets, a flow from each launching call to its GPU work, and NVML counter tracks
 * (power, energy, clocks, utilization, memory, temperature) under the GPU's track. */
#include "export/export.h"
#include "export/perfetto_internal.h"

#include <stdlib.h>

/* GPU work, numbered for flows as chrome_cuda.c numbers it (id * 4 + kind). */
#define GPU_OPS_SQL                                                                                \
    "ops AS ("                                                                                     \
    " SELECT 0 AS kind, k.id * 4 AS flow, k.process_id, coalesce(k.gpu_id, 0) AS gpu,"             \
    "  k.stream, k.start_ns, k.end_ns, coalesce(k.demangled_id, k.name_id) AS name_id,"            \
    "  NULL AS copy_kind, k.api_id, k.correlation_id, k.grid_x || ',' || k.grid_y || ',' ||"       \
    "  k.grid_z AS grid, k.block_x || ',' || k.block_y || ',' || k.block_z AS block,"              \
    "  NULL AS bytes, k.regs_per_thread AS regs, k.static_smem + k.dynamic_smem AS smem"            \
    "  FROM kernels k"                                                                             \
    " UNION ALL SELECT 1, c.id * 4 + 1, c.process_id, coalesce(c.gpu_id, 0), c.stream,"            \
    "  c.start_ns, c.end_ns, NULL, c.copy_kind, c.api_id, c.correlation_id, NULL, NULL, c.bytes,"  \
    "  NULL, NULL FROM memcpys c"                                                                  \
    " UNION ALL SELECT 2, s.id * 4 + 2, s.process_id, coalesce(s.gpu_id, 0), s.stream,"            \
    "  s.start_ns, s.end_ns, NULL, NULL, s.api_id, s.correlation_id, NULL, NULL, s.bytes, NULL,"   \
    "  NULL FROM memsets s),"                                                                      \
    " lanes AS (SELECT gpu, process_id, stream,"                                                   \
    "  ROW_NUMBER() OVER (ORDER BY gpu, process_id, stream) AS lane"                               \
    "  FROM (SELECT DISTINCT gpu, process_id, stream FROM ops))"

/* Launching call -> flow ids of its GPU work, sorted by call (a graph launch has many). */
struct flow_index {
    int64_t *api;
    uint64_t *flow;
    size_t count;
};

static int load_flows(struct perfetto_writer *w, struct flow_index *fi)
{
    sqlite3_stmt *st;
    const char *sql = "WITH " GPU_OPS_SQL " SELECT api_id, flow FROM ops WHERE api_id IS NOT NULL"
                      " ORDER BY api_id, flow";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (fi->count == cap) {
            cap = cap ? cap * 2 : 1024;
            int64_t *api = realloc(fi->api, cap * sizeof *api);
            if (api)
                fi->api = api;
            uint64_t *flow = realloc(fi->flow, cap * sizeof *flow);
            if (flow)
                fi->flow = flow;
            if (!api || !flow) {
                sqlite3_finalize(st);
                return -1;
            }
        }
        fi->api[fi->count] = sqlite3_column_int64(st, 0);
        fi->flow[fi->count++] = (uint64_t)sqlite3_column_int64(st, 1);
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* The flows that start at this call: its GPU work's flow ids. */
static void put_flows(struct perfetto_writer *w, const struct flow_index *fi, int64_t api)
{
    size_t lo = 0, hi = fi->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (fi->api[mid] < api)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < fi->count && fi->api[lo] == api; lo++)
        pb_fixed64(&w->event, PF_EVENT_FLOW_IDS, fi->flow[lo]);
}

/* CUDA API calls: nested slices (a runtime call holds the driver calls it makes) on a child
 * track of the calling thread. */
static int put_api_calls(struct perfetto_writer *w, const struct flow_index *fi)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT a.id, a.thread_id, a.start_ns, a.end_ns, a.name_id, a.correlation_id"
                      " FROM cuda_api a ORDER BY a.thread_id, a.start_ns, a.end_ns DESC";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    struct perfetto_nest nest = {0};
    int64_t last_thread = -1;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t thread = sqlite3_column_int64(st, 1);
        uint64_t track = PERFETTO_API_TRACK(thread);
        if (thread != last_thread)
            perfetto_track(w, track, PERFETTO_THREAD_TRACK(thread), "CUDA API", NULL, NULL, 0);
        last_thread = thread;
        uint64_t start = (uint64_t)sqlite3_column_int64(st, 2);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, 3);
        perfetto_nest_begin(w, &nest, track, start, &end);
        perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
        perfetto_event_name_id(w, sqlite3_column_int64(st, 4));
        perfetto_event_category(w, PERFETTO_CATEGORY_CUDA_API, "cuda_api");
        perfetto_annotation_int(w, PF_ARG_CORRELATION, sqlite3_column_int64(st, 5));
        put_flows(w, fi, sqlite3_column_int64(st, 0));
        perfetto_event_end(w, start);
    }
    perfetto_nest_close(w, &nest);
    free(nest.ends);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* A track per GPU ("GPU 0: NVIDIA H100 80GB HBM3"), whether it ran work or was sampled. */
static int put_gpu_tracks(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql =
        "WITH " GPU_OPS_SQL " SELECT u.gpu, 'GPU ' || coalesce(g.nvml_index,"
        " (SELECT min(device) FROM process_gpus WHERE gpu_id = g.id), '?') || ': ' ||"
        " coalesce(g.name, 'unknown GPU') FROM (SELECT gpu FROM ops UNION SELECT gpu_id FROM"
        " gpu_samples) u LEFT JOIN gpus g ON g.id = u.gpu ORDER BY u.gpu";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW)
        perfetto_track(w, PERFETTO_GPU_TRACK(sqlite3_column_int64(st, 0)), 0,
                       (const char *)sqlite3_column_text(st, 1), NULL, NULL, 0);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* Stream tracks under their GPU: the NVTX name the program gave the stream, else
 * "Stream N", and the process when there are several. */
static int put_stream_tracks(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    const char *sql =
        "WITH " GPU_OPS_SQL " SELECT l.lane, l.gpu, coalesce((SELECT s.value FROM cuda_streams cs"
        " JOIN strings s ON s.id = cs.name_id WHERE cs.process_id = l.process_id AND"
        " cs.stream = l.stream LIMIT 1), 'Stream ' || l.stream) || CASE WHEN"
        " (SELECT count(*) FROM processes) > 1 THEN ' (pid ' || (SELECT pid FROM processes"
        " WHERE id = l.process_id) || ')' ELSE '' END FROM lanes l ORDER BY l.lane";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW)
        perfetto_track(w, PERFETTO_STREAM_TRACK(sqlite3_column_int64(st, 0)),
                       PERFETTO_GPU_TRACK(sqlite3_column_int64(st, 1)),
                       (const char *)sqlite3_column_text(st, 2), NULL, NULL, 0);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
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
    const char *sql =
        "WITH " GPU_OPS_SQL " SELECT l.lane, o.kind, o.flow, o.start_ns, o.end_ns, o.name_id,"
        " o.copy_kind, o.api_id, o.correlation_id, o.grid, o.block, o.bytes, o.regs, o.smem"
        " FROM ops o JOIN lanes l ON l.gpu = o.gpu AND l.process_id = o.process_id AND"
        " l.stream IS o.stream ORDER BY l.lane, o.start_ns, o.end_ns DESC, o.flow";
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    struct perfetto_nest nest = {0};
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        uint64_t track = PERFETTO_STREAM_TRACK(sqlite3_column_int64(st, 0));
        int kind = sqlite3_column_int(st, 1);
        uint64_t start = (uint64_t)sqlite3_column_int64(st, 3);
        uint64_t end = (uint64_t)sqlite3_column_int64(st, 4);
        perfetto_nest_begin(w, &nest, track, start, &end);
        perfetto_event_begin(w, PF_TYPE_SLICE_BEGIN, track);
        if (kind == 0) {
            perfetto_event_name_id(w, sqlite3_column_int64(st, 5));
            perfetto_event_category(w, PERFETTO_CATEGORY_KERNEL, "kernel");
            perfetto_annotation_string(w, PF_ARG_GRID, (const char *)sqlite3_column_text(st, 9),
                                       (size_t)sqlite3_column_bytes(st, 9));
            perfetto_annotation_string(w, PF_ARG_BLOCK, (const char *)sqlite3_column_text(st, 10),
                                       (size_t)sqlite3_column_bytes(st, 10));
            perfetto_annotation_int(w, PF_ARG_REGISTERS, sqlite3_column_int64(st, 12));
            perfetto_annotation_int(w, PF_ARG_SHARED_MEMORY, sqlite3_column_int64(st, 13));
        } else {
            if (kind == 1)
                put_copy_name(w, (const char *)sqlite3_column_text(st, 6));
            else
                perfetto_event_name_text(w, SYNTHETIC_MEMSET, "Memset");
            perfetto_event_category(w, kind == 1 ? PERFETTO_CATEGORY_MEMCPY : PERFETTO_CATEGORY_MEMSET,
                                    kind == 1 ? "memcpy" : "memset");
            perfetto_annotation_int(w, PF_ARG_BYTES, sqlite3_column_int64(st, 11));
        }
        perfetto_annotation_int(w, PF_ARG_CORRELATION, sqlite3_column_int64(st, 8));
        if (sqlite3_column_type(st, 7) != SQLITE_NULL)
            pb_fixed64(&w->event, PF_EVENT_TERMINATING_FLOW_IDS,
                       (uint64_t)sqlite3_column_int64(st, 2));
        perfetto_event_end(w, start);
    }
    perfetto_nest_close(w, &nest);
    free(nest.ends);
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}

/* NVML samples as counter tracks under their GPU's track. */
static const struct {
    const char *name, *expression;
} counters[] = {
    {"Power (W)", "power_mw / 1000.0"},
    {"Energy (J)", "(energy_mj - min(energy_mj) OVER (PARTITION BY gpu_id)) / 1000.0"},
    {"SM clock (MHz)", "sm_clock_mhz"},
    {"Memory clock (MHz)", "memory_clock_mhz"},
    {"GPU utilization (%)", "gpu_util"},
    {"Memory utilization (%)", "memory_util"},
    {"Memory used (GB)", "memory_used_bytes / 1e9"},
    {"Temperature (C)", "temperature_c"},
};

static int put_counters(struct perfetto_writer *w)
{
    for (unsigned metric = 0; metric < sizeof counters / sizeof counters[0]; metric++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT gpu_id, ts_ns, v FROM (SELECT gpu_id, ts_ns, %s AS v FROM gpu_samples)"
                 " WHERE v IS NOT NULL ORDER BY gpu_id, ts_ns",
                 counters[metric].expression);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
            return -1;
        int64_t last_gpu = -1;
        while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
            int64_t gpu = sqlite3_column_int64(st, 0);
            uint64_t track = PERFETTO_COUNTER_TRACK(gpu, metric);
            if (gpu != last_gpu) {
                perfetto_track(w, track, PERFETTO_GPU_TRACK(gpu), counters[metric].name, NULL, NULL,
                               1);
                perfetto_run_begin(w, track);
            }
            last_gpu = gpu;
            perfetto_event_begin(w, PF_TYPE_COUNTER, track);
            pb_double(&w->event, PF_EVENT_DOUBLE_COUNTER_VALUE, sqlite3_column_double(st, 2));
            perfetto_event_end(w, (uint64_t)sqlite3_column_int64(st, 1));
        }
        if (sqlite3_finalize(st) != SQLITE_OK)
            return -1;
    }
    return 0;
}

int perfetto_gpu_events(struct perfetto_writer *w)
{
    struct flow_index flows = {0};
    int rc = -1;
    if (load_flows(w, &flows) < 0 || put_api_calls(w, &flows) < 0 || put_gpu_tracks(w) < 0 ||
        put_stream_tracks(w) < 0 || put_gpu_ops(w) < 0 || put_counters(w) < 0)
        goto out;
    rc = 0;
out:
    free(flows.api);
    free(flows.flow);
    return rc;
}
