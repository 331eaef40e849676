/* CUDA capture without a GPU: CUPTI activity records built here go through the agent's
 * translator (src/agent/cupti_translate.c) into a raw trace file, then through the real
 * importer; the tests check the exact rows, NVTX attribution and the API allow-list. */
#include <sqlite3.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cupti_translate.h"
#include "db/import.h"
#include "harness.h"
#include "trace/format.h"
#include "trace/records.h"

/* ---- a stand-in for the agent's writer: one chunk in memory, strings interned ---------- */

static uint8_t chunk_buf[1 << 20];
static struct trace_chunk_builder chunk;
static char *strings[256];
static uint64_t string_count;

static uint64_t fake_intern(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    for (uint64_t i = 0; i < string_count; i++)
        if (strlen(strings[i]) == len && memcmp(strings[i], s, len) == 0)
            return i + 1;
    strings[string_count] = strndup(s, len);
    uint64_t id = ++string_count;
    trace_put_string(&chunk, &(struct trace_string){.id = id, .bytes = trace_bytes(s, len)});
    return id;
}

/* Names as cuptiGetCallbackName gives them for the cbids used below. */
static const char *fake_api_name(void *ctx, int driver, uint32_t cbid)
{
    (void)ctx;
    if (driver)
        return cbid == 307 ? "cuLaunchKernel" : cbid == 252 ? "cuStreamSynchronize" : NULL;
    switch (cbid) {
    case 211:
        return "cudaLaunchKernel_v7000";
    case 31:
        return "cudaMemcpy_v3020";
    case 41:
        return "cudaMemcpyAsync_v3020";
    case 17:
        return "cudaGetDevice_v3020";
    case 131:
        return "cudaStreamSynchronize_v3020";
    case 147:
        return "cudaStreamWaitEvent_v3020";
    case 165:
        return "cudaDeviceSynchronize_v3020";
    case 171:
        return "cudaProfilerStart_v4000";
    case 172:
        return "cudaProfilerStop_v4000";
    default:
        return NULL;
    }
}

/* H100 SXM as cuDeviceGetAttribute reports it. */
static int64_t fake_device_attribute(void *ctx, uint32_t device, int attribute)
{
    (void)ctx;
    (void)device;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return 0x19;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        return 5120;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        return 232448;
    default:
        return -1;
    }
}

static struct cupti_translate translator;

/* The tids thread_seen was called with, in order. */
static uint32_t seen_tids[16];
static int seen_count;
static void fake_thread_seen(void *ctx, uint32_t os_tid)
{
    (void)ctx;
    if (seen_count < 16)
        seen_tids[seen_count++] = os_tid;
}

static void begin(int all_apis)
{
    for (uint64_t i = 0; i < string_count; i++)
        free(strings[i]);
    string_count = 0;
    trace_chunk_begin(&chunk, chunk_buf, sizeof(chunk_buf), 1000);
    struct cupti_translate_hooks hooks = {fake_intern, fake_api_name, fake_device_attribute,
                                          fake_thread_seen, NULL};
    seen_count = 0;
    cupti_translate_release(&translator);
    cupti_translate_init(&translator, &hooks, all_apis);
    /* The process and its main thread (tid 4242), as the agent's writer starts a file. */
    struct trace_process process = {.pid = 4242,
                                    .ppid = 1,
                                    .start = 1000,
                                    .exe = trace_cstr("app"),
                                    .cmdline = trace_cstr("app"),
                                    .host = trace_cstr("host"),
                                    .agent_flags = TRACE_FLAG_NVTX | TRACE_FLAG_CUDA,
                                    .lantern_version = trace_cstr("test")};
    ASSERT_EQ(trace_put_process(&chunk, &process), 0);
    struct trace_thread thread = {.thread_idx = 1, .os_tid = 4242, .first_seen = 1000};
    ASSERT_EQ(trace_put_thread(&chunk, &thread), 0);
}

static int translate(const void *record)
{
    return cupti_translate_record(&translator, &chunk, (const CUpti_Activity *)record);
}

/* NVTX push/pop on thread 1 (records of the agent's NVTX module). */
static void nvtx_push(uint64_t ts, const char *name, uint64_t depth)
{
    uint64_t id = fake_intern(NULL, name, strlen(name));
    struct trace_push r = {.thread_idx = 1, .ts = ts, .domain = 0, .depth = depth, .name = id};
    ASSERT_EQ(trace_put_push(&chunk, &r), 0);
}

static void nvtx_pop(uint64_t ts, uint64_t depth)
{
    struct trace_pop r = {.thread_idx = 1, .ts = ts, .domain = 0, .depth = depth};
    ASSERT_EQ(trace_put_pop(&chunk, &r), 0);
}

