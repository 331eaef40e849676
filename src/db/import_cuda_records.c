/* The CUDA source's importer, records part: trace records 40-79 (written by src/agent/cupti*.c)
 * into kernels, memcpys, memsets, cuda_api, cuda_syncs, cuda_memory, gpus, ... (one function
 * per record type, reading it with the decoder records.def generates); import_cuda.c holds the
 * source's row and its end-of-session work. */
#include "db/import_cuda_records.h"
#include "db/gpu_peaks.h"
#include "trace/format.h"
#include "trace/records.h"

#include <errno.h>
#include <stdio.h>

enum {
    SLOT_KERNEL,
    SLOT_KERNEL_BATCH,
    SLOT_API_BATCH,
    SLOT_MEMCPY,
    SLOT_MEMSET,
    SLOT_API,
    SLOT_SYNC,
    SLOT_MEMORY,
    SLOT_GPU,
    SLOT_PROCESS_GPU,
    SLOT_CONTEXT,
    SLOT_STREAM,
    SLOT_STREAM_HANDLE,
    SLOT_OVERHEAD,
    SLOT_REJECTED,
    SLOT_CAPTURE,
    SLOT_CONTEXT_HANDLE,
    SLOT_BACKTRACE,
};

/* A failed insert's warning: "CUDA import: <SQLite's message>". */
#define STEP_WARNING "CUDA import: "

/* ---- names of the trace's enumerations (format.h) -------------------------------------- */

static const char *const copy_kind_names[] = {
    [TRACE_CUDA_COPY_HTOD] = "HtoD", [TRACE_CUDA_COPY_DTOH] = "DtoH",
    [TRACE_CUDA_COPY_HTOA] = "HtoA", [TRACE_CUDA_COPY_ATOH] = "AtoH",
    [TRACE_CUDA_COPY_ATOA] = "AtoA", [TRACE_CUDA_COPY_ATOD] = "AtoD",
    [TRACE_CUDA_COPY_DTOA] = "DtoA", [TRACE_CUDA_COPY_DTOD] = "DtoD",
    [TRACE_CUDA_COPY_HTOH] = "HtoH", [TRACE_CUDA_COPY_PTOP] = "PtoP",
};
static const char *const mem_kind_names[] = {
    [TRACE_CUDA_MEM_PAGEABLE] = "pageable", [TRACE_CUDA_MEM_PINNED] = "pinned",
    [TRACE_CUDA_MEM_DEVICE] = "device",     [TRACE_CUDA_MEM_ARRAY] = "array",
    [TRACE_CUDA_MEM_MANAGED] = "managed",   [TRACE_CUDA_MEM_DEVICE_STATIC] = "device_static",
    [TRACE_CUDA_MEM_MANAGED_STATIC] = "managed_static",
};
/* Also bound into cuda_correlate.sql (the waits it infers from call names). */
const char *const import_cuda_sync_kind_names[IMPORT_CUDA_SYNC_KINDS] = {
    [TRACE_CUDA_SYNC_EVENT] = "event",
    [TRACE_CUDA_SYNC_STREAM_WAIT_EVENT] = "stream_wait_event",
    [TRACE_CUDA_SYNC_STREAM] = "stream",
    [TRACE_CUDA_SYNC_CONTEXT] = "context",
};

#define NAME_OF(table, v) ((v) < sizeof(table) / sizeof(table[0]) ? table[v] : NULL)

static const char *overhead_kind_name(uint64_t kind)
{
    switch (kind) {
    case 1:
        return "driver_compiler";
    case 1u << 16:
        return "cupti_buffer_flush";
    case 2u << 16:
        return "cupti_instrumentation";
    case 3u << 16:
        return "cupti_resource";
    case 4u << 16:
        return "runtime_module_loading";
    case 5u << 16:
        return "lazy_function_loading";
    case 6u << 16:
        return "command_buffer_full";
    case 7u << 16:
        return "activity_buffer_request";
    case 8u << 16:
        return "uvm_activity_init";
    default:
        return "unknown";
    }
}

/* ---- one function per record type ------------------------------------------------------ */

/* Binds columns 1-7 shared by kernels, memcpys and memsets (process, device, context, stream,
 * correlation, start, end): the leading fields of their records, which have the same names. */
