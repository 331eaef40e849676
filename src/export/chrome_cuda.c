/* The CUDA part of the Chrome trace-event export: a process row per GPU with a thread row per
 * stream holding its kernels, copies and memsets; CUDA API calls on their CPU threads; a flow
 * arrow from each launching call to its GPU operation; a device-memory-in-use counter per GPU. */
#include "export/chrome_writer.h"
#include "output/json.h"

#include <errno.h>
#include <string.h>

/* Every GPU operation of the gpu_ops view (src/db/schema.sql, the one definition reports
 * share) with a flow_id unique per operation (its own id times 4 plus a kind tag), so an API
 * call launching several operations draws one arrow to each. */
#define CHROME_GPU_OPS                                                                             \
    "chrome_ops AS (SELECT kind, id * 4 + CASE kind WHEN 'kernel' THEN 0 WHEN 'memcpy' THEN 1"     \
    " ELSE 2 END AS flow_id, process_id, gpu_id, device, context, stream, correlation_id,"         \
    " start_ns, end_ns, api_id, name, grid_x, grid_y, grid_z, block_x, block_y, block_z,"          \
    " regs_per_thread, static_smem, dynamic_smem, bytes, copy_kind, src_kind, dst_kind"            \
    " FROM gpu_ops)"

/* One thread row per (GPU, process, stream), numbered from 1 in that order. */
#define CHROME_LANES                                                                               \
    "lanes AS (SELECT gpu_id, process_id, stream,"                                                 \
    " ROW_NUMBER() OVER (ORDER BY COALESCE(gpu_id, 0), process_id, stream) AS tid"                 \
    " FROM (SELECT DISTINCT gpu_id, process_id, stream FROM chrome_ops))"

/* "M" events naming the GPU processes ("GPU 0: NVIDIA H100 80GB HBM3") and the stream
 * threads (the NVTX name the program gave the stream, else "Stream 7"). */
static void write_name(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_event_begin(w);
    fprintf(w->out,
            "\"name\": \"%s\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, \"args\": {\"name\": ",
            (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2));
    chrome_write_text_column(w->out, st, 3);
    fputs("}}", w->out);
}

static int write_names(struct chrome_writer *w)
{
    // clang-format off
    static const char sql[] =
        "WITH " CHROME_GPU_OPS ", " CHROME_LANES
        " SELECT 'process_name', " CHROME_GPU_PID("l.gpu_id") ", 0, 'GPU ' ||"
        " COALESCE(g.nvml_index, (SELECT MIN(device) FROM process_gpus WHERE gpu_id = g.id),"
        " '?') || ': ' || COALESCE(g.name, 'unknown GPU') FROM"
        " (SELECT DISTINCT gpu_id FROM lanes) l LEFT JOIN gpus g ON g.id = l.gpu_id"
        " UNION ALL SELECT 'thread_name', " CHROME_GPU_PID("l.gpu_id") ", l.tid,"
        " COALESCE((SELECT s.value FROM cuda_streams cs JOIN strings s ON s.id = cs.name_id"
        "  WHERE cs.process_id = l.process_id AND cs.stream = l.stream LIMIT 1),"
        "  'Stream ' || l.stream)"
        " || CASE WHEN (SELECT COUNT(*) FROM processes) > 1"
        "  THEN ' (pid ' || (SELECT pid FROM processes WHERE id = l.process_id) || ')' ELSE '' END"
        " FROM lanes l";
    // clang-format on
    return chrome_rows(w, sql, write_name);
}

/* CUDA API calls as complete events on the calling thread. */
static void write_api_call(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_write_thread_slice(w, st, "cuda_api");
    fprintf(w->out, ", \"args\": {\"correlation_id\": %lld, \"return_code\": %lld}}",
            sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6));
}

static int write_api_calls(struct chrome_writer *w)
{
    static const char sql[] =
        "SELECT p.pid, t.tid, a.start_ns, a.end_ns, COALESCE(s.value, 'cbid ' || a.cbid),"
        " a.correlation_id, a.return_code FROM cuda_api a"
        " JOIN processes p ON p.id = a.process_id JOIN threads t ON t.id = a.thread_id"
        " LEFT JOIN strings s ON s.id = a.name_id ORDER BY a.start_ns, a.id";
    return chrome_rows(w, sql, write_api_call);
}

