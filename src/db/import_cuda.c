/* The importer's CUDA part: trace records 40-79 (written by src/agent/cupti*.c) into the
 * kernels, memcpys, memsets, cuda_api, cuda_syncs, cuda_memory, gpus, ... tables; then, once
 * all files are in, correlation (api_id), NVTX attribution and gpu_id (import_cuda_finish). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "db/import.h"
#include "trace/format.h"

enum {
    SLOT_KERNEL = IMPORT_SLOT_CUDA,
    SLOT_MEMCPY,
    SLOT_MEMSET,
    SLOT_API,
    SLOT_SYNC,
    SLOT_MEMORY,
    SLOT_GPU,
    SLOT_GPU_ID,
    SLOT_PROCESS_GPU,
    SLOT_CONTEXT,
    SLOT_STREAM,
    SLOT_STREAM_HANDLE,
    SLOT_OVERHEAD,
    SLOT_REJECTED,
    SLOT_CAPTURE,
    SLOT_CONTEXT_HANDLE,
    SLOT_RESOURCE_NAME,
    SLOT_BACKTRACE,
};

/* ---- names of the trace's enumerations (format.h) -------------------------------------- */

static const char *const copy_kind_names[] = {
    NULL, "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};
static const char *const mem_kind_names[] = {
    NULL, "pageable", "pinned", "device", "array", "managed", "device_static", "managed_static",
};
static const char *const sync_kind_names[] = {
    NULL, "event", "stream_wait_event", "stream", "context",
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

/* ---- binding helpers ------------------------------------------------------------------- */

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *text)
{
    if (text)
        sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

/* 0 means "none" for graph ids, string ids and the like. */
static void bind_nonzero(sqlite3_stmt *s, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_bytes_or_null(sqlite3_stmt *s, int i, const uint8_t *bytes, size_t len)
{
    if (len)
        sqlite3_bind_text(s, i, (const char *)bytes, (int)len, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static int step_done(struct import_file *f, sqlite3_stmt *s)
{
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    import_warn(f, "CUDA import: %s", sqlite3_errmsg(import_db(f)));
    return -1;
}

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
        return -1;
    bind_gpu_op_header(f, s, in);
    int64_t name = import_string(f, trace_get_u(in));
    int64_t demangled = import_string(f, trace_get_u(in));
    int64_t rest[16];
    get_u_array(in, rest, 16);
    bind_nonzero(s, 8, name);
    bind_nonzero(s, 9, demangled);
    for (int i = 0; i < 14; i++) /* grid, block, cluster, registers .. launch type */
        sqlite3_bind_int64(s, 10 + i, rest[i]);
    bind_nonzero(s, 24, rest[14]); /* graph id, graph node id: 0 outside graphs */
    bind_nonzero(s, 25, rest[15]);
    return step_done(f, s);
}

static int import_memcpy(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMCPY,
        "INSERT INTO memcpys(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async, src_device, dst_device, graph_node_id)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -1;
    bind_gpu_op_header(f, s, in);
    int64_t v[8];
    get_u_array(in, v, 8);
    bind_text_or_null(s, 8, NAME_OF(copy_kind_names, (uint64_t)v[0]));
    sqlite3_bind_int64(s, 9, v[1]);
    bind_text_or_null(s, 10, NAME_OF(mem_kind_names, (uint64_t)v[2]));
    bind_text_or_null(s, 11, NAME_OF(mem_kind_names, (uint64_t)v[3]));
    sqlite3_bind_int64(s, 12, v[4]);
    sqlite3_bind_int64(s, 13, v[5]);
    sqlite3_bind_int64(s, 14, v[6]);
    bind_nonzero(s, 15, v[7]);
    return step_done(f, s);
}

static int import_memset(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMSET,
        "INSERT INTO memsets(process_id, device, context, stream, correlation_id, start_ns, end_ns,"
        " bytes, value, mem_kind, is_async, graph_node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -1;
    bind_gpu_op_header(f, s, in);
    int64_t v[5];
    get_u_array(in, v, 5);
    sqlite3_bind_int64(s, 8, v[0]);
    sqlite3_bind_int64(s, 9, v[1]);
    bind_text_or_null(s, 10, NAME_OF(mem_kind_names, (uint64_t)v[2]));
    sqlite3_bind_int64(s, 11, v[3]);
    bind_nonzero(s, 12, v[4]);
    return step_done(f, s);
}

static int import_api(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_API,
        "INSERT INTO cuda_api(process_id, thread_id, api, cbid, name_id, start_ns, end_ns,"
        " return_code, correlation_id) VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -1;
    int64_t thread = import_thread_by_tid(f, trace_get_u(in));
    int64_t api = (int64_t)trace_get_u(in), cbid = (int64_t)trace_get_u(in);
    int64_t name = import_string(f, trace_get_u(in));
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    int64_t rc = (int64_t)trace_get_u(in), correlation = (int64_t)trace_get_u(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, thread);
    sqlite3_bind_int64(s, 3, api);
    sqlite3_bind_int64(s, 4, cbid);
    bind_nonzero(s, 5, name);
    sqlite3_bind_int64(s, 6, (int64_t)start);
    sqlite3_bind_int64(s, 7, (int64_t)end);
    sqlite3_bind_int64(s, 8, rc);
    sqlite3_bind_int64(s, 9, correlation);
    return step_done(f, s);
}

static int import_sync(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_SYNC,
        "INSERT INTO cuda_syncs(process_id, sync_kind, context, stream, event, correlation_id,"
        " start_ns, end_ns) VALUES(?,?,?,?,?,?,?,?)");
    if (!s)
        return -1;
    int64_t v[5];
    get_u_array(in, v, 5);
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    bind_text_or_null(s, 2, NAME_OF(sync_kind_names, (uint64_t)v[0]));
    sqlite3_bind_int64(s, 3, v[1]);
    if (v[2]) /* stream and event are stored + 1 in the trace, 0 meaning none */
        sqlite3_bind_int64(s, 4, v[2] - 1);
    if (v[3])
        sqlite3_bind_int64(s, 5, v[3] - 1);
    sqlite3_bind_int64(s, 6, v[4]);
    sqlite3_bind_int64(s, 7, (int64_t)start);
    sqlite3_bind_int64(s, 8, (int64_t)end);
    return step_done(f, s);
}

static int import_memory(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_MEMORY,
        "INSERT INTO cuda_memory(process_id, device, op, mem_kind, address, bytes, ts_ns, stream,"
        " correlation_id) VALUES(?,?,?,?,?,?,?,?,?)");
    if (!s)
        return -1;
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
    bind_text_or_null(s, 4, NAME_OF(mem_kind_names, (uint64_t)v[1]));
    sqlite3_bind_int64(s, 5, v[5]);
    sqlite3_bind_int64(s, 6, v[6]);
    sqlite3_bind_int64(s, 7, (int64_t)ts);
    sqlite3_bind_int64(s, 8, v[4]);
    sqlite3_bind_int64(s, 9, correlation);
    return step_done(f, s);
}

/* Dense FLOP per clock per SM (an FMA counts 2) by compute capability, from NVIDIA's
 * architecture whitepapers (docs/schema.md, "gpus"); 0 where unknown or unsupported. The
 * peaks use the maximum SM clock CUDA reports. */
struct gpu_rates {
    unsigned cc, fp32, fp16, bf16, tf32, fp64;
};
static const struct gpu_rates gpu_rate_table[] = {
    {70, 128, 1024, 0, 0, 64},         /* V100 */
    {75, 128, 1024, 0, 0, 4},          /* T4, RTX 20 */
    {80, 128, 2048, 2048, 1024, 128},  /* A100 (FP64 through the tensor cores) */
    {86, 256, 1024, 1024, 512, 4},     /* A10, A40, RTX 30 */
    {89, 256, 1024, 1024, 512, 4},     /* L4, L40, RTX 40 */
    {90, 256, 4096, 4096, 2048, 256},  /* H100, H200 (FP64 through the tensor cores) */
    {100, 256, 8192, 8192, 4096, 128}, /* B200 */
};

static const struct gpu_rates *gpu_rates_of(unsigned major, unsigned minor)
{
    for (size_t i = 0; i < sizeof(gpu_rate_table) / sizeof(gpu_rate_table[0]); i++)
        if (gpu_rate_table[i].cc == major * 10 + minor)
            return &gpu_rate_table[i];
    return NULL;
}

static void bind_peak(sqlite3_stmt *s, int i, unsigned per_clock_per_sm, int64_t sm_count,
                      int64_t clock_khz)
{
    if (per_clock_per_sm && sm_count && clock_khz)
        sqlite3_bind_double(s, i,
                            (double)per_clock_per_sm * (double)sm_count * (double)clock_khz * 1e3);
    else
        sqlite3_bind_null(s, i);
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
        return -1;
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
    bind_bytes_or_null(s, 1, uuid, uuid_len);
    bind_bytes_or_null(s, 2, name, name_len);
    bind_bytes_or_null(s, 3, pci, pci_len);
    sqlite3_bind_int64(s, 4, v[0]); /* compute capability: minor 0 is a real value */
    sqlite3_bind_int64(s, 5, v[1]);
    for (int i = 2; i < 14; i++) /* SM count .. smem per block opt-in: 0 means unknown */
        bind_nonzero(s, 4 + i, v[i]);
    const struct gpu_rates *r = gpu_rates_of((unsigned)v[0], (unsigned)v[1]);
    struct gpu_rates none = {0};
    if (!r)
        r = &none;
    bind_peak(s, 18, r->fp32, v[2], v[4]);
    bind_peak(s, 19, r->fp16, v[2], v[4]);
    bind_peak(s, 20, r->bf16, v[2], v[4]);
    bind_peak(s, 21, r->tf32, v[2], v[4]);
    bind_peak(s, 22, r->fp64, v[2], v[4]);
    /* CUPTI's bandwidth when given, else double data rate over the bus. */
    double dram = v[14] ? (double)v[14] : 2.0 * (double)v[5] * 1e3 * (double)v[6] / 8.0;
    if (dram > 0)
        sqlite3_bind_double(s, 23, dram);
    if (step_done(f, s) < 0)
        return -1;

    sqlite3_stmt *link =
        import_stmt(f, SLOT_PROCESS_GPU,
                    "INSERT OR REPLACE INTO process_gpus(process_id, device, gpu_id)"
                    " SELECT ?, ?, id FROM gpus WHERE uuid = ?");
    if (!link)
        return -1;
    sqlite3_bind_int64(link, 1, import_process(f));
    sqlite3_bind_int64(link, 2, device);
    bind_bytes_or_null(link, 3, uuid, uuid_len);
    return step_done(f, link);
}

static int import_context(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_CONTEXT,
        "INSERT INTO cuda_contexts(process_id, context, device, null_stream) VALUES(?,?,?,?)");
    if (!s)
        return -1;
    int64_t v[3];
    get_u_array(in, v, 3);
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(s, 2 + i, v[i]);
    return step_done(f, s);
}

static int import_stream(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_STREAM,
                    "INSERT INTO cuda_streams(process_id, context, stream, priority, is_default)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -1;
    int64_t v[4];
    get_u_array(in, v, 4);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, v[0]);
    sqlite3_bind_int64(s, 3, v[1]);
    sqlite3_bind_int64(s, 4, (int32_t)v[2]); /* CUDA priorities are small negative ints */
    sqlite3_bind_int64(s, 5, v[3] == TRACE_CUDA_STREAM_NULL);
    return step_done(f, s);
}