#define BIND_GPU_OP_HEADER(f, s, r)                                                                \
    bind_gpu_op_header(f, s, (r).device, (r).context, (r).stream, (r).correlation, (r).start,      \
                       (r).end)
static void bind_gpu_op_header(struct import_file *f, sqlite3_stmt *s, uint64_t device,
                               uint64_t context, uint64_t stream, uint64_t correlation,
                               uint64_t start, uint64_t end)
{
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, (int64_t)device);
    sqlite3_bind_int64(s, 3, (int64_t)context);
    sqlite3_bind_int64(s, 4, (int64_t)stream);
    sqlite3_bind_int64(s, 5, (int64_t)correlation);
    sqlite3_bind_int64(s, 6, (int64_t)start);
    sqlite3_bind_int64(s, 7, (int64_t)end);
}

/* An INSERT of the process id, then n integers (sql's n + 1 parameters, in that order). */
static int insert_process_ints(struct import_file *f, int slot, const char *sql, const uint64_t *v,
                               int n)
{
    sqlite3_stmt *s = import_stmt(f, slot, sql);
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(s, 2 + i, (int64_t)v[i]);
    return import_step(f, s, STEP_WARNING);
}

/* ---- kernels and API calls: written in batches ------------------------------------------ */

/* Kernels and API calls, the bulk of a CUDA trace, are written ROW_BATCH rows per INSERT: one
 * VDBE run for 64 rows instead of one each, as import_nvtx.c writes its ranges (measured on
 * bench_import_cuda: ~0.5 µs less per row). The rows held back are written in their order when
 * the batch is full and at the end of the file, so their ids are those of one-by-one inserts. */
#define ROW_BATCH 64
#define ROW_MAX_COLUMNS 25

/* "INSERT ... VALUES(?,...)" of a row and of ROW_BATCH rows */
#define BATCH_SQL_MAX (512 + ROW_BATCH * (ROW_MAX_COLUMNS * 2 + 3))

/* A table written in batches: its INSERT up to VALUES, its columns, its statement slots, and
 * the statements' text, made at their first use. */
struct batch_table {
    const char *insert;
    int columns, slot_one, slot_batch;
    char sql_one[BATCH_SQL_MAX], sql_batch[BATCH_SQL_MAX];
};

static struct batch_table kernel_table = {
    "INSERT INTO kernels(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
    " name_id, demangled_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
    " cluster_x, cluster_y, cluster_z, regs_per_thread, static_smem, dynamic_smem,"
    " local_mem_per_thread, launch_type, graph_id, graph_node_id) VALUES",
    25, SLOT_KERNEL, SLOT_KERNEL_BATCH, "", ""};
static struct batch_table api_table = {
    "INSERT INTO cuda_api(process_id, thread_id, api, cbid, name_id, start_ns, end_ns,"
    " return_code, correlation_id) VALUES",
    9, SLOT_API, SLOT_API_BATCH, "", ""};

/* One value of a row held back: an integer, or NULL. */
struct batch_cell {
    int64_t value;
    int is_null;
};

struct row_batch {
    int rows;
    struct batch_cell cells[ROW_BATCH * ROW_MAX_COLUMNS];
};

/* The CUDA importer's state for one file: the rows held back. */
struct cuda_file {
    struct import_file *file;
    struct row_batch kernels, api;
};

/* The table's INSERT of rows rows (1 or ROW_BATCH). */
static const char *table_sql(struct batch_table *t, int rows)
{
    char *out = rows > 1 ? t->sql_batch : t->sql_one;
    if (!out[0]) {
        size_t len = (size_t)snprintf(out, BATCH_SQL_MAX, "%s", t->insert);
        for (int i = 0; i < rows * t->columns && len < BATCH_SQL_MAX; i++)
            len += (size_t)snprintf(out + len, BATCH_SQL_MAX - len, "%s?%s",
                                    i % t->columns ? "," : i ? ",(" : "(",
                                    (i + 1) % t->columns ? "" : ")");
    }
    return out;
}

static void bind_cells(sqlite3_stmt *st, int first, const struct batch_cell *cells, int n)
{
    for (int i = 0; i < n; i++) {
        if (cells[i].is_null)
            sqlite3_bind_null(st, first + i);
        else
            sqlite3_bind_int64(st, first + i, cells[i].value);
    }
}