/* Writes the chunk as <dir>/4242-1000.lrt, imports the folder, opens the database. */
static sqlite3 *import_chunk(void)
{
    char dir[] = "/tmp/lantern-cupti-XXXXXX";
    ASSERT(mkdtemp(dir));
    char path[256], db_path[256];
    snprintf(path, sizeof path, "%s/4242-1000.lrt", dir);
    snprintf(db_path, sizeof db_path, "%s/out.db", dir);
    FILE *out = fopen(path, "wb");
    ASSERT(out);
    uint8_t header[16];
    trace_file_header(header);
    size_t len = trace_chunk_finish(&chunk);
    ASSERT_EQ(fwrite(header, 1, 16, out), 16);
    ASSERT_EQ(fwrite(chunk_buf, 1, len, out), len);
    ASSERT_EQ(fclose(out), 0);
    ASSERT_EQ(import_session(dir, db_path, NULL, NULL), 0);
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    unlink(path);
    unlink(db_path);
    rmdir(dir);
    return db;
}

/* The single integer (or NULL as -1) that a query returns. */
static long long query_int(sqlite3 *db, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "bad SQL: %s: %s\n", sql, sqlite3_errmsg(db));
        exit(1);
    }
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static char text_buf[512];
static const char *query_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(text_buf, sizeof text_buf, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(st);
    return text_buf;
}

/* ---- record builders ------------------------------------------------------------------ */

static CUpti_ActivityKernel10 kernel(uint32_t correlation, uint64_t start, uint64_t end)
{
    CUpti_ActivityKernel10 k = {0};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7;
    k.correlationId = correlation;
    k.gridX = 256;
    k.gridY = 2;
    k.gridZ = 1;
    k.blockX = 128;
    k.blockY = 1;
    k.blockZ = 1;
    k.clusterX = 1;
    k.clusterY = 1;
    k.clusterZ = 1;
    k.registersPerThread = 32;
    k.staticSharedMemory = 4096;
    k.dynamicSharedMemory = 1024;
    k.localMemoryPerThread = 16;
    k.name = "_Z6vecAddPfS_S_i";
    return k;
}

static CUpti_ActivityAPI api(int driver, uint32_t cbid, uint32_t correlation, uint64_t start,
                             uint64_t end)
{
    CUpti_ActivityAPI a = {0};
    a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = cbid;
    a.start = start;
    a.end = end;
    a.processId = 4242;
    a.threadId = 4242;
    a.correlationId = correlation;
    return a;
}

static CUpti_ActivityMemcpy6 memcpy_record(uint32_t correlation, uint8_t kind, uint8_t src,
                                           uint8_t dst, uint64_t bytes, int async)
{
    CUpti_ActivityMemcpy6 c = {0};
    c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    c.copyKind = kind;
    c.srcKind = src;
    c.dstKind = dst;
    c.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    c.bytes = bytes;
    c.start = 5000 + correlation * 100;
    c.end = c.start + 50;
    c.contextId = 1;
    c.streamId = 7;
    c.correlationId = correlation;
    return c;
}

static CUpti_ActivityDevice5 h100(void)
{
    CUpti_ActivityDevice5 d = {0};
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = "NVIDIA H100 80GB HBM3";
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    d.numMultiprocessors = 132;
    d.globalMemorySize = 85520809984ull;
    d.coreClockRate = 1980000;
    d.globalMemoryBandwidth = 3352320000ull; /* kB/s */
    d.l2CacheSize = 52428800;
    d.numThreadsPerWarp = 32;
    d.maxWarpsPerMultiprocessor = 64;
    d.maxRegistersPerMultiprocessor = 65536;
    d.maxSharedMemoryPerMultiprocessor = 233472;
    d.maxBlocksPerMultiprocessor = 32;
    d.maxRegistersPerBlock = 65536;
    d.maxSharedMemoryPerBlock = 49152;
    for (int i = 0; i < 16; i++)
        d.uuid.bytes[i] = (char)(0xa0 + i);
    return d;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void kernel_record_becomes_exact_kernels_row(void)
{
    begin(0);
    CUpti_ActivityDevice5 d = h100();
    ASSERT_EQ(translate(&d), CUPTI_TRANSLATED);
    CUpti_ActivityKernel10 k = kernel(11, 2000, 2600);
    k.clusterX = 2; /* a cluster launch */
    k.graphId = 3;
    k.graphNodeId = 99;
    ASSERT_EQ(translate(&k), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT start_ns FROM kernels"), 2000);
    ASSERT_EQ(query_int(db, "SELECT end_ns FROM kernels"), 2600);
    ASSERT_EQ(query_int(db, "SELECT stream FROM kernels"), 7);
    ASSERT_EQ(query_int(db, "SELECT context FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT correlation_id FROM kernels"), 11);
    ASSERT_EQ(query_int(db, "SELECT grid_x * 10000 + grid_y * 100 + grid_z FROM kernels"), 2560201);
    ASSERT_EQ(query_int(db, "SELECT block_x * 10000 + block_y * 100 + block_z FROM kernels"),
              1280101);
    ASSERT_EQ(query_int(db, "SELECT cluster_x * 100 + cluster_y * 10 + cluster_z FROM kernels"),
              211);
    ASSERT_EQ(query_int(db, "SELECT regs_per_thread FROM kernels"), 32);
    ASSERT_EQ(query_int(db, "SELECT static_smem FROM kernels"), 4096);
    ASSERT_EQ(query_int(db, "SELECT dynamic_smem FROM kernels"), 1024);
    ASSERT_EQ(query_int(db, "SELECT local_mem_per_thread FROM kernels"), 16);
    ASSERT_EQ(query_int(db, "SELECT launch_type FROM kernels"), 3);
    ASSERT_EQ(query_int(db, "SELECT graph_id FROM kernels"), 3);
    ASSERT_EQ(query_int(db, "SELECT graph_node_id FROM kernels"), 99);
    ASSERT_STR_EQ(
        query_text(db, "SELECT s.value FROM kernels k JOIN strings s ON s.id = k.name_id"),
        "_Z6vecAddPfS_S_i");
    ASSERT_STR_EQ(
        query_text(db, "SELECT s.value FROM kernels k JOIN strings s ON s.id = k.demangled_id"),
        "vecAdd(float*, float*, float*, int)");
    ASSERT_EQ(query_int(db, "SELECT k.gpu_id = g.id FROM kernels k, gpus g"), 1);
    /* the stream that did work gets a row even though CUPTI never described it */
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_streams WHERE stream = 7 AND context = 1"),
              1);
    sqlite3_close(db);
}

static void kernel_names_are_interned_once(void)
{
    begin(0);
    CUpti_ActivityKernel10 a = kernel(1, 2000, 2100), b = kernel(2, 2200, 2300);
    ASSERT_EQ(translate(&a), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&b), CUPTI_TRANSLATED);
    ASSERT_EQ(string_count, 1); /* the name, once for both kernels */
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(DISTINCT name_id) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels WHERE launch_type = 0"), 2);
    sqlite3_close(db);
}