static int import_stream_handle(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_STREAM_HANDLE,
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES(?,?,?,?)");
    if (!s)
        return -1;
    int64_t v[3];
    get_u_array(in, v, 3);
    sqlite3_bind_int64(s, 1, import_process(f));
    for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(s, 2 + i, v[i]);
    return step_done(f, s);
}

static int import_context_handle(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_CONTEXT_HANDLE,
                    "INSERT INTO cuda_context_handles(process_id, handle, context) VALUES(?,?,?)");
    if (!s)
        return -1;
    int64_t v[2];
    get_u_array(in, v, 2);
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, v[0]);
    sqlite3_bind_int64(s, 3, v[1]);
    return step_done(f, s);
}

/* NVTX names of CUDA streams and contexts (nvtxNameCuStreamA, nvtxNameCudaStreamA, ...),
 * kept with their handle until import_cuda_finish joins them to CUPTI's ids. */
int import_cuda_resource_name(struct import_file *f, struct trace_fields *in)
{
    uint64_t kind = trace_get_u(in), handle = trace_get_u(in);
    int64_t name = import_string(f, trace_get_u(in));
    if (kind < TRACE_RESOURCE_CU_DEVICE || kind > TRACE_RESOURCE_CUDART_EVENT || !name)
        return 0;
    sqlite3_stmt *s = import_stmt(
        f, SLOT_RESOURCE_NAME,
        "INSERT INTO cuda_resource_names(process_id, kind, handle, name_id) VALUES(?,?,?,?)");
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, (int64_t)kind);
    sqlite3_bind_int64(s, 3, (int64_t)handle);
    sqlite3_bind_int64(s, 4, name);
    return step_done(f, s);
}