enum {
    OP_KIND,
    OP_FLOW_ID,
    OP_PID,
    OP_TID,
    OP_START,
    OP_END,
    OP_NAME,
    OP_CORRELATION,
    OP_STREAM,
    OP_DEVICE,
    OP_CONTEXT,
    OP_GRID_X,
    OP_GRID_Y,
    OP_GRID_Z,
    OP_BLOCK_X,
    OP_BLOCK_Y,
    OP_BLOCK_Z,
    OP_REGS,
    OP_STATIC_SMEM,
    OP_DYNAMIC_SMEM,
    OP_BYTES,
    OP_COPY_KIND,
    OP_SRC_KIND,
    OP_DST_KIND,
    OP_API_PID,
    OP_API_TID,
    OP_API_START,
    OP_API_END,
};

static void write_kernel_args(FILE *out, sqlite3_stmt *st)
{
    fprintf(out,
            ", \"grid\": [%lld, %lld, %lld], \"block\": [%lld, %lld, %lld], "
            "\"registers_per_thread\": %lld, \"static_smem_bytes\": %lld, "
            "\"dynamic_smem_bytes\": %lld",
            sqlite3_column_int64(st, OP_GRID_X), sqlite3_column_int64(st, OP_GRID_Y),
            sqlite3_column_int64(st, OP_GRID_Z), sqlite3_column_int64(st, OP_BLOCK_X),
            sqlite3_column_int64(st, OP_BLOCK_Y), sqlite3_column_int64(st, OP_BLOCK_Z),
            sqlite3_column_int64(st, OP_REGS), sqlite3_column_int64(st, OP_STATIC_SMEM),
            sqlite3_column_int64(st, OP_DYNAMIC_SMEM));
}