static void extern_c_kernel_names_are_not_demangled(void)
{
    begin(0);
    CUpti_ActivityKernel10 k = kernel(1, 2000, 2100);
    k.name = "add_one_c";
    ASSERT_EQ(translate(&k), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_STR_EQ(
        query_text(db, "SELECT s.value FROM kernels k JOIN strings s ON s.id = k.name_id"),
        "add_one_c");
    ASSERT_EQ(query_int(db, "SELECT demangled_id FROM kernels"), -1);
    sqlite3_close(db);
}

static void memcpys_keep_kinds_pageable_versus_pinned(void)
{
    begin(0);
    CUpti_ActivityMemcpy6 pageable =
        memcpy_record(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 0);
    CUpti_ActivityMemcpy6 pinned =
        memcpy_record(2, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                      CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 4096, 1);
    CUpti_ActivityMemcpyPtoP4 peer = {0};
    peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    peer.srcKind = peer.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    peer.bytes = 777;
    peer.start = 9000;
    peer.end = 9100;
    peer.srcDeviceId = 0;
    peer.dstDeviceId = 1;
    peer.correlationId = 3;
    ASSERT_EQ(translate(&pageable), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&pinned), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&peer), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM memcpys"), 3);
    ASSERT_EQ(query_int(db,
                        "SELECT count(*) FROM memcpys WHERE copy_kind = 'HtoD' AND bytes = 1048576"
                        " AND src_kind = 'pageable' AND dst_kind = 'device' AND is_async = 0"
                        " AND start_ns = 5100 AND end_ns = 5150"),
              1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM memcpys WHERE copy_kind = 'DtoH' AND bytes = 4096"
                            " AND src_kind = 'device' AND dst_kind = 'pinned' AND is_async = 1"),
              1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM memcpys WHERE copy_kind = 'PtoP' AND bytes = 777"
                            " AND src_device = 0 AND dst_device = 1"),
              1);
    sqlite3_close(db);
}

static void memsets_syncs_and_memory_become_rows(void)
{
    begin(0);
    CUpti_ActivityMemset4 set = {0};
    set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    set.value = 0xab;
    set.bytes = 65536;
    set.start = 3000;
    set.end = 3010;
    set.streamId = 7;
    set.contextId = 1;
    set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    set.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
    set.correlationId = 20;
    CUpti_ActivitySynchronization2 sync = {0};
    sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sync.start = 3100;
    sync.end = 3900;
    sync.correlationId = 21;
    sync.contextId = 1;
    sync.streamId = 7;
    sync.cudaEventId = (uint32_t)-1; /* CUPTI_SYNCHRONIZATION_INVALID_VALUE */
    CUpti_ActivityAPI sync_call = api(0, 131, 21, 3050, 3950);
    CUpti_ActivityMemory4 alloc = {0}, release = {0};
    alloc.kind = release.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    alloc.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    release.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    alloc.memoryKind = release.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    alloc.address = release.address = 0x7f0000000000ull;
    alloc.bytes = release.bytes = 1 << 24;
    alloc.timestamp = 2500;
    release.timestamp = 4000;
    ASSERT_EQ(translate(&set), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&sync), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&sync_call), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&alloc), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&release), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM memsets WHERE bytes = 65536 AND value = 171"
                            " AND mem_kind = 'device' AND is_async = 1 AND stream = 7"),
              1);
    ASSERT_EQ(query_int(db,
                        "SELECT count(*) FROM cuda_syncs WHERE sync_kind = 'stream'"
                        " AND stream = 7 AND event IS NULL AND start_ns = 3100 AND end_ns = 3900"),
              1);
    ASSERT_EQ(query_int(db, "SELECT s.thread_id = a.thread_id FROM cuda_syncs s, cuda_api a"), 1);
    ASSERT_EQ(query_int(db, "SELECT t.tid FROM cuda_syncs s JOIN threads t ON t.id = s.thread_id"),
              4242);
    ASSERT_EQ(query_int(db,
                        "SELECT count(*) FROM cuda_memory WHERE op = 'alloc' AND ts_ns = 2500"
                        " AND bytes = 16777216 AND mem_kind = 'device' AND address = %lld",
                        0x7f0000000000ll),
              1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_memory WHERE op = 'free' AND ts_ns = 4000"),
              1);
    sqlite3_close(db);
}