/* Writes the rows held back: a full batch in one statement, the rest one by one. */
static int flush_rows(struct import_file *f, struct batch_table *t, struct row_batch *b)
{
    int rc = 0, full = b->rows == ROW_BATCH;
    sqlite3_stmt *st = full ? import_stmt(f, t->slot_batch, table_sql(t, ROW_BATCH)) : NULL;
    if (full) {
        if (st)
            bind_cells(st, 1, b->cells, ROW_BATCH * t->columns);
        rc = import_step(f, st, STEP_WARNING); /* -EIO for no statement */
    }
    for (int r = 0; !full && r < b->rows; r++) {
        st = import_stmt(f, t->slot_one, table_sql(t, 1));
        if (!st)
            return -EIO;
        bind_cells(st, 1, b->cells + r * t->columns, t->columns);
        rc |= import_step(f, st, STEP_WARNING);
    }
    b->rows = 0;
    return rc < 0 ? -EIO : 0;
}

/* The next row of the batch (its cells to fill, all of them), written when the batch is full. */
static struct batch_cell *next_row(struct row_batch *b, const struct batch_table *t)
{
    return b->cells + b->rows * t->columns;
}

static int row_done(struct import_file *f, struct batch_table *t, struct row_batch *b)
{
    return ++b->rows == ROW_BATCH ? flush_rows(f, t, b) : 0;
}

/* A cell of the trace's conventions: the value, or NULL for 0 ("none"). */
static struct batch_cell value(int64_t v)
{
    return (struct batch_cell){v, 0};
}
static struct batch_cell nonzero(int64_t v)
{
    return (struct batch_cell){v, v == 0};
}

static int import_kernel(struct cuda_file *cf, struct trace_fields *in)
{
    struct import_file *f = cf->file;
    struct trace_cuda_kernel k;
    trace_get_cuda_kernel(in, &k);
    struct batch_cell *row = next_row(&cf->kernels, &kernel_table);
    const struct batch_cell cells[] = {
        value(import_process(f)),
        value((int64_t)k.device),
        value((int64_t)k.context),
        value((int64_t)k.stream),
        value((int64_t)k.correlation),
        value((int64_t)k.start),
        value((int64_t)k.end),
        nonzero(import_string(f, k.name)),
        nonzero(import_string(f, k.demangled)),
        value((int64_t)k.grid_x),
        value((int64_t)k.grid_y),
        value((int64_t)k.grid_z),
        value((int64_t)k.block_x),
        value((int64_t)k.block_y),
        value((int64_t)k.block_z),
        value((int64_t)k.cluster_x),
        value((int64_t)k.cluster_y),
        value((int64_t)k.cluster_z),
        value((int64_t)k.registers_per_thread),
        value((int64_t)k.static_smem),
        value((int64_t)k.dynamic_smem),
        value((int64_t)k.local_mem_per_thread),
        value((int64_t)k.launch_type),
        nonzero((int64_t)k.graph_id), /* 0 outside graphs */
        nonzero((int64_t)k.graph_node_id),
    };
    _Static_assert(sizeof cells / sizeof cells[0] == 25, "kernel_table's columns");
    memcpy(row, cells, sizeof cells);
    return row_done(f, &kernel_table, &cf->kernels);
}

static int import_api(struct cuda_file *cf, struct trace_fields *in)
{
    struct import_file *f = cf->file;
    struct trace_cuda_api a;
    trace_get_cuda_api(in, &a);
    struct batch_cell *row = next_row(&cf->api, &api_table);
    int64_t thread = import_thread_by_tid(f, a.os_tid); /* may add the thread (and process) row */
    const struct batch_cell cells[] = {
        value(import_process(f)),
        value(thread),
        value((int64_t)a.api),
        value((int64_t)a.cbid),
        nonzero(import_string(f, a.name)),
        value((int64_t)a.start),
        value((int64_t)a.end),
        value((int64_t)a.return_code),
        value((int64_t)a.correlation),
    };
    _Static_assert(sizeof cells / sizeof cells[0] == 9, "api_table's columns");
    memcpy(row, cells, sizeof cells);
    return row_done(f, &api_table, &cf->api);
}

void *import_cuda_file_open(struct import_file *f, void *session_state)
{
    (void)session_state;
    struct cuda_file *cf = malloc(sizeof *cf);
    if (cf) {
        cf->file = f;
        cf->kernels.rows = cf->api.rows = 0;
    }
    return cf;
}