static int import_overhead(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s =
        import_stmt(f, SLOT_OVERHEAD,
                    "INSERT INTO cupti_overhead(process_id, thread_id, kind, start_ns, end_ns)"
                    " VALUES(?,?,?,?,?)");
    if (!s)
        return -1;
    uint64_t kind = trace_get_u(in), os_tid = trace_get_u(in);
    uint64_t start = trace_get_ts(in), end = trace_get_ts(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    if (os_tid)
        sqlite3_bind_int64(s, 2, import_thread_by_tid(f, os_tid));
    sqlite3_bind_text(s, 3, overhead_kind_name(kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)start);
    sqlite3_bind_int64(s, 5, (int64_t)end);
    return step_done(f, s);
}

static int import_rejected(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_REJECTED,
        "UPDATE processes SET cuda_rejected_records = cuda_rejected_records + ? WHERE id = ?");
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, (int64_t)trace_get_u(in));
    sqlite3_bind_int64(s, 2, import_process(f));
    return step_done(f, s);
}

static int import_capture(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_CAPTURE,
        "INSERT OR REPLACE INTO cuda_capture(process_id, mode, from_ns, until_ns) VALUES(?,?,?,?)");
    if (!s)
        return -1;
    const uint8_t *mode;
    size_t mode_len = trace_get_s(in, &mode);
    int64_t from = (int64_t)trace_get_u(in), until = (int64_t)trace_get_u(in);
    sqlite3_bind_int64(s, 1, import_process(f));
    bind_bytes_or_null(s, 2, mode, mode_len);
    bind_nonzero(s, 3, from);
    bind_nonzero(s, 4, until);
    return step_done(f, s);
}

