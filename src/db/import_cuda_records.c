/* The CUDA source's importer, records part: trace records 40-79 (written by src/agent/cupti*.c)
 * into kernels, memcpys, memsets, cuda_api, cuda_syncs, cuda_memory, gpus, ... (one function
 * per record type); import_cuda.c holds the source's row and its end-of-session work. */
#include "common/gpu_peaks.h"
#include "db/import_cuda_records.h"
#include "trace/format.h"

#include <errno.h>

enum {
    SLOT_KERNEL,
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


/* ---- reading fields ---------------------------------------------------------------------- */


/* Reads n unsigned fields into out[]; absent trailing fields read as 0. */
static void get_u_array(struct trace_fields *fields, int64_t *out, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (int64_t)trace_get_u(fields);
}

/* Binds columns 1-7 shared by kernels, memcpys and memsets (process, device, context, stream,
 * correlation, start, end) from the record's leading fields (format.h). */
static void bind_gpu_op_header(struct import_file *f, sqlite3_stmt *s, struct trace_fields *in)
{
    int64_t ids[4];
    get_u_array(in, ids, 4);
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < 4; i++)
        sqlite3_bind_int64(s, 2 + i, ids[i]);
    sqlite3_bind_int64(s, 6, (int64_t)start);
    sqlite3_bind_int64(s, 7, (int64_t)end);
}

/* ---- one function per record type ------------------------------------------------------ */

static int import_kernel(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_KERNEL,
        "INSERT INTO kernels(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " name_id, demangled_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
        " cluster_x, cluster_y, cluster_z, regs_per_thread, static_smem, dynamic_smem,"
        " local_mem_per_thread, launch_type, graph_id, graph_node_id)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    bind_gpu_op_header(f, s, in);
    int64_t name = import_string(f, trace_get_u(in));
    int64_t demangled = import_string(f, trace_get_u(in));
    int64_t rest[16];
    get_u_array(in, rest, 16);
    import_bind_nonzero(s, 8, name);
    import_bind_nonzero(s, 9, demangled);
    for (int i = 0; i < 14; i++) /* grid, block, cluster, registers .. launch type */
        sqlite3_bind_int64(s, 10 + i, rest[i]);
    import_bind_nonzero(s, 24, rest[14]); /* graph id, graph node id: 0 outside graphs */
    import_bind_nonzero(s, 25, rest[15]);
    return import_step(f, s, STEP_WARNING);
}

static int import_memcpy(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMCPY,
        "INSERT INTO memcpys(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async, src_device, dst_device, graph_node_id)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    bind_gpu_op_header(f, s, in);
    int64_t v[8];
    get_u_array(in, v, 8);
    import_bind_text(s, 8, NAME_OF(copy_kind_names, (uint64_t)v[0]));
    sqlite3_bind_int64(s, 9, v[1]);
    import_bind_text(s, 10, NAME_OF(mem_kind_names, (uint64_t)v[2]));
    import_bind_text(s, 11, NAME_OF(mem_kind_names, (uint64_t)v[3]));
    sqlite3_bind_int64(s, 12, v[4]);
    sqlite3_bind_int64(s, 13, v[5]);
    sqlite3_bind_int64(s, 14, v[6]);
    import_bind_nonzero(s, 15, v[7]);
    return import_step(f, s, STEP_WARNING);
}

static int import_memset(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMSET,
        "INSERT INTO memsets(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " bytes, value, mem_kind, is_async, graph_node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    bind_gpu_op_header(f, s, in);
    int64_t v[5];
    get_u_array(in, v, 5);
    sqlite3_bind_int64(s, 8, v[0]);
    sqlite3_bind_int64(s, 9, v[1]);
    import_bind_text(s, 10, NAME_OF(mem_kind_names, (uint64_t)v[2]));
    sqlite3_bind_int64(s, 11, v[3]);
    import_bind_nonzero(s, 12, v[4]);
    return import_step(f, s, STEP_WARNING);
}