void import_cuda_file_close(void *ctx)
{
    struct cuda_file *cf = ctx;
    flush_rows(cf->file, &kernel_table, &cf->kernels);
    flush_rows(cf->file, &api_table, &cf->api);
    free(cf);
}

/* ---- the other records: one row each ----------------------------------------------------- */

static int import_memcpy(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_memcpy c;
    trace_get_cuda_memcpy(in, &c);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMCPY,
        "INSERT INTO memcpys(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async, src_device, dst_device, graph_node_id)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    BIND_GPU_OP_HEADER(f, s, c);
    import_bind_text(s, 8, NAME_OF(copy_kind_names, c.copy_kind));
    sqlite3_bind_int64(s, 9, (int64_t)c.bytes);
    import_bind_text(s, 10, NAME_OF(mem_kind_names, c.src_kind));
    import_bind_text(s, 11, NAME_OF(mem_kind_names, c.dst_kind));
    sqlite3_bind_int64(s, 12, (int64_t)c.async);
    sqlite3_bind_int64(s, 13, (int64_t)c.src_device);
    sqlite3_bind_int64(s, 14, (int64_t)c.dst_device);
    import_bind_nonzero(s, 15, (int64_t)c.graph_node_id);
    return import_step(f, s, STEP_WARNING);
}

static int import_memset(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_memset m;
    trace_get_cuda_memset(in, &m);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMSET,
        "INSERT INTO memsets(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " bytes, value, mem_kind, is_async, graph_node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    BIND_GPU_OP_HEADER(f, s, m);
    sqlite3_bind_int64(s, 8, (int64_t)m.bytes);
    sqlite3_bind_int64(s, 9, (int64_t)m.value);
    import_bind_text(s, 10, NAME_OF(mem_kind_names, m.mem_kind));
    sqlite3_bind_int64(s, 11, (int64_t)m.async);
    import_bind_nonzero(s, 12, (int64_t)m.graph_node_id);
    return import_step(f, s, STEP_WARNING);
}

static int import_sync(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_sync y;
    trace_get_cuda_sync(in, &y);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_SYNC,
        "INSERT INTO cuda_syncs(process_id, sync_kind, context, stream, event, correlation_id,"
        " start_ns, end_ns) VALUES(?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, import_process(f));
    import_bind_text(s, 2, NAME_OF(import_cuda_sync_kind_names, y.sync_kind));
    sqlite3_bind_int64(s, 3, (int64_t)y.context);
    import_bind_plus_one(s, 4, y.stream); /* 0: none */
    import_bind_plus_one(s, 5, y.event);
    sqlite3_bind_int64(s, 6, (int64_t)y.correlation);
    sqlite3_bind_int64(s, 7, (int64_t)y.start);
    sqlite3_bind_int64(s, 8, (int64_t)y.end);
    return import_step(f, s, STEP_WARNING);
}

static int import_memory(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_memory m;
    trace_get_cuda_memory(in, &m);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMORY,
        "INSERT INTO cuda_memory(process_id, device, op, mem_kind, address, bytes, ts_ns, stream,"
        " correlation_id) VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    const char *op = m.op == 1 ? "alloc" : m.op == 2 ? "free" : NULL;
    if (!op)
        return 0; /* CUPTI's "invalid" operation: nothing to show */
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, (int64_t)m.device);
    sqlite3_bind_text(s, 3, op, -1, SQLITE_STATIC);
    import_bind_text(s, 4, NAME_OF(mem_kind_names, m.mem_kind));
    sqlite3_bind_int64(s, 5, (int64_t)m.address);
    sqlite3_bind_int64(s, 6, (int64_t)m.bytes);
    sqlite3_bind_int64(s, 7, (int64_t)m.ts);
    sqlite3_bind_int64(s, 8, (int64_t)m.stream);
    sqlite3_bind_int64(s, 9, (int64_t)m.correlation);
    return import_step(f, s, STEP_WARNING);
}