static void waits_come_from_the_synchronizing_calls_without_sync_records(void)
{
    begin(0);
    CUpti_ActivityAPI calls[] = {
        api(0, 131, 30, 1000, 1900), /* cudaStreamSynchronize */
        api(1, 252, 30, 1010, 1890), /* cuStreamSynchronize inside it: no second wait */
        api(0, 147, 31, 2000, 2005), /* cudaStreamWaitEvent */
        api(0, 165, 32, 3000, 3500), /* cudaDeviceSynchronize */
        api(1, 252, 33, 4000, 4100), /* cuStreamSynchronize called directly */
        api(0, 211, 34, 5000, 5010), /* cudaLaunchKernel: not a wait */
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        ASSERT_EQ(translate(&calls[i]), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_syncs"), 4);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_syncs WHERE sync_kind = 'stream' AND"
                            " correlation_id = 30 AND start_ns = 1000 AND end_ns = 1900"
                            " AND stream IS NULL AND event IS NULL"),
              1);
    ASSERT_STR_EQ(query_text(db, "SELECT group_concat(sync_kind || ':' || correlation_id, ' ') FROM"
                                 " (SELECT * FROM cuda_syncs ORDER BY start_ns)"),
                  "stream:30 stream_wait_event:31 context:32 stream:33");
    ASSERT_EQ(query_int(db, "SELECT t.tid FROM cuda_syncs s JOIN threads t ON t.id = s.thread_id"
                            " WHERE s.correlation_id = 32"),
              4242);
    sqlite3_close(db);
}

static void api_calls_follow_the_allow_list(void)
{
    begin(0);
    CUpti_ActivityAPI launch = api(0, 211, 1, 2000, 2010);
    CUpti_ActivityAPI get_device = api(0, 17, 2, 2020, 2021);
    CUpti_ActivityAPI driver_launch = api(1, 307, 3, 2030, 2040);
    driver_launch.returnValue = 1;
    ASSERT_EQ(translate(&launch), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&get_device), CUPTI_SKIPPED);
    ASSERT_EQ(translate(&driver_launch), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api"), 2);
    ASSERT_STR_EQ(query_text(db, "SELECT s.value FROM cuda_api a JOIN strings s ON s.id = a.name_id"
                                 " WHERE a.api = 0"),
                  "cudaLaunchKernel");
    ASSERT_EQ(query_int(db, "SELECT cbid FROM cuda_api WHERE api = 0"), 211);
    ASSERT_EQ(query_int(db, "SELECT return_code FROM cuda_api WHERE api = 1"), 1);
    ASSERT_STR_EQ(query_text(db, "SELECT s.value FROM cuda_api a JOIN strings s ON s.id = a.name_id"
                                 " WHERE a.api = 1"),
                  "cuLaunchKernel");
    ASSERT_EQ(query_int(db, "SELECT t.tid FROM cuda_api a JOIN threads t ON t.id = a.thread_id"
                            " WHERE a.api = 0"),
              4242);
    sqlite3_close(db);

    begin(1); /* LANTERN_CUDA_API=all */
    ASSERT_EQ(translate(&get_device), CUPTI_TRANSLATED);
    db = import_chunk();
    ASSERT_STR_EQ(
        query_text(db, "SELECT s.value FROM cuda_api a JOIN strings s ON s.id = a.name_id"),
        "cudaGetDevice");
    sqlite3_close(db);
}