/* The caller of a launch (--python-backtrace): it comes before the call's own record (the
 * agent's ring drains sooner than CUPTI's buffers), so it waits in cuda_backtraces until
 * import_cuda_finish joins it by correlation. */
static int import_backtrace(struct import_file *f, struct trace_fields *in)
{
    sqlite3_stmt *s = import_stmt(
        f, SLOT_BACKTRACE,
        "INSERT INTO cuda_backtraces(process_id, correlation_id, backtrace_id) VALUES(?,?,?)");
    if (!s)
        return -1;
    int64_t correlation = (int64_t)trace_get_u(in);
    int64_t stack = import_string(f, trace_get_u(in));
    if (!stack)
        return 0;
    sqlite3_bind_int64(s, 1, import_process(f));
    sqlite3_bind_int64(s, 2, correlation);
    sqlite3_bind_int64(s, 3, stack);
    return step_done(f, s);
}

int import_cuda_record(struct import_file *f, unsigned type, struct trace_fields *fields)
{
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

/* ---- after all files ------------------------------------------------------------------- */

/* NVTX attribution of API calls: the innermost push/pop range open on the calling thread at
 * the call's start, i.e. the open range that started last. One sweep per thread over ranges
 * and calls sorted by start, with a stack of candidate ranges (ended ones popped lazily),
 * so it stays O(n log n) where a correlated subquery would be quadratic. */
struct open_range {
    int64_t id, end_ns;
    int open_forever;
};

static int attribute_api_calls(sqlite3 *db)
{
    sqlite3_stmt *ranges = NULL, *calls = NULL, *update = NULL;
    struct open_range *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = -1;
    if (sqlite3_prepare_v2(
            db,
            "SELECT start_thread_id, start_ns, id, end_ns FROM ranges WHERE style = 0"
            " ORDER BY start_thread_id, start_ns, id",
            -1, &ranges, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            db, "SELECT thread_id, start_ns, id FROM cuda_api ORDER BY thread_id, start_ns, id", -1,
            &calls, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE cuda_api SET nvtx_range_id = ? WHERE id = ?", -1, &update,
                           NULL) != SQLITE_OK)
        goto fail;

    int have_range = sqlite3_step(ranges) == SQLITE_ROW;
    int64_t thread = -1;
    while (sqlite3_step(calls) == SQLITE_ROW) {
        int64_t call_thread = sqlite3_column_int64(calls, 0);
        int64_t call_start = sqlite3_column_int64(calls, 1);
        if (call_thread != thread) {
            thread = call_thread;
            depth = 0;
            while (have_range && sqlite3_column_int64(ranges, 0) < thread)
                have_range = sqlite3_step(ranges) == SQLITE_ROW;
        }
        /* Push every range of this thread that started at or before the call. */
        while (have_range && sqlite3_column_int64(ranges, 0) == thread &&
               sqlite3_column_int64(ranges, 1) <= call_start) {
            if (depth == cap) {
                size_t new_cap = cap ? cap * 2 : 64;
                struct open_range *grown = realloc(stack, new_cap * sizeof(*stack));
                if (!grown)
                    goto fail;
                stack = grown;
                cap = new_cap;
            }
            stack[depth++] = (struct open_range){sqlite3_column_int64(ranges, 2),
                                                 sqlite3_column_int64(ranges, 3),
                                                 sqlite3_column_type(ranges, 3) == SQLITE_NULL};
            have_range = sqlite3_step(ranges) == SQLITE_ROW;
        }
        while (depth && !stack[depth - 1].open_forever && stack[depth - 1].end_ns <= call_start)
            depth--;
        if (!depth)
            continue;
        sqlite3_bind_int64(update, 1, stack[depth - 1].id);
        sqlite3_bind_int64(update, 2, sqlite3_column_int64(calls, 2));
        if (sqlite3_step(update) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(update);
    }
    rc = 0;
fail:
    free(stack);
    sqlite3_finalize(ranges);
    sqlite3_finalize(calls);
    sqlite3_finalize(update);
    return rc;
}

#define CAPTURE_GPU_DELETE(table)                                                                  \
    "DELETE FROM " table " WHERE process_id IN (SELECT process_id FROM cuda_capture) AND CASE"     \
    "  WHEN api_id IS NOT NULL THEN NOT EXISTS (SELECT 1 FROM cuda_api a WHERE a.id = " table      \
    ".api_id) ELSE NOT EXISTS (SELECT 1 FROM capture_windows w WHERE w.process_id = " table        \
    ".process_id AND " table ".start_ns >= w.start_ns AND " table ".start_ns < w.end_ns) END;\n"

/* Capture ranges (docs/trace-format.md, "Capture range"): the windows of each process that
 * has a cuda_capture row, then every CUDA row outside them deleted (the GPU operations among
 * them counted in meta.cuda_gpu_ops_outside_capture). API calls, syncs, memory
 * events and overheads are kept by their own start; GPU work by its launching call (a kernel
 * launched inside the window is kept even if it runs after it), or by its own start when the
 * call is unknown. Runs after correlation (api_id) and before NVTX attribution. */
static const char cuda_capture_sql[] =
    "CREATE TEMP TABLE capture_windows(process_id INTEGER, start_ns INTEGER, end_ns INTEGER);\n"
    "INSERT INTO capture_windows SELECT a.process_id, a.end_ns, COALESCE((SELECT min(b.start_ns)"
    "  FROM cuda_api b JOIN strings t ON t.id = b.name_id WHERE b.process_id = a.process_id"
    "  AND t.value IN ('cudaProfilerStop', 'cuProfilerStop') AND b.start_ns >= a.end_ns),"
    "  9223372036854775807)"
    "  FROM cuda_api a JOIN strings s ON s.id = a.name_id JOIN cuda_capture c ON"
    "  c.process_id = a.process_id WHERE c.mode = 'cudaProfilerApi'"
    "  AND s.value IN ('cudaProfilerStart', 'cuProfilerStart');\n"
    "INSERT INTO capture_windows SELECT r.process_id, r.start_ns, COALESCE(r.end_ns, "
    "9223372036854775807)"
    "  FROM ranges r JOIN strings s ON s.id = r.name_id JOIN cuda_capture c ON"
    "  c.process_id = r.process_id WHERE c.mode = 'nvtx:' || s.value;\n"
    "INSERT INTO capture_windows SELECT process_id, 0, 9223372036854775807 FROM cuda_capture"
    "  WHERE mode IS NULL OR mode = 'none';\n"
    "UPDATE capture_windows SET"
    "  start_ns = max(start_ns, COALESCE((SELECT from_ns FROM cuda_capture c WHERE c.process_id ="
    "   capture_windows.process_id), 0)),"
    "  end_ns = min(end_ns, COALESCE((SELECT until_ns FROM cuda_capture c WHERE c.process_id ="
    "   capture_windows.process_id), 9223372036854775807));\n"
    "DELETE FROM capture_windows WHERE end_ns <= start_ns;\n"
    "DELETE FROM cuda_api WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT EXISTS"
    "  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_api.process_id"
    "   AND cuda_api.start_ns >= w.start_ns AND cuda_api.start_ns < w.end_ns);\n"
    "DELETE FROM cuda_syncs WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT "
    "EXISTS"
    "  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_syncs.process_id"
    "   AND cuda_syncs.start_ns >= w.start_ns AND cuda_syncs.start_ns < w.end_ns);\n"
    "DELETE FROM cuda_memory WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT "
    "EXISTS"
    "  (SELECT 1 FROM capture_windows w WHERE w.process_id = cuda_memory.process_id"
    "   AND cuda_memory.ts_ns >= w.start_ns AND cuda_memory.ts_ns < w.end_ns);\n"
    "DELETE FROM cupti_overhead WHERE process_id IN (SELECT process_id FROM cuda_capture) AND NOT "
    "EXISTS"
    "  (SELECT 1 FROM capture_windows w WHERE w.process_id = cupti_overhead.process_id"
    "   AND cupti_overhead.start_ns >= w.start_ns AND cupti_overhead.start_ns < "
    "w.end_ns);\n" CAPTURE_GPU_DELETE("kernels") CAPTURE_GPU_DELETE("memcpys")
        CAPTURE_GPU_DELETE("memsets") "DROP TABLE capture_windows;\n";

/* The GPU operations the capture range left out, around cuda_capture_sql: ~0 where the agent
 * paused CUPTI outside the windows (cudaProfilerApi). */
#define GPU_OPS_COUNT                                                                              \
    "(SELECT count(*) FROM kernels) + (SELECT count(*) FROM memcpys) + (SELECT count(*) FROM "     \
    "memsets)"
static const char cuda_capture_count_before_sql[] =
    "CREATE TEMP TABLE capture_gpu_ops AS SELECT " GPU_OPS_COUNT " AS recorded;";
static const char cuda_capture_count_after_sql[] =
    "INSERT OR REPLACE INTO meta(key, value) SELECT 'cuda_gpu_ops_outside_capture', recorded - "
    "(" GPU_OPS_COUNT ") FROM capture_gpu_ops WHERE EXISTS (SELECT 1 FROM cuda_capture);"
    "DROP TABLE capture_gpu_ops;";

/* Correlation: the launching call of each piece of GPU work. */
static const char cuda_correlate_sql[] =
    /* the name src/db/indexes.sql uses: reports look calls up by correlation too */
    "CREATE INDEX IF NOT EXISTS cuda_api_by_corr ON cuda_api(process_id, correlation_id);\n"
    /* Waits from the calls that wait, for a process recorded without CUPTI's
     * SYNCHRONIZATION records (the agent's default, for their cost): kind by name, the
     * runtime call only where the driver call inside it shares its correlation; context,
     * stream and event unknown. */
    "INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, correlation_id, start_ns, end_ns)"
    "  SELECT * FROM (SELECT a.process_id, a.thread_id, CASE"
    "   WHEN s.value LIKE '%StreamWaitEvent%' THEN 'stream_wait_event'"
    "   WHEN s.value LIKE '%EventSynchronize%' THEN 'event'"
    "   WHEN s.value LIKE '%StreamSynchronize%' THEN 'stream'"
    "   WHEN s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cuCtxSynchronize%'"
    "    THEN 'context' END AS kind,"
    "   a.correlation_id, a.start_ns, a.end_ns FROM cuda_api a JOIN strings s ON s.id = a.name_id"
    "  WHERE a.process_id NOT IN (SELECT process_id FROM cuda_syncs)"
    "  AND NOT (a.api = 1 AND EXISTS (SELECT 1 FROM cuda_api r WHERE r.process_id ="
    "   a.process_id AND r.correlation_id = a.correlation_id AND r.api = 0)))"
    "  WHERE kind IS NOT NULL;\n"
    /* The launching call: the runtime call when there is one (the driver call it makes
     * internally shares its correlation id), else the driver call. */
    "UPDATE kernels SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = "
    "kernels.process_id"
    "  AND a.correlation_id = kernels.correlation_id ORDER BY a.api, a.start_ns LIMIT 1);\n"
    "UPDATE memcpys SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = "
    "memcpys.process_id"
    "  AND a.correlation_id = memcpys.correlation_id ORDER BY a.api, a.start_ns LIMIT 1);\n"
    "UPDATE memsets SET api_id = (SELECT a.id FROM cuda_api a WHERE a.process_id = "
    "memsets.process_id"
    "  AND a.correlation_id = memsets.correlation_id ORDER BY a.api, a.start_ns LIMIT 1);\n"
    /* Every call with the launch's correlation (runtime and the driver call inside it). */
    "CREATE INDEX IF NOT EXISTS cuda_backtraces_correlation ON"
    "  cuda_backtraces(process_id, correlation_id);\n"
    "UPDATE cuda_api SET backtrace_id = (SELECT b.backtrace_id FROM cuda_backtraces b WHERE"
    "  b.process_id = cuda_api.process_id AND b.correlation_id = cuda_api.correlation_id)"
    "  WHERE EXISTS (SELECT 1 FROM cuda_backtraces b WHERE b.process_id = cuda_api.process_id"
    "  AND b.correlation_id = cuda_api.correlation_id);\n";

/* After the NVTX sweep: attribution of GPU work, GPUs, streams. Each statement idempotent. */
/* GPU work's NVTX range (its launching call's) and GPU (CUDA ordinal of the process ->
 * gpus.id), in one pass over the table. */
#define CUDA_FINISH_GPU_OP(table)                                                                  \
    "UPDATE " table " SET nvtx_range_id = (SELECT nvtx_range_id FROM cuda_api WHERE id = " table   \
    ".api_id), gpu_id = (SELECT gpu_id FROM process_gpus p WHERE p.process_id = " table            \
    ".process_id AND p.device = " table ".device);\n"
static const char cuda_finish_sql[] =
    CUDA_FINISH_GPU_OP("kernels") CUDA_FINISH_GPU_OP("memcpys") CUDA_FINISH_GPU_OP(
        "memsets") "UPDATE cuda_syncs SET thread_id = (SELECT a.thread_id FROM cuda_api a WHERE"
                   "  a.process_id = cuda_syncs.process_id AND a.correlation_id = "
                   "cuda_syncs.correlation_id"
                   "  ORDER BY a.api LIMIT 1) WHERE thread_id IS NULL;\n"
                   "UPDATE cuda_memory SET gpu_id = (SELECT gpu_id FROM process_gpus p WHERE"
                   "  p.process_id = cuda_memory.process_id AND p.device = cuda_memory.device);\n"
                   "UPDATE cuda_contexts SET gpu_id = (SELECT gpu_id FROM process_gpus p WHERE"
                   "  p.process_id = cuda_contexts.process_id AND p.device = "
                   "cuda_contexts.device);\n"
                   /* Streams CUPTI never described (the NULL stream, streams created before
                    * tracing): one row for every stream that did work. */
                   "INSERT INTO cuda_streams(process_id, context, stream, is_default)"
                   "  SELECT DISTINCT u.process_id, u.context, u.stream, u.stream = c.null_stream "
                   "FROM"
                   "  (SELECT process_id, context, stream FROM kernels UNION SELECT process_id, "
                   "context, stream"
                   "   FROM memcpys UNION SELECT process_id, context, stream FROM memsets) u"
                   "  LEFT JOIN cuda_contexts c ON c.process_id = u.process_id AND c.context = "
                   "u.context"
                   "  WHERE NOT EXISTS (SELECT 1 FROM cuda_streams s WHERE s.process_id = "
                   "u.process_id"
                   "   AND s.context = u.context AND s.stream = u.stream);\n"
                   "UPDATE cuda_streams SET gpu_id = (SELECT gpu_id FROM cuda_contexts c WHERE"
                   "  c.process_id = cuda_streams.process_id AND c.context = cuda_streams.context),"
                   "  handle = (SELECT h.handle FROM cuda_stream_handles h WHERE h.process_id ="
                   "  cuda_streams.process_id AND h.context = cuda_streams.context AND h.stream ="
                   "  cuda_streams.stream);\n"
                   "UPDATE cuda_contexts SET handle = (SELECT h.handle FROM cuda_context_handles h "
                   "WHERE"
                   "  h.process_id = cuda_contexts.process_id AND h.context = "
                   "cuda_contexts.context);\n"
                   /* NVTX names: the latest name given to the handle (kinds 3, 6 streams; 2
                      contexts). */
                   "UPDATE cuda_streams SET name_id = (SELECT n.name_id FROM cuda_resource_names n "
                   "WHERE"
                   "  n.process_id = cuda_streams.process_id AND n.kind IN (3, 6) AND n.handle ="
                   "  cuda_streams.handle ORDER BY n.rowid DESC LIMIT 1) WHERE handle IS NOT "
                   "NULL;\n"
                   "UPDATE cuda_contexts SET name_id = (SELECT n.name_id FROM cuda_resource_names "
                   "n WHERE"
                   "  n.process_id = cuda_contexts.process_id AND n.kind = 2 AND n.handle ="
                   "  cuda_contexts.handle ORDER BY n.rowid DESC LIMIT 1) WHERE handle IS NOT "
                   "NULL;\n";

/* Kernel names are recorded mangled (the agent does no C++ work inside the profiled
 * process); here each distinct name is demangled once with the C++ runtime's
 * __cxa_demangle, found at run time so the importer stays plain C. Without a C++ runtime
 * the names stay mangled (demangled_id NULL). */
typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static cxa_demangle_fn find_demangler(void)
{
    void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!fn) {
        void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        fn = cxx ? dlsym(cxx, "__cxa_demangle") : NULL;
    }
    cxa_demangle_fn demangle;
    memcpy(&demangle, &fn, sizeof(demangle));
    return demangle;
}

static int demangle_kernel_names(sqlite3 *db)
{
    cxa_demangle_fn demangle = find_demangler();
    sqlite3_stmt *names = NULL, *add_string = NULL, *add_pair = NULL;
    int rc = -1;
    if (!demangle)
        return 0;
    if (sqlite3_exec(
            db,
            "CREATE TEMP TABLE demangled(name_id INTEGER PRIMARY KEY, demangled_id INTEGER);"
            "INSERT INTO demangled(name_id) SELECT DISTINCT name_id FROM kernels"
            " WHERE demangled_id IS NULL AND name_id IS NOT NULL",
            NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            db,
            "SELECT d.name_id, s.value FROM demangled d JOIN strings s ON s.id = d.name_id"
            " WHERE s.value LIKE '\\_Z%' ESCAPE '\\'",
            -1, &names, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO strings(value) VALUES(?)", -1, &add_string, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE demangled SET demangled_id = ? WHERE name_id = ?", -1,
                           &add_pair, NULL) != SQLITE_OK)
        goto fail;
    while (sqlite3_step(names) == SQLITE_ROW) {
        int status = -1;
        char *text = demangle((const char *)sqlite3_column_text(names, 1), NULL, NULL, &status);
        if (status == 0 && text) {
            sqlite3_bind_text(add_string, 1, text, -1, SQLITE_TRANSIENT);
            int ok = sqlite3_step(add_string) == SQLITE_DONE;
            sqlite3_reset(add_string);
            sqlite3_bind_int64(add_pair, 1, sqlite3_last_insert_rowid(db));
            sqlite3_bind_int64(add_pair, 2, sqlite3_column_int64(names, 0));
            ok = ok && sqlite3_step(add_pair) == SQLITE_DONE;
            sqlite3_reset(add_pair);
            if (!ok) {
                free(text);
                goto fail;
            }
        }
        free(text);
    }
    rc = sqlite3_exec(db,
                      "UPDATE kernels SET demangled_id = (SELECT d.demangled_id FROM demangled d"
                      " WHERE d.name_id = kernels.name_id) WHERE demangled_id IS NULL;"
                      "DROP TABLE demangled",
                      NULL, NULL, NULL) == SQLITE_OK
             ? 0
             : -1;
fail:
    sqlite3_finalize(names);
    sqlite3_finalize(add_string);
    sqlite3_finalize(add_pair);
    return rc;
}

int import_cuda_finish(sqlite3 *db)
{
    if (sqlite3_exec(db, cuda_correlate_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, cuda_capture_count_before_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, cuda_capture_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, cuda_capture_count_after_sql, NULL, NULL, NULL) != SQLITE_OK ||
        attribute_api_calls(db) < 0 || demangle_kernel_names(db) < 0)
        return -1;
    return sqlite3_exec(db, cuda_finish_sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}
