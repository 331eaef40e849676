/* What the host did, in `lantern analyze`: the host part of the "host wait" findings (the CPU
 * samples in the gaps, their top functions, the blocking calls of -t osrt's osrt_calls
 * table, the advice of each pattern, sampling off) and the cpu_bound_ranges rule, each on a
 * database crafted for it with the counts worked out by hand. */
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/host_activity.h"
#include "db/import.h"
#include "harness.h"

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s\n", err);
        exit(1);
    }
}

/* A 1 ms session, process 1 (pid 100, thread 1 tid 100), one GPU, and the gap session of
 * test_analyze.c's gpu_idle test cut down: kernels K1 [10000, 30000] and K3 [300000, 310000],
 * K3 launched at 290000 inside ':step' after the GPU ran dry: one host-wait gap [30000,
 * 300000), 270 µs. */
static sqlite3 *gap_session(const char *rows)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec(db, import_schema_sql);
    exec(db, "INSERT INTO meta VALUES('schema_version', 9), ('start_ns', 0), ('end_ns', 1000000),"
             " ('command', 'app');"
             "INSERT INTO processes(id, pid, start_ns, end_ns, clean_exit) VALUES(1, 100, 0, "
             "1000000, 1);"
             "INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 100);"
             "INSERT INTO gpus(id, uuid, name, nvml_index, sm_count) VALUES(1, 'GPU-a', 'H100', 0,"
             " 132);"
             "INSERT INTO process_gpus VALUES(1, 0, 1);"
             "INSERT INTO strings VALUES(1, 'k'), (2, 'step'), (4, 'cudaLaunchKernel');"
             "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
             " end_thread_id, start_ns, end_ns) VALUES(1, 1, 2, 0, 0, 1, 1, 0, 700000);"
             "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
             " correlation_id, nvtx_range_id) VALUES(1, 1, 1, 0, 4, 5000, 6000, 1, 1),"
             " (3, 1, 1, 0, 4, 290000, 291000, 3, 1);"
             "INSERT INTO kernels(id, process_id, gpu_id, device, stream, correlation_id,"
             " start_ns, end_ns, name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
             " regs_per_thread, api_id, nvtx_range_id) VALUES"
             " (1, 1, 1, 0, 7, 1, 10000, 30000, 1, 264, 1, 1, 256, 1, 1, 32, 1, 1),"
             " (3, 1, 1, 0, 7, 3, 300000, 310000, 1, 264, 1, 1, 256, 1, 1, 32, 3, 1);");
    exec(db, rows);
    return db;
}

/* Sampling on at 100 kHz (10 µs); frames 1 main (app) and 2 parse (app), callsites main and
 * parse under it; the test adds its own frames from id 10 and callsites from id 10. */
static const char sampling_on[] =
    "INSERT INTO cpu_sampling(process_id, status, period_ns) VALUES(1, 'on', 10000);"
    "INSERT INTO cpu_frames(id, name, module) VALUES(1, 'main', 'app'), (2, 'parse', 'app');"
    "INSERT INTO cpu_callsites VALUES(1, NULL, 1, 0), (2, 1, 2, 1);"
    "INSERT INTO cpu_stacks VALUES(1, 1, 1), (2, 1, 2);";

/* n samples of thread 1 on stack, every 10 µs from `from` (ns). */
static void samples(sqlite3 *db, int n, int64_t from, int stack)
{
    char sql[160];
    for (int i = 0; i < n; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO cpu_samples VALUES(1, %lld, %d);",
                 (long long)(from + 10000 * i), stack);
        exec(db, sql);
    }
}

static const struct analyze_finding *run_gpu_idle(sqlite3 *db, struct analyze_run *run)
{
    const char *bad = NULL;
    char error[256] = "";
    int rc = analyze_run(db, "gpu_idle", 0, run, &bad, error, sizeof error);
    if (rc != 0)
        fprintf(stderr, "analyze failed: %s\n", error);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(run->results[0].count, 2); /* the GPU, then its range :step */
    return &run->results[0].findings[0];
}

/* 19 samples in the gap with llvmlite's compiler under main, 1 in parse, 3 outside the gap
 * (not counted): the host part names memcpy in main first, the JIT pattern covers 95 %. */