static void allow_list_keeps_gpu_work_and_drops_queries(void)
{
    static const char *const kept[] = {
        "cudaLaunchKernel_v7000",
        "cuLaunchKernelEx",
        "cudaMemcpyAsync_v3020",
        "cuMemcpyHtoD_v2",
        "cudaMemsetAsync_v3020",
        "cudaDeviceSynchronize_v3020",
        "cudaStreamSynchronize_v3020",
        "cudaEventSynchronize_v3020",
        "cudaMalloc_v3020",
        "cudaFree_v3020",
        "cudaMallocAsync_v11020",
        "cuMemAlloc_v2",
        "cuMemFree_v2",
        "cudaHostAlloc_v3020",
        "cudaGraphLaunch_v10000",
        "cudaStreamCreateWithFlags_v5000",
        "cudaStreamWaitEvent_v3020",
        "cudaEventRecord_v3020",
        "cudaProfilerStart_v4000",
        "cudaProfilerStop_v4000",
        "cudaMallocManaged_v6000",
    };
    static const char *const dropped[] = {
        "cudaGetDevice_v3020",
        "cudaGetLastError_v3020",
        "cudaPeekAtLastError_v3020",
        "cudaGetDeviceProperties_v3020",
        "cudaEventQuery_v3020",
        "cudaStreamQuery_v3020",
        "cudaStreamIsCapturing_v10000",
        "cudaStreamGetCaptureInfo_v10010",
        "cuCtxGetCurrent",
        "cudaFuncGetAttributes_v3020",
        "cudaSetDevice_v3020",
        "cuGetProcAddress_v2",
        "cudaDeviceGetAttribute_v5000",
        "cudaPointerGetAttributes_v4000",
    };
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (!cupti_api_allowed(kept[i])) {
            fprintf(stderr, "not allowed: %s\n", kept[i]);
            exit(1);
        }
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
        if (cupti_api_allowed(dropped[i])) {
            fprintf(stderr, "allowed: %s\n", dropped[i]);
            exit(1);
        }
    ASSERT_EQ(cupti_api_allowed(NULL), 0);
}

static void gpu_work_is_attributed_to_the_innermost_nvtx_range(void)
{
    begin(0);
    nvtx_push(1100, "outer", 0);
    nvtx_push(1200, "inner", 1);
    CUpti_ActivityAPI in_inner = api(0, 211, 7, 1250, 1260);
    nvtx_pop(1300, 1);
    CUpti_ActivityAPI in_outer = api(0, 211, 8, 1350, 1360);
    CUpti_ActivityAPI copy_in_outer = api(0, 31, 9, 1370, 1380);
    nvtx_pop(1400, 0);
    CUpti_ActivityAPI outside = api(0, 211, 10, 1450, 1460);
    CUpti_ActivityAPI other_thread = api(0, 211, 12, 1250, 1260);
    other_thread.threadId = 5000;
    const CUpti_ActivityAPI *calls[] = {&in_inner, &in_outer, &copy_in_outer, &outside,
                                        &other_thread};
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(translate(calls[i]), CUPTI_TRANSLATED);
    CUpti_ActivityKernel10 k7 = kernel(7, 2000, 2100), k8 = kernel(8, 2200, 2300);
    CUpti_ActivityKernel10 k10 = kernel(10, 2400, 2500), k12 = kernel(12, 2600, 2700);
    CUpti_ActivityMemcpy6 c9 =
        memcpy_record(9, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 64, 0);
    ASSERT_EQ(translate(&k7), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&k8), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&k10), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&k12), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&c9), CUPTI_TRANSLATED);
    /* the writer reads a thread's OS name when its tid first shows (then on each change of
     * thread between consecutive API records, a cheap test the writer's table resolves) */
    ASSERT_EQ(seen_count, 2);
    ASSERT_EQ(seen_tids[0], 4242);
    ASSERT_EQ(seen_tids[1], 5000);
    sqlite3 *db = import_chunk();
    long long outer = query_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id = r.name_id"
                                    " WHERE s.value = 'outer'");
    long long inner = query_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id = r.name_id"
                                    " WHERE s.value = 'inner'");
    ASSERT_EQ(query_int(db, "SELECT parent_id FROM ranges WHERE id = %lld", inner), outer);
    ASSERT_EQ(query_int(db, "SELECT nvtx_range_id FROM kernels WHERE correlation_id = 7"), inner);
    ASSERT_EQ(query_int(db, "SELECT nvtx_range_id FROM kernels WHERE correlation_id = 8"), outer);
    ASSERT_EQ(query_int(db, "SELECT nvtx_range_id FROM memcpys WHERE correlation_id = 9"), outer);
    ASSERT_EQ(query_int(db, "SELECT nvtx_range_id FROM kernels WHERE correlation_id = 10"), -1);
    ASSERT_EQ(query_int(db, "SELECT nvtx_range_id FROM kernels WHERE correlation_id = 12"), -1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels k JOIN cuda_api a ON a.id = k.api_id"
                            " WHERE a.correlation_id = k.correlation_id"),
              4);
    sqlite3_close(db);
}

static void runtime_call_wins_the_correlation_over_driver_call(void)
{
    begin(0);
    CUpti_ActivityAPI runtime = api(0, 211, 5, 2000, 2100);
    CUpti_ActivityAPI driver = api(1, 307, 5, 2010, 2090);
    CUpti_ActivityKernel10 k = kernel(5, 3000, 3100);
    ASSERT_EQ(translate(&driver), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&runtime), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&k), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT a.api FROM kernels k JOIN cuda_api a ON a.id = k.api_id"), 0);
    sqlite3_close(db);
}

