/* Benchmark of `lantern analyze` and `lantern report` (docs/benchmarks.md, "Analyze and
 * report"): builds a database of N events shaped like a launch-heavy CUDA loop, then times
 * the analysis (every rule, text output) and the HTML page, each written to /dev/null, in
 * this process (CPU time: user + system, the budget's "one core").
 * Usage: bench_analyze [N=10000000] [DB=/tmp/lantern_bench_analyze.db] [keep|drop] [SAMPLES=0]
 * Each iteration of the loop (7 events): an NVTX range "step", two kernel launches (a
 * 1-block kernel shorter than its launch call on stream 7, a full-grid one on stream 8) and
 * an async copy of 1 MB (pinned; every 10th pageable and synchronous), each with its API
 * call. Every 100th iteration a cudaStreamSynchronize, every 1000th a cudaMalloc and a
 * 200 µs host-side pause; NVML samples at 100 Hz. With SAMPLES, that many CPU samples of the
 * thread (-t cpu) spread evenly over the run, on 16 stacks 8 to 23 frames deep (a Python-like
 * interpreter chain under main, 16 leaves), so the host parts of the findings, the
 * cpu_bound_ranges rule and the page's flame graphs have work. The generation is not timed. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "bench_sql.h"
#include "db/import.h"
#include "html/html.h"

#define ITERATION_NS 20000
#define EVENTS_PER_ITERATION 7

static int generate(sqlite3 *db, long iterations)
{
    int64_t end = 1000000 + iterations * (int64_t)ITERATION_NS + (iterations / 1000 + 1) * 200000;
    char meta[512];
    snprintf(meta, sizeof meta,
             "BEGIN; INSERT INTO meta VALUES ('schema_version', 9), ('start_ns', 0),"
             " ('end_ns', %lld), ('command', 'bench_analyze loop'), ('trace', 'nvtx,cuda,nvml'),"
             " ('dropped_events', 0), ('import_warnings', 0);",
             (long long)end);
    if (exec_sql(db, meta) < 0 ||
        exec_sql(db, "INSERT INTO processes(id, pid, start_ns, end_ns, clean_exit) VALUES"
                 " (1, 4242, 0, 1, 1);"
                 "INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 4242);"
                 "INSERT INTO gpus(id, uuid, name, nvml_index, cc_major, sm_count,"
                 " max_threads_per_sm, max_regs_per_sm, max_smem_per_sm, max_blocks_per_sm,"
                 " peak_fp32_flops, peak_fp16_flops) VALUES (1, 'GPU-1', 'H100', 0, 9, 132,"
                 " 2048, 65536, 233472, 32, 67e12, 989e12);"
                 "INSERT INTO process_gpus VALUES (1, 0, 1);"
                 "INSERT INTO cuda_streams(process_id, context, stream, gpu_id, is_default)"
                 " VALUES (1, 1, 1, 1, 1), (1, 1, 7, 1, 0), (1, 1, 8, 1, 0);"
                 "INSERT INTO strings VALUES (1, 'step'), (2, 'cudaLaunchKernel'),"
                 " (3, 'cudaMemcpyAsync'), (4, 'cudaStreamSynchronize'), (5, 'cudaMalloc'),"
                 " (6, 'tiny_kernel'), (7, 'big_kernel'), (8, 'cudaMemcpy');") < 0)
        return -1;
    sqlite3_stmt *range, *api, *kernel, *copy, *sync, *sample;
    sqlite3_prepare_v2(db,
                       "INSERT INTO ranges(id, process_id, name_id, style, depth,"
                       " start_thread_id, end_thread_id, start_ns, end_ns) VALUES (?, 1, 1, 0, 0,"
                       " 1, 1, ?, ?)",
                       -1, &range, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns,"
                       " end_ns, correlation_id, nvtx_range_id) VALUES (?, 1, 1, 0, ?, ?, ?, ?, ?)",
                       -1, &api, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO kernels(process_id, gpu_id, device, context, stream,"
                       " correlation_id, start_ns, end_ns, name_id, grid_x, grid_y, grid_z,"
                       " block_x, block_y, block_z, regs_per_thread, static_smem, dynamic_smem,"
                       " api_id, nvtx_range_id) VALUES (1, 1, 0, 1, ?, ?, ?, ?, ?, ?, 1, 1, 256,"
                       " 1, 1, 32, 0, 0, ?, ?)",
                       -1, &kernel, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO memcpys(process_id, gpu_id, device, context, stream,"
                       " correlation_id, start_ns, end_ns, copy_kind, bytes, src_kind, dst_kind,"
                       " is_async, api_id, nvtx_range_id) VALUES (1, 1, 0, 1, 7, ?, ?, ?, 'HtoD',"
                       " 1000000, ?, 'device', ?, ?, ?)",
                       -1, &copy, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO cuda_syncs(process_id, thread_id, sync_kind, correlation_id,"
                       " start_ns, end_ns) VALUES (1, 1, 'stream', ?, ?, ?)",
                       -1, &sync, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO gpu_samples(gpu_id, ts_ns, power_mw, energy_mj, sm_clock_mhz,"
                       " gpu_util, throttle_reasons, energy_uncertainty_ns) VALUES (1, ?, ?, ?, ?,"
                       " 50, ?, 0)",
                       -1, &sample, NULL);
    int64_t t = 1000000, api_id = 1;
    for (long i = 0; i < iterations; i++) {
        if (i % 1000 == 999)
            t += 200000; /* the host pauses: a GPU gap */
        int64_t r = i + 1, corr = api_id;
        bind_step(range, 3, (int64_t[]){r, t, t + ITERATION_NS - 1000});
        bind_step(api, 6, (int64_t[]){api_id, 2, t, t + 3000, corr, r});
        bind_step(kernel, 8, (int64_t[]){7, corr, t + 4000, t + 6000, 6, 1, api_id, r});
        api_id++;
        bind_step(api, 6, (int64_t[]){api_id, 2, t + 3000, t + 6000, api_id, r});
        bind_step(kernel, 8, (int64_t[]){8, api_id, t + 6500, t + 14000, 7, 264, api_id, r});
        api_id++;
        int pageable = i % 10 == 0;
        bind_step(api, 6, (int64_t[]){api_id, pageable ? 8 : 3, t + 6000, t + 7000, api_id, r});
        sqlite3_reset(copy);
        sqlite3_bind_int64(copy, 1, api_id);
        sqlite3_bind_int64(copy, 2, t + 7000);
        sqlite3_bind_int64(copy, 3, t + (pageable ? 12000 : 9000));
        sqlite3_bind_text(copy, 4, pageable ? "pageable" : "pinned", -1, SQLITE_STATIC);
        sqlite3_bind_int(copy, 5, !pageable);
        sqlite3_bind_int64(copy, 6, api_id);
        sqlite3_bind_int64(copy, 7, r);
        sqlite3_step(copy);
        api_id++;
        if (i % 100 == 99) {
            bind_step(api, 6, (int64_t[]){api_id, 4, t + 14000, t + 15000, api_id, r});
            bind_step(sync, 3, (int64_t[]){api_id, t + 14000, t + 15000});
            api_id++;
        }
        if (i % 1000 == 0) {
            bind_step(api, 6, (int64_t[]){api_id, 5, t + 15000, t + 16000, api_id, r});
            api_id++;
        }
        t += ITERATION_NS;
    }
    for (int64_t ts = 0; ts < end; ts += 10000000) { /* 100 Hz, 300 W, throttled now and then */
        int throttled = (ts / 10000000) % 50 == 7;
        bind_step(sample, 5,
                  (int64_t[]){ts, 300000, ts / 1000000 * 300, throttled ? 1500 : 1980,
                              throttled ? 0x4 : 0});
    }
    sqlite3_finalize(range);
    sqlite3_finalize(api);
    sqlite3_finalize(kernel);
    sqlite3_finalize(copy);
    sqlite3_finalize(sync);
    sqlite3_finalize(sample);
    return exec_sql(db, "COMMIT;");
}