static int import_api(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_API,
        "INSERT INTO cuda_api(process_id, thread_id, api, cbid, name_id, start_ns, end_ns,"
        " return_code, correlation_id) VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t thread = import_thread_by_tid(f, trace_get_u(in));
    int64_t api = (int64_t)trace_get_u(in), cbid = (int64_t)trace_get_u(in);
    int64_t name = import_string(f, trace_get_u(in));
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    int64_t rc = (int64_t)trace_get_u(in), correlation = (int64_t)trace_get_u(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, thread);
    sqlite3_bind_int64(s, 3, api);
    sqlite3_bind_int64(s, 4, cbid);
    import_bind_nonzero(s, 5, name);
    sqlite3_bind_int64(s, 6, (int64_t)start);
    sqlite3_bind_int64(s, 7, (int64_t)end);
    sqlite3_bind_int64(s, 8, rc);
    sqlite3_bind_int64(s, 9, correlation);
    return import_step(f, s, STEP_WARNING);
}

static int import_sync(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_SYNC,
        "INSERT INTO cuda_syncs(process_id, sync_kind, context, stream, event, correlation_id,"
        " start_ns, end_ns) VALUES(?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[5];
    get_u_array(in, v, 5);
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    import_bind_text(s, 2, NAME_OF(import_cuda_sync_kind_names, (uint64_t)v[0]));
    sqlite3_bind_int64(s, 3, v[1]);
    if (v[2]) /* stream and event are stored + 1 in the trace, 0 meaning none */
        sqlite3_bind_int64(s, 4, v[2] - 1);
    if (v[3])
        sqlite3_bind_int64(s, 5, v[3] - 1);
    sqlite3_bind_int64(s, 6, v[4]);
    sqlite3_bind_int64(s, 7, (int64_t)start);
    sqlite3_bind_int64(s, 8, (int64_t)end);
    return import_step(f, s, STEP_WARNING);
}

static int import_memory(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMORY,
        "INSERT INTO cuda_memory(process_id, device, op, mem_kind, address, bytes, ts_ns, stream,"
        " correlation_id) VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[7];
    get_u_array(in, v, 7); /* op, mem kind, device, context, stream, address, bytes */
    uint64_t ts = trace_get_ts(in);
    int64_t correlation = (int64_t)trace_get_u(in);
    const char *op = v[0] == 1 ? "alloc" : v[0] == 2 ? "free" : NULL;
    if (!op)
        return 0; /* CUPTI's "invalid" operation: nothing to show */
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, v[2]);
    sqlite3_bind_text(s, 3, op, -1, SQLITE_STATIC);
    import_bind_text(s, 4, NAME_OF(mem_kind_names, (uint64_t)v[1]));
    sqlite3_bind_int64(s, 5, v[5]);
    sqlite3_bind_int64(s, 6, v[6]);
    sqlite3_bind_int64(s, 7, (int64_t)ts);
    sqlite3_bind_int64(s, 8, v[4]);
    sqlite3_bind_int64(s, 9, correlation);
    return import_step(f, s, STEP_WARNING);
}

/* gpus.id of a uuid, inserting the GPU if new (merged by uuid across processes). */
static int import_device(struct import_file *f, struct trace_fields *in)
{
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
    int64_t device = (int64_t)trace_get_u(in);
    const uint8_t *name, *uuid, *pci;
    size_t name_len = trace_get_s(in, &name);
    size_t uuid_len = trace_get_s(in, &uuid);
    size_t pci_len = trace_get_s(in, &pci);
    int64_t v[15];
    get_u_array(in, v, 15);
    if (!uuid_len) {
        import_warn(f, "CUDA device %lld has no UUID; not imported", (long long)device);
        return 0;
    }
    import_bind_bytes(s, 1, uuid, uuid_len);
    import_bind_bytes(s, 2, name, name_len);
    import_bind_bytes(s, 3, pci, pci_len);
    sqlite3_bind_int64(s, 4, v[0]); /* compute capability: minor 0 is a real value */
    sqlite3_bind_int64(s, 5, v[1]);
    for (int i = 2; i < 14; i++) /* SM count .. smem per block opt-in: 0 means unknown */
        import_bind_nonzero(s, 4 + i, v[i]);
    /* the theoretical peaks (gpu_peaks.h): the reports compute them again from the row */
    struct gpu_peaks peaks;
    gpu_peaks_flops(v[0], v[1], v[2], v[4], &peaks);
    const double flops[] = {peaks.fp32, peaks.fp16, peaks.bf16, peaks.tf32, peaks.fp64};
    for (int i = 0; i < 5; i++)
        if (flops[i] != 0)
            sqlite3_bind_double(s, 18 + i, flops[i]);
    double dram = gpu_peak_dram_bytes_per_s(v[14], v[5], v[6]);
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
    sqlite3_bind_int64(link, 2, device);
    import_bind_bytes(link, 3, uuid, uuid_len);
    return import_step(f, link, STEP_WARNING);
}