static void zero_and_inverted_timestamps_are_rejected_and_counted(void)
{
    begin(0);
    CUpti_ActivityKernel10 zero = kernel(1, 0, 2100), inverted = kernel(2, 3000, 2900);
    CUpti_ActivityKernel10 good = kernel(3, 4000, 4000); /* zero length is a valid kernel */
    CUpti_ActivityAPI zero_end = api(0, 211, 4, 2000, 0);
    ASSERT_EQ(translate(&zero), CUPTI_REJECTED);
    ASSERT_EQ(translate(&inverted), CUPTI_REJECTED);
    ASSERT_EQ(translate(&good), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&zero_end), CUPTI_REJECTED);
    ASSERT_EQ(cupti_translate_flush_rejected(&translator, &chunk), CUPTI_TRANSLATED);
    ASSERT_EQ(cupti_translate_flush_rejected(&translator, &chunk), CUPTI_SKIPPED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api"), 0);
    ASSERT_EQ(query_int(db, "SELECT cuda_rejected_records FROM processes"), 3);
    sqlite3_close(db);
}

static void device_record_fills_gpus_with_peaks(void)
{
    begin(0);
    CUpti_ActivityDevice5 d = h100();
    ASSERT_EQ(translate(&d), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&d), CUPTI_TRANSLATED); /* the same GPU twice: one row */
    CUpti_ActivityContext3 c = {0};
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c.contextId = 1;
    c.deviceId = 0;
    c.nullStreamId = 13;
    ASSERT_EQ(translate(&c), CUPTI_TRANSLATED);
    CUpti_ActivityStream s = {0};
    s.kind = CUPTI_ACTIVITY_KIND_STREAM;
    s.contextId = 1;
    s.streamId = 7;
    s.priority = (uint32_t)-2;
    s.flag = CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING;
    ASSERT_EQ(translate(&s), CUPTI_TRANSLATED);
    CUpti_ActivityKernel10 on_null = kernel(1, 2000, 2100);
    on_null.streamId = 13;
    ASSERT_EQ(translate(&on_null), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM gpus"), 1);
    ASSERT_STR_EQ(query_text(db, "SELECT uuid FROM gpus"),
                  "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
    ASSERT_STR_EQ(query_text(db, "SELECT name FROM gpus"), "NVIDIA H100 80GB HBM3");
    ASSERT_STR_EQ(query_text(db, "SELECT pci_bus_id FROM gpus"), "00000000:19:00.0");
    ASSERT_EQ(query_int(db, "SELECT cc_major * 10 + cc_minor FROM gpus"), 90);
    ASSERT_EQ(query_int(db, "SELECT sm_count FROM gpus"), 132);
    ASSERT_EQ(query_int(db, "SELECT memory_bytes FROM gpus"), 85520809984ll);
    ASSERT_EQ(query_int(db, "SELECT memory_clock_khz FROM gpus"), 2619000);
    ASSERT_EQ(query_int(db, "SELECT memory_bus_bits FROM gpus"), 5120);
    ASSERT_EQ(query_int(db, "SELECT max_threads_per_sm FROM gpus"), 2048);
    ASSERT_EQ(query_int(db, "SELECT smem_per_block_optin FROM gpus"), 232448);
    /* 256 FP32 FLOP/clock/SM x 132 SMs x 1.98 GHz; 4096 FP16 tensor FLOP/clock/SM */
    ASSERT_EQ(query_int(db, "SELECT CAST(peak_fp32_flops AS INTEGER) FROM gpus"), 66908160000000ll);
    ASSERT_EQ(query_int(db, "SELECT CAST(peak_fp16_flops AS INTEGER) FROM gpus"),
              1070530560000000ll);
    ASSERT_EQ(query_int(db, "SELECT CAST(peak_fp64_flops AS INTEGER) FROM gpus"), 66908160000000ll);
    ASSERT_EQ(query_int(db, "SELECT CAST(peak_dram_bytes_per_s AS INTEGER) FROM gpus"),
              3352320000000ll);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM process_gpus WHERE device = 0"), 1);
    ASSERT_EQ(query_int(db, "SELECT c.gpu_id = g.id FROM cuda_contexts c, gpus g"), 1);
    ASSERT_EQ(query_int(db, "SELECT priority FROM cuda_streams WHERE stream = 7"), -2);
    ASSERT_EQ(query_int(db, "SELECT is_default FROM cuda_streams WHERE stream = 7"), 0);
    ASSERT_EQ(query_int(db, "SELECT is_default FROM cuda_streams WHERE stream = 13"), 1);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_streams WHERE gpu_id IS NULL"), 0);
    sqlite3_close(db);
}

/* What the agent's resource callbacks and its NVTX module write. */
static void handle_record(unsigned type, uint64_t handle, uint64_t context, uint64_t stream)
{
    if (type == TRACE_CUDA_STREAM_HANDLE) {
        struct trace_cuda_stream_handle r = {
            .handle = handle, .context = context, .stream = stream};
        ASSERT_EQ(trace_put_cuda_stream_handle(&chunk, &r), 0);
    } else {
        struct trace_cuda_context_handle r = {.handle = handle, .context = context};
        ASSERT_EQ(trace_put_cuda_context_handle(&chunk, &r), 0);
    }
}

static void nvtx_name_resource(uint64_t kind, uint64_t handle, const char *name)
{
    uint64_t id = fake_intern(NULL, name, strlen(name));
    struct trace_name_resource r = {.kind = kind, .handle = handle, .name = id};
    ASSERT_EQ(trace_put_name_resource(&chunk, &r), 0);
}

static void streams_and_contexts_take_their_nvtx_names(void)
{
    begin(0);
    handle_record(TRACE_CUDA_CONTEXT_HANDLE, 0x9000, 1, 0);
    handle_record(TRACE_CUDA_STREAM_HANDLE, 0x5000, 1, 7);
    handle_record(TRACE_CUDA_STREAM_HANDLE, 0x6000, 1, 8);
    nvtx_name_resource(TRACE_RESOURCE_CUDART_STREAM, 0x5000, "copy stream");
    nvtx_name_resource(TRACE_RESOURCE_CU_CONTEXT, 0x9000, "main context");
    nvtx_name_resource(TRACE_RESOURCE_CU_EVENT, 0x6000, "an event, not the stream");
    CUpti_ActivityContext3 c = {0};
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c.contextId = 1;
    ASSERT_EQ(translate(&c), CUPTI_TRANSLATED);
    CUpti_ActivityStream st = {0};
    st.kind = CUPTI_ACTIVITY_KIND_STREAM;
    st.contextId = 1;
    st.streamId = 7;
    ASSERT_EQ(translate(&st), CUPTI_TRANSLATED);
    st.streamId = 8;
    ASSERT_EQ(translate(&st), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT handle FROM cuda_streams WHERE stream = 7"), 0x5000);
    ASSERT_STR_EQ(query_text(db,
                             "SELECT s.value FROM cuda_streams t JOIN strings s ON s.id = t.name_id"
                             " WHERE t.stream = 7"),
                  "copy stream");
    ASSERT_EQ(query_int(db, "SELECT name_id FROM cuda_streams WHERE stream = 8"), -1);
    ASSERT_EQ(query_int(db, "SELECT handle FROM cuda_contexts"), 0x9000);
    ASSERT_STR_EQ(
        query_text(db, "SELECT s.value FROM cuda_contexts c JOIN strings s ON s.id = c.name_id"),
        "main context");
    sqlite3_close(db);
}

static void overhead_records_become_cupti_overhead_rows(void)
{
    begin(0);
    CUpti_ActivityOverhead3 o = {0};
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.threadId = 4242;
    o.start = 5000;
    o.end = 5300;
    ASSERT_EQ(translate(&o), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cupti_overhead WHERE kind = 'cupti_buffer_flush'"
                            " AND start_ns = 5000 AND end_ns = 5300"),
              1);
    ASSERT_EQ(
        query_int(db, "SELECT t.tid FROM cupti_overhead o JOIN threads t ON t.id = o.thread_id"),
        4242);
    sqlite3_close(db);
}

static void full_builder_asks_for_a_flush(void)
{
    begin(0);
    uint8_t small[TRACE_CHUNK_HEADER_SIZE + 20];
    struct trace_chunk_builder tiny;
    trace_chunk_begin(&tiny, small, sizeof(small), 0);
    CUpti_ActivityKernel10 k = kernel(1, 2000, 2100);
    ASSERT_EQ(cupti_translate_record(&translator, &tiny, (const CUpti_Activity *)&k),
              CUPTI_NO_ROOM);
    ASSERT_EQ(tiny.records, 0);
}

/* The capture record the agent writes from the launcher's --capture-range/--delay/--duration. */
static void capture(const char *mode, uint64_t from, uint64_t until)
{
    struct trace_cuda_capture r = {.mode = trace_cstr(mode), .from_ns = from, .until_ns = until};
    ASSERT_EQ(trace_put_cuda_capture(&chunk, &r), 0);
}

/* Launches (correlation 1, 2, 3) at 1100, 1300 and 1500; their kernels run later. */
static void three_launches(void)
{
    static const uint64_t at[] = {1100, 1300, 1500};
    for (uint32_t i = 0; i < 3; i++) {
        CUpti_ActivityAPI launch = api(0, 211, i + 1, at[i], at[i] + 10);
        CUpti_ActivityKernel10 k = kernel(i + 1, 3000 + i * 100, 3050 + i * 100);
        ASSERT_EQ(translate(&launch), CUPTI_TRANSLATED);
        ASSERT_EQ(translate(&k), CUPTI_TRANSLATED);
    }
}

static void capture_range_cuda_profiler_api_keeps_work_between_start_and_stop(void)
{
    begin(0);
    capture("cudaProfilerApi", 0, 0);
    three_launches();
    CUpti_ActivityAPI start = api(0, 171, 10, 1200, 1210), stop = api(0, 172, 11, 1400, 1410);
    ASSERT_EQ(translate(&start), CUPTI_TRANSLATED);
    ASSERT_EQ(translate(&stop), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT correlation_id FROM kernels"), 2); /* runs after Stop: kept */
    /* the launch inside, and the window's edges: the start and stop calls themselves */
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api"), 3);
    ASSERT_STR_EQ(query_text(db, "SELECT group_concat(correlation_id, ',') FROM (SELECT"
                                 " correlation_id FROM cuda_api ORDER BY start_ns)"),
                  "10,2,11");
    ASSERT_EQ(query_int(db, "SELECT value FROM meta WHERE key = 'cuda_gpu_ops_outside_capture'"),
              2);
    sqlite3_close(db);
}

static void capture_range_nvtx_keeps_work_launched_inside_the_named_range(void)
{
    begin(0);
    capture("nvtx:capture", 0, 0);
    nvtx_push(1050, "other", 0);
    nvtx_pop(1150, 0);
    nvtx_push(1200, "capture", 0);
    nvtx_pop(1400, 0);
    three_launches();
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT correlation_id FROM kernels"), 2);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM ranges"), 2); /* NVTX itself is not filtered */
    sqlite3_close(db);
}