static void host_wait_names_the_top_functions_and_the_jit_pattern(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO cpu_frames(id, name, module) VALUES(10, 'llvm::compile', 'libllvmlite.so'),"
             " (11, 'memcpy', 'libc.so.6');"
             "INSERT INTO cpu_callsites VALUES(10, 1, 10, 1), (11, 10, 11, 2);"
             "INSERT INTO cpu_stacks VALUES(10, 1, 11);");
    samples(db, 19, 40000, 10); /* 40 .. 220 µs: inside the gap */
    samples(db, 1, 250000, 2);
    samples(db, 2, 5000, 2);    /* before the gap */
    samples(db, 1, 300000, 10); /* at the gap's end: the GPU is busy again */
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT(h != NULL);
    ASSERT_EQ(h->sampled, 1);
    ASSERT_EQ(h->samples, 20);
    ASSERT(fabs(h->window_ns - 270000) < 1e-6);
    ASSERT(fabs(h->on_cpu_ns - 200000) < 1e-6);
    ASSERT_EQ(h->top_count, 2);
    ASSERT_STR_EQ(h->top[0].function, "memcpy");
    ASSERT_STR_EQ(h->top[0].module, "libc.so.6");
    ASSERT_STR_EQ(h->top[0].user_function, "main"); /* llvm::compile is a library's */
    ASSERT_EQ(h->top[0].samples, 19);
    ASSERT_STR_EQ(h->top[1].function, "parse");
    ASSERT(h->top[1].user_function == NULL); /* the leaf is the program's own */
    ASSERT_STR_EQ(h->pattern, "JIT compilation of numba kernels");
    ASSERT(fabs(h->pattern_percent - 95.0) < 1e-9);
    ASSERT(!strncmp(gpu->advice,
                    "JIT compilation of numba kernels (95 % of the samples in the host-wait gaps)",
                    76));
    ASSERT(strstr(h->summary, "20 samples, 200.000 µs on CPU (74.1 %)"));
    ASSERT(strstr(h->summary, "top: memcpy (libc.so.6) in main (app) 95.0 %, parse (app) 5.0 %"));
    /* the range's finding covers the same gap */
    const struct analyze_finding *range = &run.results[0].findings[1];
    ASSERT(range->host != NULL);
    ASSERT_EQ(range->host->samples, 20);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* A second thread of the process that never called CUDA (a BLAS pool spinning) takes 50
 * samples in the gap: the host part counts only the launching thread's 19. */
static void only_the_launching_threads_are_counted(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO threads(id, process_id, tid) VALUES(2, 1, 101);"
             "INSERT INTO cpu_frames(id, name, module) VALUES(10, 'blas_thread_server',"
             " 'libopenblas.so');"
             "INSERT INTO cpu_callsites VALUES(10, NULL, 10, 0);"
             "INSERT INTO cpu_stacks VALUES(10, 1, 10);");
    samples(db, 19, 40000, 2);
    for (int i = 0; i < 50; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO cpu_samples VALUES(2, %d, 10);", 35000 + 5000 * i);
        exec(db, sql);
    }
    struct analyze_run run;
    const struct analyze_host *h = run_gpu_idle(db, &run)->host;
    ASSERT(h != NULL);
    ASSERT_EQ(h->samples, 19);
    ASSERT_EQ(h->top_count, 1);
    ASSERT_STR_EQ(h->top[0].function, "parse");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Python frames as cpu-py writes them (name the qualname, module the file's base name, file
 * the path): numba's compiler under site-packages is a library's and the JIT pattern's, the
 * program's own train.py is the user frame the top function is shown in. */
