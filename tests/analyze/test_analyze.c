/* Every rule of `lantern analyze` on a database crafted for it (the real schema plus a few
 * rows written here): each test states the rows, works out by hand what the rule must find
 * (findings, costs, counts, evidence order) and checks it exactly. */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>

#include "analyze/analyze.h"
#include "db/import.h"
#include "harness.h"
#include "model/nccl.h"

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s\n", err);
        exit(1);
    }
}

/* A 1 ms session (0 .. 1 000 000 ns), process 1 (pid 100) with thread 1 (tid 100), one
 * 132-SM H100-like GPU (id 1, NVML index 0), then the test's rows. */
static sqlite3 *session(const char *rows)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec(db, import_schema_sql);
    exec(db, "INSERT INTO meta VALUES('schema_version', 9), ('start_ns', 0), ('end_ns', 1000000),"
             " ('command', 'app');"
             "INSERT INTO processes(id, pid, start_ns, end_ns, clean_exit) VALUES(1, 100, 0, "
             "1000000, 1);"
             "INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 100);"
             "INSERT INTO gpus(id, uuid, name, nvml_index, cc_major, cc_minor, sm_count,"
             " max_threads_per_sm, max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm,"
             " peak_fp32_flops, peak_fp16_flops) VALUES(1, 'GPU-a', 'H100', 0, 9, 0, 132, 2048,"
             " 65536, 233472, 32, 67e12, 989e12);"
             "INSERT INTO process_gpus VALUES(1, 0, 1);");
    exec(db, rows);
    return db;
}

/* Runs one rule; the result is results[0]. */
static void run_rule(sqlite3 *db, const char *rule, struct analyze_run *run)
{
    const char *bad = NULL;
    char error[256] = "";
    int rc = analyze_run(db, rule, 0, run, &bad, error, sizeof error);
    if (rc != 0)
        fprintf(stderr, "analyze failed: %s\n", error);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(run->count, 1);
}

static void expect_cost(const struct analyze_finding *f, double ns)
{
    if (fabs(f->cost_ns - ns) > 1e-6 * (ns > 1 ? ns : 1)) {
        fprintf(stderr, "cost %.6f, expected %.6f (%s)\n", f->cost_ns, ns, f->summary);
        exit(1);
    }
}

/* Two pageable HtoD copies of 4 MB (1000 and 3000 ns) and a pinned one (500 ns: 8000 B/ns);
 * one pageable DtoH of 2 MB in 2000 ns with no pinned DtoH to compare. HtoD could take
 * 8e6 B / 8000 B/ns = 1000 ns instead of 4000: cost 3000. DtoH: half its time, 1000. */
static void pageable_memcpy_costs_against_the_runs_pinned_rate(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'step');"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, end_thread_id,"
        " start_ns, end_ns) VALUES(1, 1, 1, 0, 0, 1, 1, 0, 900000);"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, stream, start_ns, end_ns, copy_kind,"
        " bytes, src_kind, dst_kind, is_async, nvtx_range_id) VALUES"
        " (1, 1, 1, 0, 7, 1000, 2000, 'HtoD', 4000000, 'pageable', 'device', 0, 1),"
        " (2, 1, 1, 0, 7, 5000, 8000, 'HtoD', 4000000, 'pageable', 'device', 0, 1),"
        " (3, 1, 1, 0, 7, 9000, 9500, 'HtoD', 4000000, 'pinned', 'device', 1, 1),"
        " (4, 1, 1, 0, 7, 20000, 22000, 'DtoH', 2000000, 'device', 'pageable', 0, NULL);");
    struct analyze_run run;
    run_rule(db, "pageable_memcpy", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    expect_cost(&res->findings[0], 3000);
    ASSERT_EQ(res->findings[0].count, 2);
    ASSERT_EQ(res->findings[0].evidence_count, 2);
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 5000); /* longest first */
    ASSERT_EQ(res->findings[0].evidence[0].duration_ns, 3000);
    ASSERT_EQ(res->findings[0].evidence[0].pid, 100);
    ASSERT_EQ(res->findings[0].evidence[0].stream, 7);
    ASSERT_STR_EQ(res->findings[0].evidence[0].range, ":step");
    ASSERT_STR_EQ(res->findings[0].evidence[0].name, "[CUDA memcpy HtoD]");
    ASSERT_STR_EQ(res->findings[0].evidence[0].detail, "4.00 MB pageable -> device, 1333.33 GB/s");
    expect_cost(&res->findings[1], 1000);
    ASSERT(strstr(res->findings[1].summary, "1 DtoH copies"));
    ASSERT(res->findings[1].evidence[0].range == NULL);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* A synchronous copy whose call took 2000 ns, a synchronous memset whose call took 500 ns,
 * an asynchronous copy (not counted). Cost: the CPU time in the calls. */