static void delay_and_duration_bound_the_capture(void)
{
    begin(0);
    capture("none", 1250, 1450);
    three_launches();
    CUpti_ActivityMemset4 set = {0}; /* no launching call known: kept by its own start */
    set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    set.bytes = 8;
    set.start = 1350;
    set.end = 1360;
    set.correlationId = 50;
    ASSERT_EQ(translate(&set), CUPTI_TRANSLATED);
    set.start = 1600;
    set.end = 1610;
    set.correlationId = 51;
    ASSERT_EQ(translate(&set), CUPTI_TRANSLATED);
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 1);
    ASSERT_EQ(query_int(db, "SELECT correlation_id FROM kernels"), 2);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM memsets"), 1);
    ASSERT_EQ(query_int(db, "SELECT correlation_id FROM memsets"), 50);
    ASSERT_EQ(query_int(db, "SELECT from_ns FROM cuda_capture"), 1250);
    ASSERT_EQ(query_int(db, "SELECT value FROM meta WHERE key = 'cuda_gpu_ops_outside_capture'"),
              3);
    sqlite3_close(db);
}

static void without_capture_record_everything_is_kept(void)
{
    begin(0);
    three_launches();
    sqlite3 *db = import_chunk();
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM kernels"), 3);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api"), 3);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM meta WHERE key = 'cuda_gpu_ops_outside_capture'"),
              0); /* no capture range, no count */
    sqlite3_close(db);
}