static int import_context(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_CONTEXT,
        "INSERT INTO cuda_contexts(process_id, context, device, null_stream) VALUES(?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[3];
    get_u_array(in, v, 3);
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(s, 2 + i, v[i]);
    return import_step(f, s, STEP_WARNING);
}

static int import_stream(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_STREAM,
                    "INSERT INTO cuda_streams(process_id, context, stream, priority, is_default)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[4];
    get_u_array(in, v, 4);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, v[0]);
    sqlite3_bind_int64(s, 3, v[1]);
    sqlite3_bind_int64(s, 4, (int32_t)v[2]); /* CUDA priorities are small negative ints */
    sqlite3_bind_int64(s, 5, v[3] == TRACE_CUDA_STREAM_NULL);
    return import_step(f, s, STEP_WARNING);
}

static int import_stream_handle(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_STREAM_HANDLE,
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES(?,?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[3];
    get_u_array(in, v, 3);
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(s, 2 + i, v[i]);
    return import_step(f, s, STEP_WARNING);
}

static int import_context_handle(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_CONTEXT_HANDLE,
                    "INSERT INTO cuda_context_handles(process_id, handle, context) VALUES(?,?,?)");
    if (!s)
        return -EIO;
    int64_t v[2];
    get_u_array(in, v, 2);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, v[0]);
    sqlite3_bind_int64(s, 3, v[1]);
    return import_step(f, s, STEP_WARNING);
}

static int import_overhead(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_OVERHEAD,
                    "INSERT INTO cupti_overhead(process_id, thread_id, kind, start_ns, end_ns)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -EIO;
    uint64_t kind = trace_get_u(in), os_tid = trace_get_u(in);
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    if (os_tid)
        sqlite3_bind_int64(s, 2, import_thread_by_tid(f, os_tid));
    sqlite3_bind_text(s, 3, overhead_kind_name(kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)start);
    sqlite3_bind_int64(s, 5, (int64_t)end);
    return import_step(f, s, STEP_WARNING);
}

static int import_rejected(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_REJECTED,
        "UPDATE processes SET cuda_rejected_records = cuda_rejected_records + ? WHERE id = ?");
    if (!s)
        return -EIO;
    sqlite3_bind_int64(s, 1, (int64_t)trace_get_u(in));
    sqlite3_bind_int64(s, 2, import_process(f));
    return import_step(f, s, STEP_WARNING);
}

static int import_capture(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_CAPTURE,
        "INSERT OR REPLACE INTO cuda_capture(process_id, mode, from_ns, until_ns) VALUES(?,?,?,?)");
    if (!s)
        return -EIO;
    const uint8_t *mode;
    size_t mode_len = trace_get_s(in, &mode);
    int64_t from = (int64_t)trace_get_u(in), until = (int64_t)trace_get_u(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    import_bind_bytes(s, 2, mode, mode_len);
    import_bind_nonzero(s, 3, from);
    import_bind_nonzero(s, 4, until);
    return import_step(f, s, STEP_WARNING);
}

/* The caller of a launch (--python-backtrace): it comes before the call's own record (the
 * agent's ring drains sooner than CUPTI's buffers), so it waits in cuda_backtraces until
 * cuda_correlate.sql joins it by correlation. */
static int import_backtrace(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_BACKTRACE,
        "INSERT INTO cuda_backtraces(process_id, correlation_id, backtrace_id) VALUES(?,?,?)");
    if (!s)
        return -EIO;
    int64_t correlation = (int64_t)trace_get_u(in);
    int64_t stack = import_string(f, trace_get_u(in));
    if (!stack)
        return 0;
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, correlation);
    sqlite3_bind_int64(s, 3, stack);
    return import_step(f, s, STEP_WARNING);
}

int import_cuda_record(void *ctx, unsigned type, struct trace_fields *fields)
{
    struct import_file *f = ctx;
    switch (type) {
    case TRACE_CUDA_KERNEL:
        return import_kernel(f, fields);
    case TRACE_CUDA_MEMCPY:
        return import_memcpy(f, fields);
    case TRACE_CUDA_MEMSET:
        return import_memset(f, fields);
    case TRACE_CUDA_API:
        return import_api(f, fields);
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