static void sync_memops_costs_the_cpu_time_of_the_calls(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'cudaMemcpy'), (2, 'cudaMemset'), (3, 'cudaMemcpyAsync');"
        "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
        " correlation_id) VALUES(1, 1, 1, 0, 1, 100, 2100, 1), (2, 1, 1, 0, 2, 5000, 5500, 2),"
        " (3, 1, 1, 0, 3, 6000, 6100, 3);"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, stream, start_ns, end_ns, copy_kind,"
        " bytes, src_kind, dst_kind, is_async, api_id) VALUES"
        " (1, 1, 1, 0, 7, 200, 2000, 'DtoH', 1000000, 'device', 'pageable', 0, 1),"
        " (2, 1, 1, 0, 7, 6200, 6300, 'HtoD', 1000000, 'pinned', 'device', 1, 3);"
        "INSERT INTO memsets(id, process_id, gpu_id, device, stream, start_ns, end_ns, bytes,"
        " is_async, api_id) VALUES(1, 1, 1, 0, 7, 5100, 5400, 4096, 0, 2);");
    struct analyze_run run;
    run_rule(db, "sync_memops", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    expect_cost(&res->findings[0], 2000);
    ASSERT(strstr(res->findings[0].summary, "1 synchronous DtoH copies"));
    ASSERT_STR_EQ(res->findings[0].evidence[0].name, "cudaMemcpy");
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 100); /* the call, not the copy */
    ASSERT_EQ(res->findings[0].evidence[0].tid, 100);
    expect_cost(&res->findings[1], 500);
    ASSERT(strstr(res->findings[1].summary, "synchronous memsets"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Three cudaDeviceSynchronize calls of 5000 ns (1.5 % of the 1 ms run: reported) and one
 * cudaStreamSynchronize of 2000 ns (0.2 %: under the 1 % threshold). */
static void sync_api_reports_threads_blocked_over_the_threshold(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'cudaDeviceSynchronize'), (2, 'cudaStreamSynchronize'),"
        " (3, 'loop');"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, end_thread_id,"
        " start_ns, end_ns) VALUES(1, 1, 3, 0, 0, 1, 1, 0, 900000);"
        "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
        " correlation_id, nvtx_range_id) VALUES(1, 1, 1, 0, 1, 1000, 6000, 11, 1),"
        " (2, 1, 1, 0, 1, 10000, 15000, 12, 1), (3, 1, 1, 0, 1, 20000, 25000, 13, 1),"
        " (4, 1, 1, 0, 2, 30000, 32000, 14, 1);"
        "INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, correlation_id, start_ns,"
        " end_ns) VALUES(1, 1, 'context', 11, 1000, 6000), (1, 1, 'context', 12, 10000, 15000),"
        " (1, 1, 'context', 13, 20000, 25000), (1, 1, 'stream', 14, 30000, 32000);");
    struct analyze_run run;
    run_rule(db, "sync_api", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 15000);
    ASSERT_EQ(res->findings[0].count, 3);
    ASSERT_EQ(res->findings[0].evidence_count, 3);
    ASSERT_STR_EQ(res->findings[0].evidence[0].name, "cudaDeviceSynchronize");
    ASSERT_STR_EQ(res->findings[0].evidence[0].range, ":loop");
    ASSERT_STR_EQ(res->findings[0].evidence[0].detail, "context wait");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Kernels K1 [10000,20000], K2 [20050,30000] (a 50 ns gap: below 100 µs), K3 [300000,310000]
 * launched at 290000 (after the GPU ran dry at 30000: host wait, 270000), K4 [600000,610000]
 * launched at 100000 (queued long before: other, 290000), K5 [800000,810000] after a
 * synchronize [605000,790000] that was waiting when the GPU ran dry at 610000 (sync,
 * 190000). K3, K4 are launched inside "step", K5 inside "wait". */
static const char gaps_session[] =
    "INSERT INTO strings VALUES(1, 'k'), (2, 'step'), (3, 'wait'), (4, 'cudaLaunchKernel'),"
    " (5, 'cudaDeviceSynchronize');"
    "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, end_thread_id,"
    " start_ns, end_ns) VALUES(1, 1, 2, 0, 0, 1, 1, 0, 700000), (2, 1, 3, 0, 0, 1, 1, 700000,"
    " 1000000);"
    "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
    " correlation_id, nvtx_range_id) VALUES(1, 1, 1, 0, 4, 5000, 6000, 1, 1),"
    " (2, 1, 1, 0, 4, 7000, 8000, 2, 1), (3, 1, 1, 0, 4, 290000, 291000, 3, 1),"
    " (4, 1, 1, 0, 4, 100000, 101000, 4, 1), (5, 1, 1, 0, 5, 605000, 790000, 6, 2),"
    " (6, 1, 1, 0, 4, 795000, 796000, 5, 2);"
    "INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, correlation_id, start_ns, end_ns)"
    " VALUES(1, 1, 'context', 6, 605000, 790000);"
    "INSERT INTO kernels(id, process_id, gpu_id, device, stream, correlation_id, start_ns, end_ns,"
    " name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, regs_per_thread, api_id,"
    " nvtx_range_id) VALUES"
    " (1, 1, 1, 0, 7, 1, 10000, 20000, 1, 264, 1, 1, 256, 1, 1, 32, 1, 1),"
    " (2, 1, 1, 0, 7, 2, 20050, 30000, 1, 264, 1, 1, 256, 1, 1, 32, 2, 1),"
    " (3, 1, 1, 0, 7, 3, 300000, 310000, 1, 264, 1, 1, 256, 1, 1, 32, 3, 1),"
    " (4, 1, 1, 0, 7, 4, 600000, 610000, 1, 264, 1, 1, 256, 1, 1, 32, 4, 1),"
    " (5, 1, 1, 0, 7, 5, 800000, 810000, 1, 264, 1, 1, 256, 1, 1, 32, 6, 2);";

static void gpu_idle_classifies_gaps_as_host_wait_sync_and_other(void)
{
    sqlite3 *db = session(gaps_session);
    struct analyze_run run;
    run_rule(db, "gpu_idle", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 3); /* the GPU, then its ranges :step and :wait */
    const struct analyze_finding *gpu = &res->findings[0];
    expect_cost(gpu, 750000);
    ASSERT_EQ(gpu->count, 3);
    ASSERT(strstr(gpu->summary, "all gaps 750.050 µs"));
    ASSERT(strstr(gpu->summary, "host wait 270.000 µs, sync 190.000 µs, other 290.000 µs"));
    ASSERT_EQ(gpu->evidence_count, 3); /* longest gaps first */
    ASSERT_EQ(gpu->evidence[0].start_ns, 310000);
    ASSERT_EQ(gpu->evidence[0].duration_ns, 290000);
    ASSERT_STR_EQ(gpu->evidence[0].detail, "GPU idle 290.000 µs before this kernel: other");
    ASSERT_EQ(gpu->evidence[1].start_ns, 30000);
    ASSERT_STR_EQ(gpu->evidence[1].detail, "GPU idle 270.000 µs before this kernel: host wait");
    ASSERT_STR_EQ(gpu->evidence[2].detail, "GPU idle 190.000 µs before this kernel: sync");
    ASSERT_STR_EQ(gpu->evidence[2].range, ":wait");
    expect_cost(&res->findings[1], 560000);
    ASSERT(strstr(res->findings[1].summary, "in :step (2 gaps): host wait 270.000 µs, sync 0 ns, "
                                            "other 290.000 µs"));
    ASSERT_EQ(res->findings[1].evidence_count, 2);
    expect_cost(&res->findings[2], 190000);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* The same kernels in 100 windows of 10 µs: the active span 10000..810000 holds 80 windows,
 * 75 of them idle (3 stretches: 270, 290 and 190 µs), 750 µs in all. */
static void gpu_utilization_lists_low_windows_as_stretches(void)
{
    sqlite3 *db = session(gaps_session);
    struct analyze_run run;
    run_rule(db, "gpu_utilization", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 750000);
    ASSERT(strstr(res->findings[0].summary, "in 75 of the 80 windows of 10.000 µs"));
    ASSERT_EQ(res->findings[0].count, 3);
    ASSERT_EQ(res->findings[0].evidence_count, 3);
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 310000);
    ASSERT_EQ(res->findings[0].evidence[0].duration_ns, 290000);
    ASSERT_EQ(res->findings[0].evidence[1].start_ns, 30000);
    ASSERT_EQ(res->findings[0].evidence[2].start_ns, 610000);
    ASSERT_STR_EQ(res->findings[0].evidence[2].detail, "GPU busy 0.0 % of this stretch");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* 12 launches of "tiny" (1000 ns each, launch calls of 3000 ns: 2000 ns too slow each),
 * 12 of "big" (10 µs, longer than their calls) and 5 of "few" (short, but under 10). */
static void launch_bound_flags_kernels_shorter_than_their_launch(void)
{
    char sql[16384];
    size_t used = (size_t)snprintf(
        sql, sizeof sql,
        "INSERT INTO strings VALUES(1, 'tiny'), (2, 'big'), (3, 'few'), (4, 'cudaLaunchKernel');");
    for (int i = 0; i < 29; i++) {
        int name = i < 12 ? 1 : i < 24 ? 2 : 3;
        long start = 10000L + 20000L * i, ns = name == 2 ? 10000 : 1000;
        used += (size_t)snprintf(
            sql + used, sizeof sql - used,
            "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
            " correlation_id) VALUES(%d, 1, 1, 0, 4, %ld, %ld, %d);"
            "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id,"
            " api_id) VALUES(%d, 1, 1, 0, 7, %ld, %ld, %d, %d);",
            i + 1, start - 5000, start - 2000, i + 1, i + 1, start, start + ns, name, i + 1);
    }
    sqlite3 *db = session(sql);
    struct analyze_run run;
    run_rule(db, "launch_bound", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 24000);
    ASSERT_EQ(res->findings[0].count, 12);
    ASSERT(strstr(res->findings[0].summary, "tiny: 12 of 12 launches"));
    ASSERT_EQ(res->findings[0].evidence_count, 2);
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 10000); /* the first short launch */
    ASSERT(res->note && strstr(res->note, "29 kernel launches"));
    /* every launch starts 5000 ns after its call: bucket [4608, 5120), middle 4864 */
    ASSERT(strstr(res->note, "p50 4.864 µs, p90 4.864 µs, p99 4.864 µs"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* "iter" repeats 3 times with 2 cudaMalloc each (their cuMemAlloc_v2 twins share the
 * correlation and count once): 6 calls of 100 ns. "gen" holds 10 calls of 50 ns. "setup"
 * holds 3 once: not a loop. */
static void alloc_in_loop_finds_repeated_and_crowded_ranges(void)
{
    char sql[16384];
    size_t used = (size_t)snprintf(
        sql, sizeof sql,
        "INSERT INTO strings VALUES(1, 'iter'), (2, 'gen'), (3, 'setup'), (4, 'cudaMalloc'),"
        " (5, 'cuMemAlloc_v2');"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
        " end_thread_id, start_ns, end_ns) VALUES(1, 1, 1, 0, 0, 1, 1, 0, 1000),"
        " (2, 1, 1, 0, 0, 1, 1, 2000, 3000), (3, 1, 1, 0, 0, 1, 1, 4000, 5000),"
        " (4, 1, 2, 0, 0, 1, 1, 10000, 20000), (5, 1, 3, 0, 0, 1, 1, 30000, 40000);");
    int id = 1;
    for (int r = 1; r <= 3; r++)
        for (int k = 0; k < 2; k++, id += 2) {
            long s = (r - 1) * 2000L + k * 300 + 10;
            used += (size_t)snprintf(
                sql + used, sizeof sql - used,
                "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
                " correlation_id, nvtx_range_id) VALUES(%d, 1, 1, 0, 4, %ld, %ld, %d, %d),"
                " (%d, 1, 1, 1, 5, %ld, %ld, %d, %d);",
                id, s, s + 100, id, r, id + 1, s + 10, s + 90, id, r);
        }
    for (int k = 0; k < 10; k++, id++)
        used += (size_t)snprintf(sql + used, sizeof sql - used,
                                 "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id,"
                                 " start_ns, end_ns, correlation_id, nvtx_range_id) VALUES(%d, 1,"
                                 " 1, 0, 4, %d, %d, %d, 4);",
                                 id, 10000 + 100 * k, 10050 + 100 * k, id);
    for (int k = 0; k < 3; k++, id++)
        used += (size_t)snprintf(sql + used, sizeof sql - used,
                                 "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id,"
                                 " start_ns, end_ns, correlation_id, nvtx_range_id) VALUES(%d, 1,"
                                 " 1, 0, 4, %d, %d, %d, 5);",
                                 id, 30000 + 100 * k, 30050 + 100 * k, id);
    sqlite3 *db = session(sql);
    struct analyze_run run;
    run_rule(db, "alloc_in_loop", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    expect_cost(&res->findings[0], 600);
    ASSERT_EQ(res->findings[0].count, 6);
    ASSERT(
        strstr(res->findings[0].summary, "inside :iter (3 instances with calls, up to 2 in one)"));
    ASSERT_EQ(res->findings[0].evidence_count, 6);
    ASSERT_STR_EQ(res->findings[0].evidence[0].name, "cudaMalloc");
    expect_cost(&res->findings[1], 500);
    ASSERT_EQ(res->findings[1].count, 10);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Four streams created by the program (7..10), every copy and kernel on stream 7: copies
 * 3000 ns, kernels 5000 ns, so overlapping them could save 3000 ns. Stream 11, the driver's
 * own (CUPTI reports it, the program never created it), does not count. */
static void stream_use_flags_streams_created_but_unused(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'k'), (2, 'chunks 0');"
        "INSERT INTO cuda_streams(process_id, context, stream, gpu_id, is_default, name_id) VALUES"
        " (1, 1, 1, 1, 1, NULL), (1, 1, 7, 1, 0, 2), (1, 1, 8, 1, 0, NULL), (1, 1, 9, 1, 0, NULL),"
        " (1, 1, 10, 1, 0, NULL), (1, 1, 11, 1, 0, NULL);"
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES"
        " (1, 100, 1, 7), (1, 101, 1, 8), (1, 102, 1, 9), (1, 103, 1, 10);"
        "INSERT INTO kernels(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
        " name_id) VALUES(1, 1, 1, 0, 1, 7, 2000, 4500, 1), (2, 1, 1, 0, 1, 7, 6000, 8500, 1);"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async) VALUES"
        " (1, 1, 1, 0, 1, 7, 0, 2000, 'HtoD', 1, 'pinned', 'device', 1),"
        " (2, 1, 1, 0, 1, 7, 4500, 5500, 'HtoD', 1, 'pinned', 'device', 1);");
    struct analyze_run run;
    run_rule(db, "stream_use", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 3000);
    ASSERT(strstr(res->findings[0].summary, "created 4 streams but ran all its work on stream 7"));
    ASSERT_EQ(res->findings[0].evidence_count, 1);
    ASSERT_EQ(res->findings[0].evidence[0].stream, 7);
    ASSERT_STR_EQ(res->findings[0].evidence[0].name, "chunks 0");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* The tutorial's bug: one stream created (13) and used for chunks 0..2 whose NVTX ranges
 * are numbered: copies of 1000 ns in "H2D Stream i", kernels of 2000 ns in "Sum Stream i";
 * plus one copy on the NULL stream 1 (not a created stream, though its context is unknown).
 * Overlap could save min(3000, 6000). */
static void stream_use_flags_numbered_chunks_on_one_stream(void)
{
    char sql[8192];
    size_t used = (size_t)snprintf(
        sql, sizeof sql,
        "INSERT INTO strings VALUES(1, 'k'), (2, 'H2D Stream 0'), (3, 'H2D Stream 1'),"
        " (4, 'H2D Stream 2'), (5, 'Sum Stream 0'), (6, 'Sum Stream 1'), (7, 'Sum Stream 2');"
        /* the NULL stream 1 of a context CUPTI never described: is_default unknown */
        "INSERT INTO cuda_streams(process_id, context, stream, gpu_id, is_default) VALUES"
        " (1, 1, 1, 1, NULL), (1, 1, 13, 1, 0);"
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES"
        " (1, 100, 1, 13);"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async) VALUES(9, 1, 1, 0, 1, 1, 90000, 91000,"
        " 'HtoD', 1, 'pinned', 'device', 0);");
    for (int i = 0; i < 3; i++)
        used += (size_t)snprintf(
            sql + used, sizeof sql - used,
            "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
            " end_thread_id, start_ns, end_ns) VALUES(%d, 1, %d, 0, 0, 1, 1, %d, %d),"
            " (%d, 1, %d, 0, 0, 1, 1, %d, %d);"
            "INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
            " copy_kind, bytes, src_kind, dst_kind, is_async, nvtx_range_id) VALUES(%d, 1, 1, 0,"
            " 1, 13, %d, %d, 'HtoD', 1, 'pinned', 'device', 1, %d);"
            "INSERT INTO kernels(id, process_id, gpu_id, device, context, stream, start_ns,"
            " end_ns, name_id, nvtx_range_id) VALUES(%d, 1, 1, 0, 1, 13, %d, %d, 1, %d);",
            2 * i + 1, 2 + i, i * 10000, i * 10000 + 1000, 2 * i + 2, 5 + i, i * 10000 + 1000,
            i * 10000 + 3000, i + 1, i * 10000, i * 10000 + 1000, 2 * i + 1, i + 1,
            i * 10000 + 1000, i * 10000 + 3000, 2 * i + 2);
    sqlite3 *db = session(sql);
    struct analyze_run run;
    run_rule(db, "stream_use", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 3000);
    ASSERT(strstr(res->findings[0].summary, "2 families of numbered NVTX ranges (one per chunk, "
                                            "e.g. 'H2D Stream 0'..'H2D Stream 2') put all their "
                                            "GPU work on stream 13"));
    ASSERT_EQ(res->findings[0].count, 6);
    ASSERT_EQ(res->findings[0].evidence_count, 2);
    ASSERT_STR_EQ(res->findings[0].evidence[1].range, "Sum Stream 0..Sum Stream 2");
    ASSERT_STR_EQ(res->findings[0].evidence[1].detail,
                  "3 indices: 0 copies, 3 kernels, all on stream 13");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* One stream whose copies (4000 ns) and kernels (6000 ns) never overlap: 4000 ns; the same
 * with a copy on another stream running beside a kernel: overlap happens, no finding. */
static void stream_use_flags_copies_never_overlapping_kernels(void)
{
    static const char rows[] =
        "INSERT INTO strings VALUES(1, 'k');"
        "INSERT INTO cuda_streams(process_id, context, stream, gpu_id, is_default) VALUES"
        " (1, 1, 5, 1, 0);"
        "INSERT INTO cuda_stream_handles(process_id, handle, context, stream) VALUES"
        " (1, 100, 1, 5);"
        "INSERT INTO kernels(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
        " name_id) VALUES(1, 1, 1, 0, 1, 5, 4000, 10000, 1);"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns, end_ns,"
        " copy_kind, bytes, src_kind, dst_kind, is_async) VALUES"
        " (1, 1, 1, 0, 1, 5, 0, 4000, 'HtoD', 1, 'pinned', 'device', 1);";
    sqlite3 *db = session(rows);
    struct analyze_run run;
    run_rule(db, "stream_use", &run);
    ASSERT_EQ(run.results[0].count, 1);
    expect_cost(&run.results[0].findings[0], 4000);
    ASSERT(strstr(run.results[0].findings[0].summary, "stream 5 ran 1 copies"));
    analyze_run_release(&run);
    sqlite3_close(db);
    db = session(rows);
    exec(db, "INSERT INTO memcpys(id, process_id, gpu_id, device, context, stream, start_ns,"
             " end_ns, copy_kind, bytes, src_kind, dst_kind, is_async) VALUES"
             " (2, 1, 1, 0, 1, 6, 5000, 9000, 'HtoD', 1, 'pinned', 'device', 1);");
    run_rule(db, "stream_use", &run);
    ASSERT_EQ(run.results[0].count, 0);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* An fp16 SIMT GEMM (2 launches of 10 µs) without PyTorch markers: found by name; cost its
 * time x (1 - 67e12 / 989e12). An fp16 Tensor Core GEMM (h884) is not flagged. */
static void tensor_cores_flags_half_gemms_off_tensor_cores_by_name(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'maxwell_fp16_sgemm_fp16_128x64_nn'),"
        " (2, 'volta_h884gemm_128x128_ldg8_nn');"
        "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id)"
        " VALUES(1, 1, 1, 0, 7, 1000, 11000, 1), (2, 1, 1, 0, 7, 20000, 30000, 1),"
        " (3, 1, 1, 0, 7, 40000, 90000, 2);");
    struct analyze_run run;
    run_rule(db, "tensor_cores", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 20000.0 * (1.0 - 67e12 / 989e12));
    ASSERT(strstr(res->findings[0].summary, "fp16 GEMM/convolution kernel "
                                            "maxwell_fp16_sgemm_fp16_128x64_nn ran 2 times"));
    ASSERT(res->note &&
           strstr(res->note, "needs GPU hardware metrics (lantern profile --gpu-metrics)"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* With emit_nvtx markers, the shape comes from the op: aten::mm of [1000, 1023] x [1023, 512]
 * has K = 1023, not a multiple of 8 (the kernels report's no-tc-align8 hint). */
static void tensor_cores_names_the_misaligned_dimension_from_op_shapes(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'maxwell_fp16_sgemm_fp16_128x64_nn'),"
        " (2, 'aten::mm, seq = 1, op_id = 1, sizes = [[1000, 1023], [1023, 512]]');"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, end_thread_id,"
        " start_ns, end_ns) VALUES(1, 1, 2, 0, 0, 1, 1, 0, 20000);"
        "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id,"
        " grid_x, grid_y, grid_z, block_x, block_y, block_z, nvtx_range_id)"
        " VALUES(1, 1, 1, 0, 7, 1000, 11000, 1, 200, 1, 1, 256, 1, 1, 1);");
    struct analyze_run run;
    run_rule(db, "tensor_cores", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    expect_cost(&res->findings[0], 10000.0 * (1.0 - 67e12 / 989e12));
    ASSERT(strstr(res->findings[0].summary, "mm (M=1000,N=512,K=1023,fp16) ran "
                                            "maxwell_fp16_sgemm_fp16_128x64_nn without Tensor "
                                            "Cores 1 times"));
    ASSERT(strstr(res->findings[0].summary, "not a multiple of 8"));
    ASSERT_EQ(res->findings[0].evidence_count, 1);
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 1000);
    ASSERT_EQ(res->findings[0].evidence[0].duration_ns, 10000);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* A single-thread kernel (1 block of 1 thread, 20 µs): 1 of 132 SMs busy, cost
 * 20000 x 131/132 (its theoretical occupancy, per SM, is 32 one-warp blocks of 64 warps). A full
 * grid with 100 KB of shared memory per block: 2 blocks of 1 warp per SM, 3.1 % occupancy, cost not
 * estimated. A 1-block kernel of 5 µs: under 10 µs. */
static void small_grid_flags_single_thread_kernels_and_low_occupancy(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'single_thread_sum'), (2, 'smem_hog'), (3, 'short');"
        "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id,"
        " grid_x, grid_y, grid_z, block_x, block_y, block_z, regs_per_thread, static_smem,"
        " dynamic_smem) VALUES"
        " (1, 1, 1, 0, 7, 1000, 21000, 1, 1, 1, 1, 1, 1, 1, 16, 0, 0),"
        " (2, 1, 1, 0, 7, 30000, 40000, 2, 1000, 1, 1, 32, 1, 1, 32, 0, 100000),"
        " (3, 1, 1, 0, 7, 50000, 55000, 3, 1, 1, 1, 64, 1, 1, 16, 0, 0);");
    struct analyze_run run;
    run_rule(db, "small_grid", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    expect_cost(&res->findings[0], 20000.0 * 131.0 / 132.0);
    ASSERT(strstr(res->findings[0].summary, "single_thread_sum: 1 block of 1 threads on a "
                                            "132-SM GPU (theoretical occupancy 50.0 %)"));
    ASSERT_EQ(res->findings[0].evidence[0].start_ns, 1000);
    expect_cost(&res->findings[1], 0);
    ASSERT(strstr(res->findings[1].summary, "smem_hog: 1000 blocks of 32 threads on a 132-SM GPU "
                                            "(theoretical occupancy 3.1 %)"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* 100 W all along (counter +10 mJ every 100 µs): 0.1 J in the 1 ms run, the GPU busy in
 * "busy" [0, 500 µs] and idle in "idle" [500 µs, 1 ms]: "idle" has half the energy and no
 * GPU work (flagged: 0.05 J could be saved); "busy" has the run's J per busy second. Samples
 * at 200 and 300 µs say SW power cap at 1000 MHz (max 2000): a 200 µs period, 100 µs lost. A
 * GPU-idle reason (0x1) is no throttling. */
static void energy_flags_idle_burning_ranges_and_throttling(void)
{
    char sql[8192];
    size_t used = (size_t)snprintf(
        sql, sizeof sql,
        "INSERT INTO strings VALUES(1, 'busy'), (2, 'idle'), (3, 'k');"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, end_thread_id,"
        " start_ns, end_ns) VALUES(1, 1, 1, 0, 0, 1, 1, 0, 500000),"
        " (2, 1, 2, 0, 0, 1, 1, 500000, 1000000);"
        "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id)"
        " VALUES(1, 1, 1, 0, 7, 0, 500000, 3);");
    for (int i = 0; i <= 10; i++) {
        long ts = 100000L * i;
        int reasons = i == 2 || i == 3 ? 0x4 : i == 6 ? 0x1 : 0;
        used += (size_t)snprintf(sql + used, sizeof sql - used,
                                 "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj,"
                                 " sm_clock_mhz, throttle_reasons, energy_uncertainty_ns)"
                                 " VALUES(1, %ld, 100000, %ld, %d, %d, 0);",
                                 ts, 1000 + 10L * i, reasons == 0x4 ? 1000 : 2000, reasons);
    }
    sqlite3 *db = session(sql);
    struct analyze_run run;
    run_rule(db, "energy", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    ASSERT(strstr(res->findings[0].summary, ":idle: 0.050 J"));
    ASSERT(fabs(res->findings[0].cost_j - 0.05) < 1e-9);
    expect_cost(&res->findings[1], 100000);
    ASSERT(strstr(res->findings[1].summary, "GPU 0 was throttled (SW power cap) for 200.000 µs in "
                                            "1 period"));
    ASSERT_EQ(res->findings[1].evidence_count, 1);
    ASSERT_EQ(res->findings[1].evidence[0].start_ns, 200000);
    ASSERT_EQ(res->findings[1].evidence[0].duration_ns, 200000);
    ASSERT_STR_EQ(res->findings[1].evidence[0].name, "SW power cap");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* ---- across ranks --------------------------------------------------------------------------- */

/* A job of three ranks as `lantern merge` leaves it (a 1 ms session): rank 0 (pid 100) and
 * rank 1 (pid 200) on host a with GPUs 1 and 2 (NVML 0 and 1), rank 2 (pid 300) on host b with
 * GPU 3 (NVML 0), each with a CUDA context on its GPU; then the test's rows. Kernel names:
 * 1 an NCCL all-reduce, 2 a GEMM, 3 an NCCL all-gather (mangled, as CUPTI may give it). */
static sqlite3 *ranks_session(const char *rows)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec(db, import_schema_sql);
    exec(db, "INSERT INTO meta VALUES('schema_version', 9), ('start_ns', 0), ('end_ns', 1000000),"
             " ('command', 'train.py'), ('host', 'a,b');"
             "INSERT INTO processes(id, pid, host, rank, name, start_ns, end_ns, clean_exit) VALUES"
             " (1, 100, 'a', 0, 'train.py', 0, 1000000, 1), (2, 200, 'a', 1, 'train.py', 0,"
             " 1000000, 1), (3, 300, 'b', 2, 'train.py', 0, 1000000, 1);"
             "INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 100), (2, 2, 200), (3, 3, 300);"
             "INSERT INTO gpus(id, uuid, name, nvml_index, sm_count) VALUES(1, 'GPU-a0', 'H100', 0,"
             " 132), (2, 'GPU-a1', 'H100', 1, 132), (3, 'GPU-b0', 'H100', 0, 132);"
             "INSERT INTO process_gpus VALUES(1, 0, 1), (2, 0, 2), (3, 0, 3);"
             "INSERT INTO cuda_contexts(process_id, context, gpu_id, device) VALUES(1, 1, 1, 0),"
             " (2, 1, 2, 0), (3, 1, 3, 0);"
             "INSERT INTO strings VALUES(1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*,"
             " unsigned long, ncclWork*)'), (2, 'gemm'),"
             " (3, '_Z31ncclDevKernel_AllGather_RING_LLP11ncclDevCommmP8ncclWork'), (4, 'step');");
    exec(db, rows);
    return db;
}

/* A kernel row: id, process (= its GPU), start and end in µs, name id. */
#define KERNEL(id, p, s, e, name)                                                                  \
    "(" #id ", " #p ", " #p ", 0, 7, " #s "000, " #e "000, " #name ")"
#define KERNELS                                                                                    \
    "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id) VALUES"

/* Four all-reduces per rank; each ends at the same moment on every rank (k x 200 + 200 µs),
 * the ranks arrive (µs):   k=0: 100 110 150   k=1: 300 305 360   k=2: 520 500 510
 * k=3: 700 702 745. Rank 2 is last at k = 0, 1, 3 (3 of 4: 75 % >= 60 %) with lags
 * (last - second-last) 40, 55 and 43 µs: 138 µs (13.8 % of the run), 46 µs on average; the
 * others' combined wait 90 + 115 + 88 = 293 µs. Rank 0 is last once (k=2, 10 µs). Steps
 * [0, 400] and [400, 900] µs on every rank: step 1 holds k = 0, 1 (rank 2: 95 µs), step 2 k = 2
 * (rank 0: 10) and k = 3 (rank 2: 43): rank 2 cost both steps. The all-gather ran twice on
 * ranks 0 and 2 but once on rank 1: not matched, and said so. */
static void stragglers_names_the_rank_last_at_most_collectives(void)
{
    sqlite3 *db = ranks_session(
        KERNELS KERNEL(1, 1, 100, 200, 1) "," KERNEL(2, 2, 110, 200, 1) "," KERNEL(3, 3, 150, 200, 1)
        "," KERNEL(4, 1, 300, 400, 1) "," KERNEL(5, 2, 305, 400, 1) "," KERNEL(6, 3, 360, 400, 1)
        "," KERNEL(7, 1, 520, 600, 1) "," KERNEL(8, 2, 500, 600, 1) "," KERNEL(9, 3, 510, 600, 1)
        "," KERNEL(10, 1, 700, 800, 1) "," KERNEL(11, 2, 702, 800, 1) "," KERNEL(12, 3, 745, 800, 1)
        "," KERNEL(13, 1, 810, 820, 3) "," KERNEL(14, 1, 830, 840, 3) "," KERNEL(15, 3, 810, 820, 3)
        "," KERNEL(16, 3, 830, 840, 3) "," KERNEL(17, 2, 810, 820, 3) ";"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, start_ns,"
        " end_ns) VALUES(1, 1, 4, 0, 0, 1, 0, 400000), (2, 1, 4, 0, 0, 1, 400000, 900000),"
        " (3, 2, 4, 0, 0, 2, 0, 400000), (4, 2, 4, 0, 0, 2, 400000, 900000),"
        " (5, 3, 4, 0, 0, 3, 0, 400000), (6, 3, 4, 0, 0, 3, 400000, 900000);");
    struct analyze_run run;
    run_rule(db, "stragglers", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    const struct analyze_finding *f = &res->findings[0];
    expect_cost(f, 138000);
    ASSERT_EQ(f->count, 3);
    ASSERT(strstr(f->summary, "rank 2 (pid 300, b, GPU 0) arrived last at 3 of the 4 collectives "
                              "it took part in; the others waited 46.000 µs for it each time"));
    ASSERT(strstr(f->summary, "138.000 µs in all (13.8 % of the run; 293.000 µs of the other "
                              "ranks' time together); the last in 2 of 2 steps of 'step' "
                              "(69.000 µs per step)"));
    ASSERT_EQ(f->evidence_count, 3); /* the longest lag first */
    ASSERT_EQ(f->evidence[0].start_ns, 360000);
    ASSERT_EQ(f->evidence[0].duration_ns, 55000);
    ASSERT_EQ(f->evidence[0].pid, 300);
    ASSERT_EQ(f->evidence[0].gpu, 0);
    ASSERT(strstr(f->evidence[0].detail, "AllReduce #2, step 1: rank 2 (pid 300, b, GPU 0) arrived "
                                         "last, 55.000 µs after rank 1 (pid 200, a, GPU 1) (the "
                                         "second-last) and 60.000 µs after rank 0"));
    ASSERT_EQ(f->evidence[1].duration_ns, 43000);
    ASSERT_EQ(f->evidence[2].duration_ns, 40000);
    ASSERT(strstr(res->note, "4 collectives matched over 3 ranks (AllReduce 4), 4 with one rank "
                             "last; arrival spread (last - first) 43.750 µs on average, 60.000 µs "
                             "at most; AllGather not matched: the ranks ran different numbers of "
                             "it (rank 0 (pid 100, a, GPU 0): 2, rank 1 (pid 200, a, GPU 1): 1, "
                             "rank 2 (pid 300, b, GPU 0): 2); the ranks ran on 2 hosts"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Steps [0, 400], [400, 800] and [800, 1000] µs on every rank, all-reduces arriving (µs)
 * k=0: 100 110 150   k=1: 300 305 360 (step 1: rank 2 last, 40 + 55)   k=2: 500 540 510
 * k=3: 700 702 720 (step 2: rank 1 last by 30, rank 2 by 18). Rank 2, last 3 times with
 * 113 µs, is flagged; it cost step 1 only (rank 1 lagged more in step 2), and the steps counted
 * end with the last one in which a rank was last: step 3 ran no collective. */
static void stragglers_counts_the_steps_a_rank_cost_most(void)
{
    sqlite3 *db = ranks_session(
        KERNELS KERNEL(1, 1, 100, 200, 1) "," KERNEL(2, 2, 110, 200, 1) "," KERNEL(3, 3, 150, 200, 1)
        "," KERNEL(4, 1, 300, 400, 1) "," KERNEL(5, 2, 305, 400, 1) "," KERNEL(6, 3, 360, 400, 1)
        "," KERNEL(7, 1, 500, 600, 1) "," KERNEL(8, 2, 540, 600, 1) "," KERNEL(9, 3, 510, 600, 1)
        "," KERNEL(10, 1, 700, 800, 1) "," KERNEL(11, 2, 702, 800, 1) "," KERNEL(12, 3, 720, 800, 1)
        ";"
        "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id, start_ns,"
        " end_ns) VALUES(1, 1, 4, 0, 0, 1, 0, 400000), (2, 1, 4, 0, 0, 1, 400000, 800000),"
        " (3, 1, 4, 0, 0, 1, 800000, 1000000), (4, 2, 4, 0, 0, 2, 0, 400000),"
        " (5, 2, 4, 0, 0, 2, 400000, 800000), (6, 2, 4, 0, 0, 2, 800000, 1000000),"
        " (7, 3, 4, 0, 0, 3, 0, 400000), (8, 3, 4, 0, 0, 3, 400000, 800000),"
        " (9, 3, 4, 0, 0, 3, 800000, 1000000);");
    struct analyze_run run;
    run_rule(db, "stragglers", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    const struct analyze_finding *f = &res->findings[0];
    expect_cost(f, 113000);
    ASSERT(strstr(f->summary, "rank 2 (pid 300, b, GPU 0) arrived last at 3 of the 4 collectives"));
    ASSERT(strstr(f->summary, "; the last in 1 of 2 steps of 'step' (56.500 µs per step)"));
    ASSERT_EQ(f->evidence_count, 3);
    ASSERT(strstr(f->evidence[2].detail, "AllReduce #4, step 2: rank 2"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Per rank, NCCL and other kernels (µs): rank 0 NCCL [100, 300], compute [0, 150] and
 * [250, 400]: half its 200 µs of NCCL overlapped, 100 exposed = 25 % of its 400 µs span;
 * rank 1 NCCL [100, 200], compute [0, 190] and [300, 1000]: 10 exposed = 1 % of 1000 (under
 * 10 %); rank 2 NCCL [500, 900] after compute [100, 500]: 400 exposed = 50 % of 800. Cost: the
 * least exposed, 10 µs (what every rank pays). */
static void comm_overlap_measures_exposed_nccl_time_per_rank(void)
{
    sqlite3 *db = ranks_session(
        KERNELS KERNEL(1, 1, 0, 150, 2) "," KERNEL(2, 1, 100, 300, 1) "," KERNEL(3, 1, 250, 400, 2)
        "," KERNEL(4, 2, 0, 190, 2) "," KERNEL(5, 2, 100, 200, 1) "," KERNEL(6, 2, 300, 1000, 2)
        "," KERNEL(7, 3, 100, 500, 2) "," KERNEL(8, 3, 500, 900, 1) ";");
    struct analyze_run run;
    run_rule(db, "comm_overlap", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    const struct analyze_finding *f = &res->findings[0];
    expect_cost(f, 10000);
    ASSERT_EQ(f->count, 2);
    ASSERT(strstr(f->summary, ">= 10 % of the GPU span on 2 of 3 ranks (worst 50.0 %); every rank "
                              "has at least 10.000 µs"));
    ASSERT_EQ(f->evidence_count, 2);
    ASSERT_EQ(f->evidence[0].pid, 300);
    ASSERT_EQ(f->evidence[0].duration_ns, 400000);
    ASSERT_EQ(f->evidence[0].start_ns, 100000);
    ASSERT_STR_EQ(f->evidence[0].name, "rank 2");
    ASSERT(strstr(f->evidence[0].detail, "NCCL 400.000 µs, 0.0 % of it overlapped by other kernels, "
                                         "400.000 µs exposed = 50.0 % of its 800.000 µs"));
    ASSERT_EQ(f->evidence[1].pid, 100);
    ASSERT(strstr(f->evidence[1].detail, "NCCL 200.000 µs, 50.0 % of it overlapped by other "
                                         "kernels, 100.000 µs exposed = 25.0 % of its 400.000 µs"));
    ASSERT(strstr(res->note, "3 ranks with NCCL kernels: exposed communication from 1.0 % to "
                             "50.0 % of their GPU span; least exposed 10.000 µs (rank 1"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* GPU work per rank (µs): rank 0 [0, 100] [150, 1000]: 50 idle of 1000 (5 %); rank 1 [0, 500]
 * [520, 1000]: 2 %; rank 2 [0, 200] [600, 1000]: 40 % in one 400 µs gap; a fourth rank (pid
 * 400, host b, GPU 4) a copy [0, 300] then a kernel [300, 1000]: 0 %. Rank 2 against the
 * others' median (2 %): 40 >= 2 x 2 and 38 points above: flagged, cost 38 % of 1000 µs. Rank
 * 0 (5 % against 2 %) is twice the median but only 3 points above it: not flagged. */
static void rank_idle_names_the_rank_whose_gpu_waits_most(void)
{
    sqlite3 *db = ranks_session(
        "INSERT INTO processes(id, pid, host, rank, start_ns, end_ns, clean_exit) VALUES"
        " (4, 400, 'b', 3, 0, 1000000, 1);"
        "INSERT INTO gpus(id, uuid, nvml_index) VALUES(4, 'GPU-b1', 1);"
        KERNELS KERNEL(1, 1, 0, 100, 2) "," KERNEL(2, 1, 150, 1000, 1) "," KERNEL(3, 2, 0, 500, 2)
        "," KERNEL(4, 2, 520, 1000, 1) "," KERNEL(5, 3, 0, 200, 2) "," KERNEL(6, 3, 600, 1000, 1)
        "," KERNEL(7, 4, 300, 1000, 2) ";"
        "INSERT INTO memcpys(id, process_id, gpu_id, device, stream, start_ns, end_ns, copy_kind,"
        " bytes, src_kind, dst_kind, is_async) VALUES(1, 4, 4, 0, 7, 0, 300000, 'HtoD', 1000,"
        " 'pinned', 'device', 1);");
    struct analyze_run run;
    run_rule(db, "rank_idle", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    const struct analyze_finding *f = &res->findings[0];
    expect_cost(f, 380000);
    ASSERT_EQ(f->count, 4);
    ASSERT(strstr(f->summary, "rank 2 (pid 300, b, GPU 0): its GPU was idle 40.0 % of its span, "
                              "against a median of 2.0 % on the other ranks"));
    ASSERT_EQ(f->evidence_count, 4); /* the culprit, then every rank, most idle first */
    ASSERT_EQ(f->evidence[0].pid, 300);
    ASSERT_EQ(f->evidence[0].duration_ns, 400000);
    ASSERT(strstr(f->evidence[0].detail, "GPU idle 400.000 µs of its 1.000 ms (40.0 %; the other "
                                         "ranks' median 2.0 %), 1 gaps >= 100 us"));
    ASSERT_EQ(f->evidence[1].pid, 100);
    ASSERT_EQ(f->evidence[2].pid, 200);
    ASSERT_EQ(f->evidence[3].pid, 400);
    ASSERT_EQ(f->evidence[3].duration_ns, 0);
    ASSERT(strstr(res->note, "4 ranks: GPU idle between each rank's first and last work from "
                             "0.0 % to 40.0 % of it (median 3.5 %)"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Processes without a rank (not started by torchrun or mpirun) are named by their pid, in the
 * summary and in the evidence rows: rank 2's 40 % idle of the test above, against the median
 * of 5 % and 2 % (3.5 %), is flagged as pid 300's. */
static void rank_idle_names_a_process_without_a_rank_by_its_pid(void)
{
    sqlite3 *db = ranks_session(
        "UPDATE processes SET rank = NULL;"
        KERNELS KERNEL(1, 1, 0, 100, 2) "," KERNEL(2, 1, 150, 1000, 1) "," KERNEL(3, 2, 0, 500, 2)
        "," KERNEL(4, 2, 520, 1000, 1) "," KERNEL(5, 3, 0, 200, 2) "," KERNEL(6, 3, 600, 1000, 1)
        ";");
    struct analyze_run run;
    run_rule(db, "rank_idle", &run);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 1);
    const struct analyze_finding *f = &res->findings[0];
    ASSERT(strstr(f->summary, "pid 300 (b, GPU 0): its GPU was idle 40.0 % of its span, against "
                              "a median of 3.5 % on the other ranks"));
    ASSERT_EQ(f->evidence_count, 3);
    ASSERT_STR_EQ(f->evidence[0].name, "pid 300");
    ASSERT_EQ(f->evidence[0].start_ns, 0);
    ASSERT_EQ(f->evidence[0].duration_ns, 400000);
    ASSERT_EQ(f->evidence[0].gpu, 0);
    ASSERT_STR_EQ(f->evidence[1].name, "pid 100");
    ASSERT_STR_EQ(f->evidence[2].name, "pid 200");
    ASSERT_EQ(f->evidence[2].gpu, 1);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* One process with NCCL kernels on one GPU (the session of the other tests): the cross-rank
 * rules find nothing, raise no error and say why. */
static void cross_rank_rules_are_silent_on_one_process(void)
{
    sqlite3 *db = session(
        "INSERT INTO strings VALUES(1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'), (2, 'gemm');"
        "INSERT INTO kernels(id, process_id, gpu_id, device, stream, start_ns, end_ns, name_id)"
        " VALUES(1, 1, 1, 0, 7, 0, 100000, 2), (2, 1, 1, 0, 7, 300000, 900000, 1);");
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    ASSERT_EQ(analyze_run(db, "stragglers,comm_overlap,rank_idle", 0, &run, &bad, error,
                          sizeof error),
              0);
    ASSERT_EQ(run.count, 3);
    for (int i = 0; i < run.count; i++) {
        ASSERT_EQ(run.results[i].count, 0);
        ASSERT(strstr(run.results[i].note, "GPU work of 1 process: the cross-rank rules compare "
                                           "the ranks of a job"));
    }
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* NCCL kernels are known by name in every form CUPTI and the demangler give (the parser is
 * nccl_sum's, model/nccl.h: tests/cuda_reports/test_nccl_sum.c has the rest of its fields). */
static void nccl_kernels_are_recognised_by_name(void)
{
    struct nccl_kernel k;
    ASSERT(nccl_parse_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", &k));
    ASSERT_STR_EQ(k.collective, "AllReduce");
    ASSERT(nccl_parse_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE(ncclDevComm*, "
                             "unsigned long, ncclWork*)",
                             &k));
    ASSERT_STR_EQ(k.collective, "ReduceScatter");
    ASSERT(nccl_parse_kernel("void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", &k));
    ASSERT_STR_EQ(k.collective, "AllGather");
    ASSERT(nccl_parse_kernel("_Z21ncclDevKernel_GenericP11ncclDevCommmP8ncclWork", &k));
    ASSERT_STR_EQ(k.collective, "Generic"); /* the mangled name's length ends it, not a separator */
    ASSERT(nccl_parse_kernel("ncclDevKernel_SendRecv", &k));
    ASSERT_STR_EQ(k.collective, "SendRecv");
    /* NCCL 2.27's symmetric kernels */
    ASSERT(nccl_parse_kernel("ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16(x)", &k));
    ASSERT_STR_EQ(k.collective, "AllReduce");
    ASSERT(!nccl_parse_kernel("gemm_ncclDevKernel_AllReduce", &k));
    ASSERT(!nccl_parse_kernel("ncclDevKernel_", &k));
    ASSERT(!nccl_parse_kernel("_Z99ncclDevKernel_AllReduce", &k)); /* cut short */
    /* the timeline keeps a collective's whole name (the old "no room" case cannot arise):
     * timeline_ranks.c asserts its type slot is as long as nccl_kernel.collective */
    ASSERT(nccl_parse_kernel("ncclDevKernel_AllReduce", &k));
    ASSERT_STR_EQ(k.collective, "AllReduce");
}

/* An NVTX-only session: every rule runs, finds nothing and says why where it could not
 * look; an unknown rule name is refused and named. */
static void every_rule_runs_on_an_nvtx_only_session(void)
{
    sqlite3 *db = session("INSERT INTO strings VALUES(1, 'step');"
                          "INSERT INTO ranges(id, process_id, name_id, style, depth,"
                          " start_thread_id, end_thread_id, start_ns, end_ns)"
                          " VALUES(1, 1, 1, 0, 0, 1, 1, 0, 1000);");
    struct analyze_run run;
    const char *bad = NULL;
    char error[256];
    ASSERT_EQ(analyze_run(db, NULL, 0, &run, &bad, error, sizeof error), 0);
    int rules = 0;
    for (const struct analyze_rule *r = analyze_rules; r->name; r++)
        rules++;
    ASSERT_EQ(run.count, rules);
    for (int i = 0; i < run.count; i++)
        ASSERT_EQ(run.results[i].count, 0);
    ASSERT_STR_EQ(run.results[3].rule->name, "gpu_idle");
    ASSERT_STR_EQ(run.results[3].note, "no GPU work in this database (profile with -t cuda)");
    analyze_run_release(&run);
    ASSERT_EQ(analyze_run(db, "gpu_idle,nope", 0, &run, &bad, error, sizeof error), -EINVAL);
    ASSERT_STR_EQ(bad, "nope");
    analyze_run_release(&run);
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"pageable_memcpy_costs_against_the_runs_pinned_rate",
         pageable_memcpy_costs_against_the_runs_pinned_rate},
        {"sync_memops_costs_the_cpu_time_of_the_calls",
         sync_memops_costs_the_cpu_time_of_the_calls},
        {"sync_api_reports_threads_blocked_over_the_threshold",
         sync_api_reports_threads_blocked_over_the_threshold},
        {"gpu_idle_classifies_gaps_as_host_wait_sync_and_other",
         gpu_idle_classifies_gaps_as_host_wait_sync_and_other},
        {"gpu_utilization_lists_low_windows_as_stretches",
         gpu_utilization_lists_low_windows_as_stretches},
        {"launch_bound_flags_kernels_shorter_than_their_launch",
         launch_bound_flags_kernels_shorter_than_their_launch},
        {"alloc_in_loop_finds_repeated_and_crowded_ranges",
         alloc_in_loop_finds_repeated_and_crowded_ranges},
        {"stream_use_flags_streams_created_but_unused",
         stream_use_flags_streams_created_but_unused},
        {"stream_use_flags_numbered_chunks_on_one_stream",
         stream_use_flags_numbered_chunks_on_one_stream},
        {"stream_use_flags_copies_never_overlapping_kernels",
         stream_use_flags_copies_never_overlapping_kernels},
        {"tensor_cores_flags_half_gemms_off_tensor_cores_by_name",
         tensor_cores_flags_half_gemms_off_tensor_cores_by_name},
        {"tensor_cores_names_the_misaligned_dimension_from_op_shapes",
         tensor_cores_names_the_misaligned_dimension_from_op_shapes},
        {"small_grid_flags_single_thread_kernels_and_low_occupancy",
         small_grid_flags_single_thread_kernels_and_low_occupancy},
        {"energy_flags_idle_burning_ranges_and_throttling",
         energy_flags_idle_burning_ranges_and_throttling},
        {"stragglers_names_the_rank_last_at_most_collectives",
         stragglers_names_the_rank_last_at_most_collectives},
        {"stragglers_counts_the_steps_a_rank_cost_most",
         stragglers_counts_the_steps_a_rank_cost_most},
        {"comm_overlap_measures_exposed_nccl_time_per_rank",
         comm_overlap_measures_exposed_nccl_time_per_rank},
        {"rank_idle_names_the_rank_whose_gpu_waits_most",
         rank_idle_names_the_rank_whose_gpu_waits_most},
        {"rank_idle_names_a_process_without_a_rank_by_its_pid",
         rank_idle_names_a_process_without_a_rank_by_its_pid},
        {"cross_rank_rules_are_silent_on_one_process", cross_rank_rules_are_silent_on_one_process},
        {"nccl_kernels_are_recognised_by_name", nccl_kernels_are_recognised_by_name},
        {"every_rule_runs_on_an_nvtx_only_session", every_rule_runs_on_an_nvtx_only_session},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