static const struct test_case tests[] = {
    {"capture_range_cuda_profiler_api_keeps_work_between_start_and_stop",
     capture_range_cuda_profiler_api_keeps_work_between_start_and_stop},
    {"capture_range_nvtx_keeps_work_launched_inside_the_named_range",
     capture_range_nvtx_keeps_work_launched_inside_the_named_range},
    {"delay_and_duration_bound_the_capture", delay_and_duration_bound_the_capture},
    {"without_capture_record_everything_is_kept", without_capture_record_everything_is_kept},
    {"kernel_record_becomes_exact_kernels_row", kernel_record_becomes_exact_kernels_row},
    {"kernel_names_are_interned_once", kernel_names_are_interned_once},
    {"extern_c_kernel_names_are_not_demangled", extern_c_kernel_names_are_not_demangled},
    {"memcpys_keep_kinds_pageable_versus_pinned", memcpys_keep_kinds_pageable_versus_pinned},
    {"memsets_syncs_and_memory_become_rows", memsets_syncs_and_memory_become_rows},
    {"api_calls_follow_the_allow_list", api_calls_follow_the_allow_list},
    {"waits_come_from_the_synchronizing_calls_without_sync_records",
     waits_come_from_the_synchronizing_calls_without_sync_records},
    {"allow_list_keeps_gpu_work_and_drops_queries", allow_list_keeps_gpu_work_and_drops_queries},
    {"gpu_work_is_attributed_to_the_innermost_nvtx_range",
     gpu_work_is_attributed_to_the_innermost_nvtx_range},
    {"runtime_call_wins_the_correlation_over_driver_call",
     runtime_call_wins_the_correlation_over_driver_call},
    {"zero_and_inverted_timestamps_are_rejected_and_counted",
     zero_and_inverted_timestamps_are_rejected_and_counted},
    {"device_record_fills_gpus_with_peaks", device_record_fills_gpus_with_peaks},
    {"streams_and_contexts_take_their_nvtx_names", streams_and_contexts_take_their_nvtx_names},
    {"overhead_records_become_cupti_overhead_rows", overhead_records_become_cupti_overhead_rows},
    {"full_builder_asks_for_a_flush", full_builder_asks_for_a_flush},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    int rc = test_main(tests, argc, argv);
    cupti_translate_release(&translator);
    for (uint64_t i = 0; i < string_count; i++)
        free(strings[i]);
    return rc;
}