static void python_frames_are_classified_by_their_file(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO cpu_frames(id, name, module, file, line) VALUES"
             " (10, 'Trainer.step', 'train.py', '/home/u/train.py', 12),"
             " (11, 'CompilerBase.compile_extra', 'compiler.py',"
             " '/venv/lib/python3.11/site-packages/numba/core/compiler.py', 480);"
             "INSERT INTO cpu_callsites VALUES(10, 1, 10, 1), (11, 10, 11, 2);"
             "INSERT INTO cpu_stacks VALUES(10, 1, 11);");
    samples(db, 10, 40000, 10);
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT_EQ(h->top_count, 1);
    ASSERT_STR_EQ(h->top[0].function, "CompilerBase.compile_extra");
    ASSERT_STR_EQ(h->top[0].module, "compiler.py");
    ASSERT_STR_EQ(h->top[0].user_function, "Trainer.step");
    ASSERT_STR_EQ(h->top[0].user_module, "train.py");
    ASSERT_STR_EQ(h->pattern, "JIT compilation of numba kernels");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* numba-cuda's first launch, as sampled on the H200 host: the dispatcher compiles, and most
 * of its samples are imports it triggers (importlib's frames on top): the JIT pattern still. */
static void numba_cuda_first_launch_is_the_jit_pattern(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO cpu_frames(id, name, module, file, line) VALUES"
             " (10, 'normalize_one_stream', 'tutorial.py', '/home/u/tutorial.py', 60),"
             " (11, 'CUDADispatcher._compile_for_args', 'dispatcher.py',"
             " '/venv/lib/python3.12/site-packages/numba_cuda/numba/cuda/dispatcher.py', 900),"
             " (12, '_call_with_frames_removed', '<frozen importlib._bootstrap>',"
             " '<frozen importlib._bootstrap>', 480);"
             "INSERT INTO cpu_callsites VALUES(10, 1, 10, 1), (11, 10, 11, 2), (12, 11, 12, 3);"
             "INSERT INTO cpu_stacks VALUES(10, 1, 12);");
    samples(db, 10, 40000, 10);
    struct analyze_run run;
    const struct analyze_host *h = run_gpu_idle(db, &run)->host;
    ASSERT_STR_EQ(h->top[0].function, "_call_with_frames_removed");
    ASSERT_STR_EQ(h->pattern, "JIT compilation of numba kernels");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Each pattern of the table, from a leaf (and its caller) that only it names: 10 samples in
 * the gap on a stack main -> caller -> leaf. */
static void each_pattern_gives_its_advice(void)
{
    static const struct {
        const char *caller, *caller_module, *leaf, *leaf_module, *pattern;
    } cases[] = {
        /* a Python function as cpu_python.c names it: qualname, file's base name (and path) */
        {"compile_extra", "compiler.py", "_PyEval_EvalFrameDefault", "python3.11",
         "JIT compilation of numba kernels"},
        {"cudaStreamSynchronize", "libcudart.so.12", "cuStreamSynchronize_spin", "libcuda.so.1",
         "a synchronization point"},
        {"tokenizers::encode_batch", "tokenizers.abi3.so", "memchr", "libc.so.6", "tokenization"},
        {"parse", "app", "read", "libc.so.6", "data loading (reads)"},
        {"parse", "app", "c10::Dispatcher::call", "libc10.so",
         "framework dispatch between small "
         "kernels"},
        {"parse", "app", "_PyEval_EvalFrameDefault", "python3.11",
         "Python interpreter overhead between kernels"},
        {"parse", "app", "compute", "app", NULL}, /* the program's own work: no pattern */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sqlite3 *db = gap_session(sampling_on);
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO cpu_frames(id, name, module) VALUES(10, '%s', '%s'), (11, '%s', '%s');"
                 "INSERT INTO cpu_callsites VALUES(10, 1, 10, 1), (11, 10, 11, 2);"
                 "INSERT INTO cpu_stacks VALUES(10, 1, 11);",
                 cases[i].caller, cases[i].caller_module, cases[i].leaf, cases[i].leaf_module);
        exec(db, sql);
        exec(db, "UPDATE cpu_frames SET file = '/venv/lib/python3.11/site-packages/numba/core/'"
                 " || module, line = 1 WHERE module = 'compiler.py';");
        samples(db, 10, 40000, 10);
        struct analyze_run run;
        const struct analyze_finding *gpu = run_gpu_idle(db, &run);
        if (cases[i].pattern) {
            if (!gpu->host->pattern || strcmp(gpu->host->pattern, cases[i].pattern))
                fprintf(stderr, "case %zu: pattern %s, expected %s\n", i,
                        gpu->host->pattern ? gpu->host->pattern : "(none)", cases[i].pattern);
            ASSERT_STR_EQ(gpu->host->pattern, cases[i].pattern);
            ASSERT(!strncmp(gpu->advice, cases[i].pattern, strlen(cases[i].pattern)));
        } else {
            ASSERT(gpu->host->pattern == NULL);
            ASSERT(gpu->host->advice == NULL);
            ASSERT_STR_EQ(gpu->advice, run.results[0].rule->advice);
        }
        analyze_run_release(&run);
        sqlite3_close(db);
    }
}

/* -t osrt's calls, as import_osrt.c writes them: two blocking reads of thread 1 covering
 * 162 µs of the 270 µs gap (60 %; one starts before the gap: only its part inside counts),
 * a recv outside the gap. Few samples (the thread was blocked): the advice comes from the
 * blocked time. */
