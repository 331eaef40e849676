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
 * correlation, start, end): the leading fields of their records, which have the same names; the
 * record's own columns follow from 8. */
#define BIND_GPU_OP_HEADER(f, s, r)                                                                \
    bind_gpu_op_header(f, s, (r).device, (r).context, (r).stream, (r).correlation, (r).start,      \
                       (r).end)
static void bind_gpu_op_header(struct import_file *f, sqlite3_stmt *s, uint64_t device,
                               uint64_t context, uint64_t stream, uint64_t correlation,
                               uint64_t start, uint64_t end)
{
    import_bind_row(s, IMPORT_INT(import_process(f)), IMPORT_INT(device), IMPORT_INT(context),
                    IMPORT_INT(stream), IMPORT_INT(correlation), IMPORT_INT(start),
                    IMPORT_INT(end));
}

/* An INSERT of the process id, then n values (sql's n + 1 parameters, in that order). */
static int insert_process_row(struct import_file *f, int slot, const char *sql,
                              const struct import_value *v, int n)
{
    sqlite3_stmt *s = import_stmt(f, slot, sql);
    if (!s)
        return -EIO;
    import_bind_row(s, IMPORT_INT(import_process(f)));
    import_bind_values(s, 2, v, n);
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

struct row_batch {
    int rows;
    struct import_value cells[ROW_BATCH * ROW_MAX_COLUMNS]; /* IMPORT_INT or IMPORT_NONZERO */
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

/* Writes the rows held back: a full batch in one statement, the rest one by one. */
static int flush_rows(struct import_file *f, struct batch_table *t, struct row_batch *b)
{
    int rc = 0, full = b->rows == ROW_BATCH;
    sqlite3_stmt *st = full ? import_stmt(f, t->slot_batch, table_sql(t, ROW_BATCH)) : NULL;
    if (full) {
        if (st)
            import_bind_values(st, 1, b->cells, ROW_BATCH * t->columns);
        rc = import_step(f, st, STEP_WARNING); /* -EIO for no statement */
    }
    for (int r = 0; !full && r < b->rows; r++) {
        st = import_stmt(f, t->slot_one, table_sql(t, 1));
        if (!st)
            return -EIO;
        import_bind_values(st, 1, b->cells + r * t->columns, t->columns);
        rc |= import_step(f, st, STEP_WARNING);
    }
    b->rows = 0;
    return rc < 0 ? -EIO : 0;
}

/* The next row of the batch (its cells to fill, all of them), written when the batch is full. */
static struct import_value *next_row(struct row_batch *b, const struct batch_table *t)
{
    return b->cells + b->rows * t->columns;
}

static int row_done(struct import_file *f, struct batch_table *t, struct row_batch *b)
{
    return ++b->rows == ROW_BATCH ? flush_rows(f, t, b) : 0;
}

static int import_kernel(struct cuda_file *cf, struct trace_fields *in)
{
    struct import_file *f = cf->file;
    struct trace_cuda_kernel k;
    trace_get_cuda_kernel(in, &k);
    struct import_value *row = next_row(&cf->kernels, &kernel_table);
    const struct import_value cells[] = {
        IMPORT_INT(import_process(f)),
        IMPORT_INT(k.device),
        IMPORT_INT(k.context),
        IMPORT_INT(k.stream),
        IMPORT_INT(k.correlation),
        IMPORT_INT(k.start),
        IMPORT_INT(k.end),
        IMPORT_NONZERO(import_string(f, k.name)),
        IMPORT_NONZERO(import_string(f, k.demangled)),
        IMPORT_INT(k.grid_x),
        IMPORT_INT(k.grid_y),
        IMPORT_INT(k.grid_z),
        IMPORT_INT(k.block_x),
        IMPORT_INT(k.block_y),
        IMPORT_INT(k.block_z),
        IMPORT_INT(k.cluster_x),
        IMPORT_INT(k.cluster_y),
        IMPORT_INT(k.cluster_z),
        IMPORT_INT(k.registers_per_thread),
        IMPORT_INT(k.static_smem),
        IMPORT_INT(k.dynamic_smem),
        IMPORT_INT(k.local_mem_per_thread),
        IMPORT_INT(k.launch_type),
        IMPORT_NONZERO(k.graph_id), /* 0 outside graphs */
        IMPORT_NONZERO(k.graph_node_id),
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
    struct import_value *row = next_row(&cf->api, &api_table);
    int64_t thread = import_thread_by_tid(f, a.os_tid); /* may add the thread (and process) row */
    const struct import_value cells[] = {
        IMPORT_INT(import_process(f)),
        IMPORT_INT(thread),
        IMPORT_INT(a.api),
        IMPORT_INT(a.cbid),
        IMPORT_NONZERO(import_string(f, a.name)),
        IMPORT_INT(a.start),
        IMPORT_INT(a.end),
        IMPORT_INT(a.return_code),
        IMPORT_INT(a.correlation),
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
    import_bind_row_at(s, 8, IMPORT_TEXT(NAME_OF(copy_kind_names, c.copy_kind)),
                       IMPORT_INT(c.bytes), IMPORT_TEXT(NAME_OF(mem_kind_names, c.src_kind)),
                       IMPORT_TEXT(NAME_OF(mem_kind_names, c.dst_kind)), IMPORT_INT(c.async),
                       IMPORT_INT(c.src_device), IMPORT_INT(c.dst_device),
                       IMPORT_NONZERO(c.graph_node_id));
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
    import_bind_row_at(s, 8, IMPORT_INT(m.bytes), IMPORT_INT(m.value),
                       IMPORT_TEXT(NAME_OF(mem_kind_names, m.mem_kind)), IMPORT_INT(m.async),
                       IMPORT_NONZERO(m.graph_node_id));
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
    import_bind_row(s, IMPORT_INT(import_process(f)),
                    IMPORT_TEXT(NAME_OF(import_cuda_sync_kind_names, y.sync_kind)),
                    IMPORT_INT(y.context), IMPORT_PLUS_ONE(y.stream) /* 0: none */,
                    IMPORT_PLUS_ONE(y.event), IMPORT_INT(y.correlation), IMPORT_INT(y.start),
                    IMPORT_INT(y.end));
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
    import_bind_row(s, IMPORT_INT(import_process(f)), IMPORT_INT(m.device), IMPORT_TEXT(op),
                    IMPORT_TEXT(NAME_OF(mem_kind_names, m.mem_kind)), IMPORT_INT(m.address),
                    IMPORT_INT(m.bytes), IMPORT_INT(m.ts), IMPORT_INT(m.stream),
                    IMPORT_INT(m.correlation));
    return import_step(f, s, STEP_WARNING);
}

/* A peak FLOP rate: NULL for 0 (unknown). */
static struct import_value peak_value(double flops)
{
    return flops != 0 ? IMPORT_REAL(flops) : IMPORT_NULL;
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
    /* the theoretical peaks (gpu_peaks.h): the reports compute them again from the row */
    struct gpu_peaks peaks;
    gpu_peaks_flops((int64_t)d.cc_major, (int64_t)d.cc_minor, (int64_t)d.sm_count,
                    (int64_t)d.sm_clock_khz, &peaks);
    double dram = gpu_peak_dram_bytes_per_s((int64_t)d.dram_bandwidth, (int64_t)d.memory_clock_khz,
                                            (int64_t)d.memory_bus_bits);
    import_bind_row(
        s, IMPORT_BYTES(d.uuid), IMPORT_BYTES(d.name), IMPORT_BYTES(d.pci_bus_id),
        IMPORT_INT(d.cc_major), IMPORT_INT(d.cc_minor), /* compute capability: minor 0 is real */
        /* columns 6-17, 0 meaning unknown */
        IMPORT_NONZERO(d.sm_count), IMPORT_NONZERO(d.memory_bytes), IMPORT_NONZERO(d.sm_clock_khz),
        IMPORT_NONZERO(d.memory_clock_khz), IMPORT_NONZERO(d.memory_bus_bits),
        IMPORT_NONZERO(d.l2_bytes), IMPORT_NONZERO(d.max_threads_per_sm),
        IMPORT_NONZERO(d.max_registers_per_sm), IMPORT_NONZERO(d.max_smem_per_sm),
        IMPORT_NONZERO(d.max_blocks_per_sm), IMPORT_NONZERO(d.registers_per_block),
        IMPORT_NONZERO(d.smem_per_block_optin), peak_value(peaks.fp32), peak_value(peaks.fp16),
        peak_value(peaks.bf16), peak_value(peaks.tf32), peak_value(peaks.fp64),
        dram > 0 ? IMPORT_REAL(dram) : IMPORT_NULL);
    if (import_step(f, s, STEP_WARNING) < 0)
        return -EIO;

    sqlite3_stmt *link =
        import_stmt(f, SLOT_PROCESS_GPU,
                    "INSERT OR REPLACE INTO process_gpus(process_id, device, gpu_id)"
                    " SELECT ?, ?, id FROM gpus WHERE uuid = ?");
    if (!link)
        return -EIO;
    import_bind_row(link, IMPORT_INT(import_process(f)), IMPORT_INT(d.device),
                    IMPORT_BYTES(d.uuid));
    return import_step(f, link, STEP_WARNING);
}

static int import_context(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_context c;
    trace_get_cuda_context(in, &c);
    return insert_process_row(
        f, SLOT_CONTEXT,
        "INSERT INTO cuda_contexts(process_id, context, device, null_stream) VALUES(?,?,?,?)",
        IMPORT_VALUES(IMPORT_INT(c.context), IMPORT_INT(c.device), IMPORT_INT(c.null_stream)));
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
    import_bind_row(s, IMPORT_INT(import_process(f)), IMPORT_INT(t.context), IMPORT_INT(t.stream),
                    IMPORT_INT((int32_t)t.priority), /* CUDA priorities are small negative ints */
                    IMPORT_INT(t.flag == TRACE_CUDA_STREAM_NULL));
    return import_step(f, s, STEP_WARNING);
}

static int import_stream_handle(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_stream_handle h;
    trace_get_cuda_stream_handle(in, &h);
    return insert_process_row(
        f, SLOT_STREAM_HANDLE,
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES(?,?,?,?)",
        IMPORT_VALUES(IMPORT_INT(h.handle), IMPORT_INT(h.context), IMPORT_INT(h.stream)));
}

static int import_context_handle(struct import_file *f, struct trace_fields *in)
{
    struct trace_cuda_context_handle h;
    trace_get_cuda_context_handle(in, &h);
    return insert_process_row(
        f, SLOT_CONTEXT_HANDLE,
        "INSERT INTO cuda_context_handles(process_id, handle, context) VALUES(?,?,?)",
        IMPORT_VALUES(IMPORT_INT(h.handle), IMPORT_INT(h.context)));
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
    import_bind_row(s, IMPORT_INT(import_process(f)),
                    o.os_tid ? IMPORT_INT(import_thread_by_tid(f, o.os_tid)) : IMPORT_NULL,
                    IMPORT_TEXT(overhead_kind_name(o.kind)), IMPORT_INT(o.start),
                    IMPORT_INT(o.end));
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
    import_bind_row(s, IMPORT_INT(r.count), IMPORT_INT(import_process(f)));
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
    import_bind_row(s, IMPORT_INT(import_process(f)), IMPORT_BYTES(c.mode),
                    IMPORT_NONZERO(c.from_ns), IMPORT_NONZERO(c.until_ns));
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
    return insert_process_row(
        f, SLOT_BACKTRACE,
        "INSERT INTO cuda_backtraces(process_id, correlation_id, backtrace_id) VALUES(?,?,?)",
        IMPORT_VALUES(IMPORT_INT(b.correlation), IMPORT_INT(stack)));
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