/* gpus.id of a uuid, inserting the GPU if new (merged by uuid across processes). */
static int import_device(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_device d;
    trace_get_cuda_device(in, &d);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_GPU,
        "INSERT OR IGNORE INTO gpus(uuid, name, pci_bus_id, cc_major, cc_minor, sm_count,"
        " memory_bytes, sm_clock_khz, memory_clock_khz, memory_bus_bits, l2_bytes,"
        " max_threads_per_sm, max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm,"
        " regs_per_block, smem_per_block_optin, peak_fp32_flops, peak_fp16_flops,"
        " peak_bf16_flops, peak_tf32_flops, peak_fp64_flops, peak_dram_bytes_per_s)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    if (!d.uuid.len) {
        import_warn(f, "CUDA device %lld has no UUID; not imported", (long long)d.device);
        return 0;
    }
    import_bind_bytes(s, 1, d.uuid.bytes, d.uuid.len);
    import_bind_bytes(s, 2, d.name.bytes, d.name.len);
    import_bind_bytes(s, 3, d.pci_bus_id.bytes, d.pci_bus_id.len);
    sqlite3_bind_int64(s, 4, (int64_t)d.cc_major); /* compute capability: minor 0 is a real value */
    sqlite3_bind_int64(s, 5, (int64_t)d.cc_minor);
    const uint64_t known[] = {
        /* columns 6-17, 0 meaning unknown */
        d.sm_count,        d.memory_bytes,      d.sm_clock_khz,        d.memory_clock_khz,
        d.memory_bus_bits, d.l2_bytes,          d.max_threads_per_sm,  d.max_registers_per_sm,
        d.max_smem_per_sm, d.max_blocks_per_sm, d.registers_per_block, d.smem_per_block_optin,
    };
    for (int i = 0; i < 12; i++)
        import_bind_nonzero(s, 6 + i, (int64_t)known[i]);
    /* the theoretical peaks (gpu_peaks.h): the reports compute them again from the row */
    struct gpu_peaks peaks;
    gpu_peaks_flops((int64_t)d.cc_major, (int64_t)d.cc_minor, (int64_t)d.sm_count,
                    (int64_t)d.sm_clock_khz, &peaks);
    const double flops[] = {peaks.fp32, peaks.fp16, peaks.bf16, peaks.tf32, peaks.fp64};
    for (int i = 0; i < 5; i++)
        if (flops[i] != 0)
            sqlite3_bind_double(s, 18 + i, flops[i]);
    double dram = gpu_peak_dram_bytes_per_s((int64_t)d.dram_bandwidth, (int64_t)d.memory_clock_khz,
                                            (int64_t)d.memory_bus_bits);
    if (dram > 0)
        sqlite3_bind_double(s, 23, dram);
    if (import_step(f, s, STEP_WARNING) < 0)
        return -EIO;

    sqlite3_stmt *link =
        import_stmt(f, SLOT_PROCESS_GPU,
                    "INSERT OR REPLACE INTO process_gpus(process_id, device, gpu_id)"
                    " SELECT ?, ?, id FROM gpus WHERE uuid = ?");
    if (!link)
        return -EIO;
    sqlite3_bind_int64(link, 1, import_process(f));
    sqlite3_bind_int64(link, 2, (int64_t)d.device);
    import_bind_bytes(link, 3, d.uuid.bytes, d.uuid.len);
    return import_step(f, link, STEP_WARNING);
}

static int import_context(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_context c;
    trace_get_cuda_context(in, &c);
    return insert_process_ints(
        f, SLOT_CONTEXT,
        "INSERT INTO cuda_contexts(process_id, context, device, null_stream) VALUES(?,?,?,?)",
        (const uint64_t[]){c.context, c.device, c.null_stream}, 3);
}