static void blocking_calls_of_osrt_give_their_share_of_the_gap(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO osrt(process_id, threshold_ns, seen, kept, lost) VALUES(1, 1000, 9, 3,"
             " 0);"
             "INSERT INTO strings VALUES(20, 'read'), (21, 'recv');"
             "INSERT INTO osrt_calls(thread_id, name_id, start_ns, end_ns, ret) VALUES"
             " (1, 20, 20000, 102000, 1), (1, 20, 150000, 260000, 1), (1, 21, 400000, 500000, 8);");
    samples(db, 2, 40000, 2);
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT_EQ(h->blocking_count, 1);
    ASSERT_STR_EQ(h->blocking[0].name, "read");
    ASSERT_EQ(h->blocking[0].calls, 2);
    ASSERT_EQ(h->blocking[0].ns, 72000 + 110000);
    ASSERT_EQ(h->blocked_ns, 182000);
    ASSERT_STR_EQ(h->pattern, "data loading (reads)");
    ASSERT(fabs(h->pattern_percent - 100.0 * 182000 / 270000) < 1e-9);
    ASSERT(strstr(gpu->advice, "(67 % of the time, blocked, in the host-wait gaps)"));
    ASSERT(strstr(h->summary, "blocked in: read 2 calls 182.000 µs (67.4 %)"));
    ASSERT(!strstr(h->summary, "GIL") && h->gil_waits == 0); /* none: nothing said of them */
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* The Python sampler's GIL waits of thread 1 (the launching thread) in the 270 µs gap:
 * [30, 130] µs in main, [150, 200] in parse, [280, 320] in main (20 µs inside): 170 µs,
 * 63 %; a wait of thread 2 (no CUDA call) in the gap is not counted. Two samples of parse
 * match no pattern: the advice comes from the time waited for the GIL. */
static void gil_waits_give_their_share_of_the_gap_and_the_functions_waiting(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO threads(id, process_id, tid) VALUES(2, 1, 101);"
             "INSERT INTO cpu_gil_waits VALUES(1, 130000, 100000, 1), (1, 200000, 50000, 2),"
             " (1, 320000, 40000, 1), (2, 100000, 50000, 1);");
    samples(db, 2, 40000, 2);
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT_EQ(h->gil_waits, 3);
    ASSERT_EQ(h->gil_wait_ns, 170000);
    ASSERT_EQ(h->gil_top_count, 2);
    ASSERT_STR_EQ(h->gil_top[0].function, "main");
    ASSERT_EQ(h->gil_top[0].ns, 120000);
    ASSERT_STR_EQ(h->gil_top[1].function, "parse");
    ASSERT_STR_EQ(h->pattern, "threads contend for the GIL");
    ASSERT(fabs(h->pattern_percent - 100.0 * 170000 / 270000) < 1e-9);
    ASSERT(strstr(gpu->advice, "threads contend for the GIL (63 % of the time, waiting for the"
                               " GIL, in the host-wait gaps): another Python thread holds"));
    ASSERT(strstr(h->summary, "; GIL waits: 3, 170.000 µs (63.0 %) in main 70.6 %, parse 29.4 %"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* The launching thread's states in the 270 µs gap [30, 300) µs (its sampled life from its
 * first sample at 20 µs): blocked [60, 219.7] µs, preempted [230, 238.1], and a merged blocked
 * row [290, 310] of 10 µs blocked, half of it inside: 164.7 µs blocked (61.0 %), 8.1 µs
 * preempted (3.0 %); thread 2's states (no CUDA call) are not counted. */
static void thread_states_give_their_share_of_the_gap(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO threads(id, process_id, tid) VALUES(2, 1, 101);"
             "INSERT INTO cpu_thread_states VALUES(1, 60000, 219700, 'blocked', 159700, 1),"
             " (1, 230000, 238100, 'preempted', 8100, 1), (1, 290000, 310000, 'blocked', 10000, 3),"
             " (2, 40000, 280000, 'blocked', 240000, 1);");
    samples(db, 1, 20000, 1);
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT_EQ(h->state_threads, 1);
    ASSERT(fabs(h->state_ns - 270000) < 1e-6);
    ASSERT(fabs(h->state_blocked_ns - 164700) < 1e-6);
    ASSERT(fabs(h->state_preempted_ns - 8100) < 1e-6);
    ASSERT(strstr(h->summary, "; the thread was blocked 61.0 % of the host-wait gaps, preempted"
                              " 3.0 %, running 36.0 %"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* The same reads with their backtraces (--osrt-backtrace-threshold): the summary and the advice
 * name the caller with most of the blocked time, its first three frames. */
static void blocking_calls_name_their_top_caller(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO osrt(process_id, threshold_ns, seen, kept, lost) VALUES(1, 1000, 9, 3,"
             " 0);"
             "INSERT INTO strings VALUES(20, 'read'),"
             " (22, 'load_batch(app)<-next_item(app)<-train(app)<-main(app)'),"
             " (23, 'read_config(app)<-main(app)');"
             "INSERT INTO osrt_calls(thread_id, name_id, start_ns, end_ns, ret, backtrace_id) VALUES"
             " (1, 20, 20000, 102000, 1, 23), (1, 20, 150000, 260000, 1, 22);");
    samples(db, 2, 40000, 2);
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    const struct analyze_host *h = gpu->host;
    ASSERT_EQ(h->blocking_count, 1);
    ASSERT_STR_EQ(h->blocking[0].caller, "load_batch(app)<-next_item(app)<-train(app)");
    ASSERT_EQ(h->blocking[0].caller_ns, 110000);
    ASSERT(strstr(h->summary, "blocked in: read 2 calls 182.000 µs (67.4 %) from "
                              "load_batch(app)<-next_item(app)<-train(app) (60 % of it)"));
    ASSERT(strstr(gpu->advice, "The read calls are made mostly (60 %) from "
                               "load_batch(app)<-next_item(app)<-train(app)."));
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Sampling refused in the process: the finding says so and why, and guesses nothing. */
static void sampling_off_is_said_with_its_reason(void)
{
    sqlite3 *db = gap_session("INSERT INTO cpu_sampling(process_id, status, reason)"
                              " VALUES(1, 'not permitted', 'perf_event_open was refused');");
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    ASSERT(gpu->host != NULL);
    ASSERT_EQ(gpu->host->sampled, 0);
    ASSERT_STR_EQ(gpu->host->summary, "CPU sampling was off (pid 100: not permitted: "
                                      "perf_event_open was refused): what the host did is "
                                      "unknown");
    ASSERT_STR_EQ(gpu->advice, run.results[0].rule->advice);
    analyze_run_release(&run);
    const char *bad = NULL;
    char error[256];
    ASSERT_EQ(analyze_run(db, "cpu_bound_ranges", 0, &run, &bad, error, sizeof error), 0);
    ASSERT_STR_EQ(run.results[0].note, "no CPU samples: sampling was off in pid 100: not "
                                       "permitted: perf_event_open was refused");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Without cpu_sampling rows (sampling not asked), the findings have no host part. */
static void no_sampling_asked_leaves_findings_as_they_were(void)
{
    sqlite3 *db = gap_session("");
    struct analyze_run run;
    const struct analyze_finding *gpu = run_gpu_idle(db, &run);
    ASSERT(gpu->host == NULL);
    ASSERT(run.results[0].findings[1].host == NULL);
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* ':prep' [320000, 720000) with a sample every 10 µs (40: on the CPU all its 400 µs) while
 * the GPU idles (its work ended at 310000); ':wait' [720000, 1000000) with 3 samples (10 %
 * on CPU): not CPU-bound. Cost of :prep: min(on CPU, GPU idle) = 400 µs. ':step' [0, 700000)
 * holds 38 of the samples (380 µs, 54 %) and 30 µs of GPU work (4 %): CPU-bound too, cost
 * min(380, 700 - 30) = 380 µs, second. */
static void cpu_bound_ranges_finds_ranges_the_cpu_paces(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO strings VALUES(30, 'prep'), (31, 'wait');"
             "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
             " end_thread_id, start_ns, end_ns) VALUES(2, 1, 30, 0, 0, 1, 1, 320000, 720000),"
             " (3, 1, 31, 0, 0, 1, 1, 720000, 1000000);");
    samples(db, 40, 320000, 2);
    samples(db, 3, 730000, 1);
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    ASSERT_EQ(analyze_run(db, "cpu_bound_ranges", 0, &run, &bad, error, sizeof error), 0);
    const struct analyze_result *res = &run.results[0];
    ASSERT_EQ(res->count, 2);
    ASSERT(fabs(res->findings[1].cost_ns - 380000) < 1e-6);
    ASSERT(!strncmp(res->findings[1].summary, ":step: 1 of 1 instances CPU-bound", 33));
    const struct analyze_finding *f = &res->findings[0];
    ASSERT(fabs(f->cost_ns - 400000) < 1e-6);
    ASSERT_EQ(f->count, 1);
    ASSERT(strstr(f->summary, ":prep: 1 of 1 instances CPU-bound (400.000 µs): their thread on "
                              "the CPU 100.0 % of the time (400.000 µs) while the GPU was busy "
                              "0.0 %"));
    ASSERT_EQ(f->evidence_count, 1);
    ASSERT_EQ(f->evidence[0].start_ns, 320000);
    ASSERT_EQ(f->evidence[0].tid, 100);
    ASSERT_STR_EQ(f->evidence[0].range, ":prep");
    ASSERT(f->host != NULL);
    ASSERT_EQ(f->host->samples, 40);
    ASSERT_STR_EQ(f->host->top[0].function, "parse");
    analyze_run_release(&run);
    sqlite3_close(db);
}

/* Ten launches of 'tiny' (100 ns kernels, 1 µs launch calls) from 400 to 490 µs: launch-bound;
 * the host part counts the samples from the first launch call's start to the last one's end
 * ([400000, 491000): 10 of the 12 samples, two after), on torch's dispatcher. */
static void launch_bound_names_what_the_host_did_between_launches(void)
{
    sqlite3 *db = gap_session(sampling_on);
    exec(db, "INSERT INTO strings VALUES(40, 'tiny');"
             "INSERT INTO cpu_frames(id, name, module) VALUES(10, 'c10::Dispatcher::call', 'libc10.so');"
             "INSERT INTO cpu_callsites VALUES(10, 1, 10, 1);"
             "INSERT INTO cpu_stacks VALUES(10, 1, 10);");
    for (int i = 0; i < 10; i++) {
        char sql[400];
        long t = 400000 + 10000L * i;
        snprintf(sql, sizeof sql,
                 "INSERT INTO cuda_api(id, process_id, thread_id, api, name_id, start_ns, end_ns,"
                 " correlation_id) VALUES(%d, 1, 1, 0, 4, %ld, %ld, %d);"
                 "INSERT INTO kernels(id, process_id, gpu_id, device, stream, correlation_id,"
                 " start_ns, end_ns, name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
                 " api_id) VALUES(%d, 1, 1, 0, 7, %d, %ld, %ld, 40, 1, 1, 1, 32, 1, 1, %d);",
                 10 + i, t, t + 1000, 10 + i, 10 + i, 10 + i, t + 2000, t + 2100, 10 + i);
        exec(db, sql);
    }
    samples(db, 12, 400500, 10);
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    ASSERT_EQ(analyze_run(db, "launch_bound", 0, &run, &bad, error, sizeof error), 0);
    ASSERT_EQ(run.results[0].count, 1);
    const struct analyze_finding *f = &run.results[0].findings[0];
    ASSERT(f->host != NULL);
    ASSERT_EQ(f->host->samples, 10);
    ASSERT(fabs(f->host->window_ns - 91000) < 1e-6);
    ASSERT_STR_EQ(f->host->pattern, "framework dispatch between small kernels");
    ASSERT(strstr(f->host->summary, "CPU samples in the launches"));
    analyze_run_release(&run);
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"host_wait_names_the_top_functions_and_the_jit_pattern",
         host_wait_names_the_top_functions_and_the_jit_pattern},
        {"only_the_launching_threads_are_counted", only_the_launching_threads_are_counted},
        {"each_pattern_gives_its_advice", each_pattern_gives_its_advice},
        {"python_frames_are_classified_by_their_file", python_frames_are_classified_by_their_file},
        {"numba_cuda_first_launch_is_the_jit_pattern", numba_cuda_first_launch_is_the_jit_pattern},
        {"blocking_calls_of_osrt_give_their_share_of_the_gap",
         blocking_calls_of_osrt_give_their_share_of_the_gap},
        {"blocking_calls_name_their_top_caller", blocking_calls_name_their_top_caller},
        {"gil_waits_give_their_share_of_the_gap_and_the_functions_waiting",
         gil_waits_give_their_share_of_the_gap_and_the_functions_waiting},
        {"thread_states_give_their_share_of_the_gap", thread_states_give_their_share_of_the_gap},
        {"sampling_off_is_said_with_its_reason", sampling_off_is_said_with_its_reason},
        {"no_sampling_asked_leaves_findings_as_they_were",
         no_sampling_asked_leaves_findings_as_they_were},
        {"cpu_bound_ranges_finds_ranges_the_cpu_paces",
         cpu_bound_ranges_finds_ranges_the_cpu_paces},
        {"launch_bound_names_what_the_host_did_between_launches",
         launch_bound_names_what_the_host_did_between_launches},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