/* Bytes, GB/s, and the memory kinds: what tells a pageable copy from a pinned one. */
static void write_memory_args(FILE *out, sqlite3_stmt *st, long long duration)
{
    long long bytes = sqlite3_column_int64(st, OP_BYTES);
    fprintf(out, ", \"bytes\": %lld, \"throughput_gb_per_s\": ", bytes);
    json_write_double(out, duration > 0 ? (double)bytes / (double)duration : 0.0);
    static const struct {
        int col;
        const char *key;
    } kinds[] = {
        {OP_COPY_KIND, "copy_kind"},
        {OP_SRC_KIND, "src_kind"},
        {OP_DST_KIND, "dst_kind"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        if (sqlite3_column_type(st, kinds[i].col) == SQLITE_NULL)
            continue;
        fprintf(out, ", \"%s\": ", kinds[i].key);
        chrome_write_text_column(out, st, kinds[i].col);
    }
}

/* Chrome's reserved color names: copies touching pageable memory red, pinned green, the rest
 * (device to device, memsets) keep the viewer's colors. */
static const char *copy_color(sqlite3_stmt *st)
{
    const char *src = (const char *)sqlite3_column_text(st, OP_SRC_KIND);
    const char *dst = (const char *)sqlite3_column_text(st, OP_DST_KIND);
    if ((src && !strcmp(src, "pageable")) || (dst && !strcmp(dst, "pageable")))
        return "terrible";
    if ((src && !strcmp(src, "pinned")) || (dst && !strcmp(dst, "pinned")))
        return "good";
    return NULL;
}

static void write_gpu_op(struct chrome_writer *w, sqlite3_stmt *st)
{
    const char *kind = (const char *)sqlite3_column_text(st, OP_KIND);
    long long start = sqlite3_column_int64(st, OP_START), end = sqlite3_column_int64(st, OP_END);
    const char *color = !strcmp(kind, "memcpy") ? copy_color(st) : NULL;
    chrome_event_begin(w);
    fputs("\"name\": ", w->out);
    chrome_write_text_column(w->out, st, OP_NAME);
    fprintf(w->out, ", \"cat\": \"cuda_%s\", \"ph\": \"X\", \"pid\": %lld, \"tid\": %lld, ", kind,
            sqlite3_column_int64(st, OP_PID), sqlite3_column_int64(st, OP_TID));
    if (color)
        fprintf(w->out, "\"cname\": \"%s\", ", color);
    fputs("\"ts\": ", w->out);
    chrome_write_us(w, start);
    fputs(", \"dur\": ", w->out);
    chrome_write_duration_us(w->out, chrome_span_ns(start, end));
    fprintf(w->out,
            ", \"args\": {\"correlation_id\": %lld, \"device\": %lld, \"context\": %lld, "
            "\"stream\": %lld",
            sqlite3_column_int64(st, OP_CORRELATION), sqlite3_column_int64(st, OP_DEVICE),
            sqlite3_column_int64(st, OP_CONTEXT), sqlite3_column_int64(st, OP_STREAM));
    if (!strcmp(kind, "kernel"))
        write_kernel_args(w->out, st);
    else
        write_memory_args(w->out, st, chrome_span_ns(start, end));
    fputs("}}", w->out);
}

/* A flow arrow (trace-event flow v1), each end bound to the slice enclosing it ("bp": "e"):
 * placed at the middle of the API call and of the GPU operation, where no viewer can bind it
 * to a neighbour that starts or ends at the same nanosecond. */
static long long middle(long long start, long long end)
{
    return start + chrome_span_ns(start, end) / 2; /* no overflow: see chrome_span_ns */
}

static void write_flow(struct chrome_writer *w, sqlite3_stmt *st)
{
    long long id = sqlite3_column_int64(st, OP_FLOW_ID);
    chrome_event_begin(w);
    fprintf(w->out,
            "\"name\": \"launch\", \"cat\": \"cuda_flow\", \"ph\": \"s\", \"bp\": \"e\", "
            "\"id\": %lld, "
            "\"pid\": %lld, \"tid\": %lld, \"ts\": ",
            id, sqlite3_column_int64(st, OP_API_PID), sqlite3_column_int64(st, OP_API_TID));
    chrome_write_us(
        w, middle(sqlite3_column_int64(st, OP_API_START), sqlite3_column_int64(st, OP_API_END)));
    fputs("}", w->out);
    chrome_event_begin(w);
    fprintf(w->out,
            "\"name\": \"launch\", \"cat\": \"cuda_flow\", \"ph\": \"f\", \"bp\": \"e\", "
            "\"id\": %lld, \"pid\": %lld, \"tid\": %lld, \"ts\": ",
            id, sqlite3_column_int64(st, OP_PID), sqlite3_column_int64(st, OP_TID));
    chrome_write_us(w,
                    middle(sqlite3_column_int64(st, OP_START), sqlite3_column_int64(st, OP_END)));
    fputs("}", w->out);
}

/* A kernel, copy or memset on its stream row, with its flow from the API call. */
static void write_launched_op(struct chrome_writer *w, sqlite3_stmt *st)
{
    write_gpu_op(w, st);
    if (sqlite3_column_type(st, OP_API_START) != SQLITE_NULL &&
        sqlite3_column_type(st, OP_API_TID) != SQLITE_NULL)
        write_flow(w, st);
}

static int write_gpu_ops(struct chrome_writer *w)
{
    // clang-format off
    static const char sql[] =
        "WITH " CHROME_GPU_OPS ", " CHROME_LANES
        " SELECT o.kind, o.flow_id, " CHROME_GPU_PID("o.gpu_id") ", l.tid, o.start_ns, o.end_ns,"
        " o.name, o.correlation_id, o.stream, o.device, o.context, o.grid_x, o.grid_y, o.grid_z,"
        " o.block_x, o.block_y, o.block_z, o.regs_per_thread, o.static_smem, o.dynamic_smem,"
        " o.bytes, o.copy_kind, o.src_kind, o.dst_kind, p.pid, t.tid, a.start_ns, a.end_ns"
        " FROM chrome_ops o JOIN lanes l ON l.gpu_id IS o.gpu_id AND l.process_id = o.process_id"
        " AND l.stream IS o.stream"
        " LEFT JOIN cuda_api a ON a.id = o.api_id LEFT JOIN processes p ON p.id = a.process_id"
        " LEFT JOIN threads t ON t.id = a.thread_id ORDER BY o.start_ns, o.flow_id";
    // clang-format on
    return chrome_rows(w, sql, write_launched_op);
}

/* Device memory in use per GPU after each allocation and free ("C" counter events): the
 * running sum of device allocations minus frees, in CUPTI's order. */
static void write_memory_counter(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_event_begin(w);
    fprintf(w->out, "\"name\": \"Device memory in use\", \"ph\": \"C\", \"pid\": %lld, \"ts\": ",
            sqlite3_column_int64(st, 0));
    chrome_write_us(w, sqlite3_column_int64(st, 1));
    fprintf(w->out, ", \"args\": {\"bytes\": %lld}}", sqlite3_column_int64(st, 2));
}

static int write_memory_counters(struct chrome_writer *w)
{
    // clang-format off
    static const char sql[] =
        "SELECT " CHROME_GPU_PID("gpu_id") ", ts_ns, SUM(CASE op WHEN 'alloc' THEN bytes"
        " ELSE -bytes END) OVER (PARTITION BY COALESCE(gpu_id, 0) ORDER BY ts_ns, id"
        " ROWS UNBOUNDED PRECEDING) FROM cuda_memory"
        " WHERE mem_kind IS NULL OR mem_kind = 'device' ORDER BY ts_ns, id";
    // clang-format on
    return chrome_rows(w, sql, write_memory_counter);
}

int chrome_cuda_events(struct chrome_writer *w)
{
    if (write_names(w) < 0 || write_api_calls(w) < 0 || write_gpu_ops(w) < 0 ||
        write_memory_counters(w) < 0)
        return -EIO;
    return 0;
}