/* CPU samples: frames 1 main, 2 _PyEval_EvalFrameDefault (python3.11), 3 step (app), 10..25
 * the leaves; callsites: main, then 2..17 interpreter frames, then step, then a leaf. */
static int generate_samples(sqlite3 *db, long samples, int64_t end)
{
    char sampling[160];
    snprintf(sampling, sizeof sampling, /* the period the samples' spacing implies */
             "BEGIN; INSERT INTO cpu_sampling(process_id, status, period_ns, samples, lost,"
             " threads) VALUES (1, 'on', %lld, %ld, 0, 1);",
             (long long)(end / samples), samples);
    if (exec_sql(db, sampling) < 0 ||
        exec_sql(db, "INSERT INTO cpu_frames(id, name, module) VALUES (1, 'main', 'app'),"
                     " (2, '_PyEval_EvalFrameDefault', 'python3.11'), (3, 'step', 'app');") < 0)
        return -1;
    sqlite3_stmt *frame, *callsite, *stack, *sample;
    sqlite3_prepare_v2(db, "INSERT INTO cpu_frames(id, name, module) VALUES (?, ?, 'libleaf.so')", -1, &frame, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO cpu_callsites VALUES (?, ?, ?, ?)", -1, &callsite, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO cpu_stacks VALUES (?, 1, ?)", -1, &stack, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO cpu_samples VALUES (1, ?, ?)", -1, &sample, NULL);
    int64_t id = 1;
    for (int s = 0; s < 16; s++) { /* each stack its own path: main, s + 2 interpreter frames */
        int64_t parent = 0;
        char name[32];
        snprintf(name, sizeof name, "leaf_%d", s);
        sqlite3_reset(frame);
        sqlite3_bind_int64(frame, 1, 10 + s);
        sqlite3_bind_text(frame, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_step(frame);
        for (int d = 0; d < s + 5; d++) {
            int64_t f = d == 0 ? 1 : d == s + 4 ? 10 + s : d == s + 3 ? 3 : 2;
            sqlite3_reset(callsite);
            sqlite3_bind_int64(callsite, 1, id);
            if (parent)
                sqlite3_bind_int64(callsite, 2, parent);
            else
                sqlite3_bind_null(callsite, 2);
            sqlite3_bind_int64(callsite, 3, f);
            sqlite3_bind_int64(callsite, 4, d);
            sqlite3_step(callsite);
            parent = id++;
        }
        bind_step(stack, 2, (int64_t[]){s + 1, parent});
    }
    for (long i = 0; i < samples; i++)
        bind_step(sample, 2, (int64_t[]){i * (end / samples), 1 + (i * 7) % 16});
    sqlite3_finalize(frame);
    sqlite3_finalize(callsite);
    sqlite3_finalize(stack);
    sqlite3_finalize(sample);
    return exec_sql(db, "COMMIT;");
}

int main(int argc, char **argv)
{
    long events = argc > 1 ? atol(argv[1]) : 10000000;
    const char *path = argc > 2 ? argv[2] : "/tmp/lantern_bench_analyze.db";
    int keep = argc > 3 && !strcmp(argv[3], "keep");
    long samples = argc > 4 ? atol(argv[4]) : 0;
    sqlite3 *db;
    if (access(path, F_OK) != 0) {
        if (sqlite3_open(path, &db) != SQLITE_OK || exec_sql(db, import_schema_sql) < 0)
            return fprintf(stderr, "bench_analyze: cannot create %s\n", path), 1;
        exec_sql(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;");
        double t0 = wall_s();
        long iterations = events / EVENTS_PER_ITERATION;
        if (generate(db, iterations) < 0)
            return 1;
        if (samples > 0 &&
            generate_samples(db, samples,
                             1000000 + iterations * (int64_t)ITERATION_NS +
                                 (iterations / 1000 + 1) * 200000) < 0)
            return 1;
        if (exec_sql(db, import_indexes_sql) < 0)
            return 1;
        sqlite3_close(db);
        fprintf(stderr, "bench_analyze: generated %s in %.1f s (not timed below)\n", path,
                wall_s() - t0);
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        return fprintf(stderr, "bench_analyze: cannot open %s\n", path), 1;
    FILE *out = fopen("/dev/null", "w");
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    double c0 = cpu_s(), w0 = wall_s();
    int rc = analyze_run(db, NULL, 0, &run, &bad, error, sizeof error);
    if (rc == 0)
        rc = analyze_write(&run, TABLE_FORMAT_TABLE, &(struct analyze_write_options){.details = 1},
                           out);
    double c1 = cpu_s(), w1 = wall_s();
    size_t findings = 0;
    free(analyze_rank(&run, &findings));
    analyze_run_release(&run);
    if (rc < 0)
        return fprintf(stderr, "bench_analyze: analyze failed: %s\n", error), 1;
    char *page = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&page, &size);
    double c2 = cpu_s(), w2 = wall_s();
    rc = html_report_write(db, mem, error, sizeof error);
    fclose(mem);
    double c3 = cpu_s(), w3 = wall_s();
    if (rc < 0)
        return fprintf(stderr, "bench_analyze: report failed: %s\n", error), 1;
    fwrite(page, 1, size, out);
    fclose(out);
    free(page);
    sqlite3_close(db);
    printf("events %ld, CPU samples %ld: analyze %.2f s CPU (%.2f s wall, %zu findings); report %.2f s CPU "
           "(%.2f s wall, page %.0f KB); together %.2f s CPU\n",
           events, samples, c1 - c0, w1 - w0, findings, c3 - c2, w3 - w2, (double)size / 1024.0,
           (c1 - c0) + (c3 - c2));
    if (!keep)
        unlink(path);
    return 0;
}