static int import_stream(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_stream t;
    trace_get_cuda_stream(in, &t);
    sqlite3_stmt *s =
        import_stmt(f, SLOT_STREAM,
                    "INSERT INTO cuda_streams(process_id, context, stream, priority, is_default)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, (int64_t)t.context);
    sqlite3_bind_int64(s, 3, (int64_t)t.stream);
    sqlite3_bind_int64(s, 4, (int32_t)t.priority); /* CUDA priorities are small negative ints */
    sqlite3_bind_int64(s, 5, t.flag == TRACE_CUDA_STREAM_NULL);
    return import_step(f, s, STEP_WARNING);
}

static int import_stream_handle(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_stream_handle h;
    trace_get_cuda_stream_handle(in, &h);
    return insert_process_ints(
        f, SLOT_STREAM_HANDLE,
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES(?,?,?,?)",
        (const uint64_t[]){h.handle, h.context, h.stream}, 3);
}

static int import_context_handle(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_context_handle h;
    trace_get_cuda_context_handle(in, &h);
    return insert_process_ints(
        f, SLOT_CONTEXT_HANDLE,
        "INSERT INTO cuda_context_handles(process_id, handle, context) VALUES(?,?,?)",
        (const uint64_t[]){h.handle, h.context}, 2);
}

static int import_overhead(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_overhead o;
    trace_get_cuda_overhead(in, &o);
    sqlite3_stmt *s =
        import_stmt(f, SLOT_OVERHEAD,
                    "INSERT INTO cupti_overhead(process_id, thread_id, kind, start_ns, end_ns)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, import_process(f));
    if (o.os_tid)
        sqlite3_bind_int64(s, 2, import_thread_by_tid(f, o.os_tid));
    sqlite3_bind_text(s, 3, overhead_kind_name(o.kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)o.start);
    sqlite3_bind_int64(s, 5, (int64_t)o.end);
    return import_step(f, s, STEP_WARNING);
}

static int import_rejected(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_rejected r;
    trace_get_cuda_rejected(in, &r);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_REJECTED,
        "UPDATE processes SET cuda_rejected_records = cuda_rejected_records + ? WHERE id = ?");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, (int64_t)r.count);
    sqlite3_bind_int64(s, 2, import_process(f));
    return import_step(f, s, STEP_WARNING);
}

static int import_capture(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_capture c;
    trace_get_cuda_capture(in, &c);
    sqlite3_stmt *s = import_stmt(
        f, SLOT_CAPTURE,
        "INSERT OR REPLACE INTO cuda_capture(process_id, mode, from_ns, until_ns) VALUES(?,?,?,?)");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, import_process(f));
    import_bind_bytes(s, 2, c.mode.bytes, c.mode.len);
    import_bind_nonzero(s, 3, (int64_t)c.from_ns);
    import_bind_nonzero(s, 4, (int64_t)c.until_ns);
    return import_step(f, s, STEP_WARNING);
}

/* The caller of a launch (--python-backtrace): it comes before the call's own record (the
 * agent's ring drains sooner than CUPTI's buffers), so it waits in cuda_backtraces until
 * cuda_correlate.sql joins it by correlation. */
static int import_backtrace(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_backtrace b;
    trace_get_cuda_backtrace(in, &b);
    int64_t stack = import_string(f, b.stack);
    if (!stack)
        return 0;
    return insert_process_ints(
        f, SLOT_BACKTRACE,
        "INSERT INTO cuda_backtraces(process_id, correlation_id, backtrace_id) VALUES(?,?,?)",
        (const uint64_t[]){b.correlation, (uint64_t)stack}, 2);
}

int import_cuda_record(void *ctx, unsigned type, struct trace_fields *fields)
{
    struct cuda_file *cf = ctx;
    struct import_file *f = cf->file;
    switch (type) {
    case TRACE_CUDA_KERNEL:
        return import_kernel(cf, fields);
    case TRACE_CUDA_MEMCPY:
        return import_memcpy(f, fields);
    case TRACE_CUDA_MEMSET:
        return import_memset(f, fields);
    case TRACE_CUDA_API:
        return import_api(cf, fields);
    case TRACE_CUDA_SYNC:
        return import_sync(f, fields);
    case TRACE_CUDA_MEMORY:
        return import_memory(f, fields);
    case TRACE_CUDA_DEVICE:
        return import_device(f, fields);
    case TRACE_CUDA_CONTEXT:
        return import_context(f, fields);
    case TRACE_CUDA_STREAM:
        return import_stream(f, fields);
    case TRACE_CUDA_STREAM_HANDLE:
        return import_stream_handle(f, fields);
    case TRACE_CUDA_OVERHEAD:
        return import_overhead(f, fields);
    case TRACE_CUDA_REJECTED:
        return import_rejected(f, fields);
    case TRACE_CUDA_CAPTURE:
        return import_capture(f, fields);
    case TRACE_CUDA_CONTEXT_HANDLE:
        return import_context_handle(f, fields);
    case TRACE_CUDA_BACKTRACE:
        return import_backtrace(f, fields);
    default:
        return 0; /* a newer agent's record: skipped, as the format promises */
    }
}

