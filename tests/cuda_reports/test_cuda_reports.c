/* The CUDA reports over a database built here from the real schema and cuda_session.sql,
 * whose numbers were worked out by hand (see the comments there): each test compares a
 * report's exact CSV (or table/JSON cells) with those hand-computed values. */
#include <errno.h>
#include <sqlite3.h>

#include "harness.h"
#include "model/aggregates.h"
#include "stats/cuda_query.h"

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ASSERT(f);
    ASSERT(fseek(f, 0, SEEK_END) == 0);
    long size = ftell(f);
    ASSERT(size > 0);
    rewind(f);
    char *text = malloc((size_t)size + 1);
    ASSERT(text);
    ASSERT(fread(text, 1, (size_t)size, f) == (size_t)size);
    text[size] = 0;
    fclose(f);
    return text;
}

static void exec_file(sqlite3 *db, const char *path)
{
    char *sql = read_file(path);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", path, err);
        exit(1);
    }
    free(sql);
}

static sqlite3 *open_session(void)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec_file(db, LANTERN_SOURCE_DIR "/src/db/schema.sql");
    exec_file(db, LANTERN_SOURCE_DIR "/tests/cuda_reports/cuda_session.sql");
    return db;
}

/* Runs report in format (with sort) over db, which it closes; returns its output (free it). */
static char *run_report_on(sqlite3 *db, int (*report)(struct stats_ctx *), enum table_format format,
                           const char *sort)
{
    struct stats_ctx ctx = {.db = db, .format = format, .sort = sort};
    char *text = NULL;
    size_t size = 0;
    ctx.out = open_memstream(&text, &size);
    ASSERT(ctx.out);
    int rc = report(&ctx);
    if (rc != 0)
        fprintf(stderr, "report failed: %s\n", ctx.error);
    ASSERT_EQ(rc, 0);
    fclose(ctx.out);
    sqlite3_close(ctx.db);
    return text;
}

/* Same over the test session. */
static char *run_report(int (*report)(struct stats_ctx *), enum table_format format,
                        const char *sort)
{
    return run_report_on(open_session(), report, format, sort);
}

static void expect_csv(int (*report)(struct stats_ctx *), const char *sort, const char *expected)
{
    char *csv = run_report(report, TABLE_FORMAT_CSV, sort);
    ASSERT_STR_EQ(csv, expected);
    free(csv);
}

/* Launch calls 100, 50, 100, 60, 100 ns: mean 82, median 100, sample stddev sqrt(2480/4).
 * Time % of all 1060 ns of API time. */
static void cuda_api_sum_matches_hand_computed_rows(void)
{
    expect_csv(stats_cuda_api_sum, NULL,
               "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),"
               "StdDev (ns),Name\n"
               "38.679,410,5,82,100,50,100,24.9,cudaLaunchKernel\n"
               "28.302,300,3,100,100,100,100,0,cudaMemcpyAsync\n"
               "28.302,300,1,300,300,300,300,0,cudaStreamSynchronize\n"
               "4.717,50,1,50,50,50,50,0,cudaMemsetAsync\n");
}

/* axpy 500, 800, 700 (odd count: median 700); reduce 300, 200 (even: median 250). */
static void cuda_gpu_kern_sum_matches_hand_computed_rows(void)
{
    expect_csv(stats_cuda_gpu_kern_sum, NULL,
               "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),"
               "StdDev (ns),Name\n"
               "80.000,2000,3,666.667,700,500,800,152.753,\"axpy(float*, float*, float)\"\n"
               "20.000,500,2,250,250,200,300,70.711,reduce(float*)\n");
}

/* Copies HtoD 400 + 150 ns, DtoH 100 ns, memset 100 ns: 750 ns of memory operations. */
static void cuda_gpu_mem_time_sum_groups_copies_and_memsets(void)
{
    expect_csv(stats_cuda_gpu_mem_time_sum, NULL,
               "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),"
               "StdDev (ns),Operation\n"
               "73.333,550,2,275,275,150,400,176.777,[CUDA memcpy Host-to-Device]\n"
               "13.333,100,1,100,100,100,100,0,[CUDA memcpy Device-to-Host]\n"
               "13.333,100,1,100,100,100,100,0,[CUDA memset]\n");
}

/* HtoD 4 MB + 2 MB: stddev 2e6 / sqrt(2). CSV gives bytes. */
static void cuda_gpu_mem_size_sum_gives_exact_bytes(void)
{
    expect_csv(stats_cuda_gpu_mem_size_sum, NULL,
               "Total (B),Count,Avg (B),Med (B),Min (B),Max (B),StdDev (B),Operation\n"
               "6000000,2,3000000,3000000,2000000,4000000,1414213.562,"
               "[CUDA memcpy Host-to-Device]\n"
               "2000000,1,2000000,2000000,2000000,2000000,0,[CUDA memset]\n"
               "1000000,1,1000000,1000000,1000000,1000000,0,[CUDA memcpy Device-to-Host]\n");
}

/* Tables show sizes in MB like nsys. */
static void cuda_gpu_mem_size_sum_table_shows_megabytes(void)
{
    char *table = run_report(stats_cuda_gpu_mem_size_sum, TABLE_FORMAT_TABLE, NULL);
    ASSERT(strstr(table, "6.000 MB"));
    ASSERT(strstr(table, "1.414 MB"));
    ASSERT(strstr(table, "[CUDA memcpy Device-to-Host]"));
    free(table);
}

#define TRACE_HEADER                                                                               \
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (B),"           \
    "DymSMem (B),Bytes (B),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
#define H100 "NVIDIA H100 80GB HBM3 (0)"

/* Start is relative to meta.start_ns (100); throughput = bytes / ns * 1000 MB/s. */
static void cuda_gpu_trace_lists_every_operation_in_start_order(void)
{
    expect_csv(stats_cuda_gpu_trace, NULL,
               TRACE_HEADER "1900,200,8,64,2,1,256,1,1,40,2048,0,,,,," H100 ",1,8,reduce(float*)\n"
                            "1900,500,1,256,1,1,128,1,1,32,0,1024,,,,," H100 ",1,7,"
                            "\"axpy(float*, float*, float)\"\n"
                            "2500,800,2,256,1,1,128,1,1,32,0,1024,,,,," H100 ",1,7,"
                            "\"axpy(float*, float*, float)\"\n"
                            "4400,400,3,,,,,,,,,,4000000,10000000,Pageable,Device," H100 ",1,7,"
                            "[CUDA memcpy Host-to-Device]\n"
                            "4900,300,4,64,2,1,256,1,1,40,2048,0,,,,," H100 ",1,7,reduce(float*)\n"
                            "9600,100,5,,,,,,,,,,2000000,20000000,,Device," H100
                            ",1,7,[CUDA memset]\n"
                            "20900,700,6,512,1,1,128,1,1,32,0,1024,,,,," H100 ",1,7,"
                            "\"axpy(float*, float*, float)\"\n"
                            "26400,100,7,,,,,,,,,,1000000,10000000,Device,Pinned," H100 ",1,7,"
                            "[CUDA memcpy Device-to-Host]\n"
                            "26900,150,10,,,,,,,,,,2000000,13333333.333,Pinned,Device," H100 ",1,7,"
                            "[CUDA memcpy Host-to-Device]\n");
}

/* --sort duration: longest first, ties in start order. Checked on the CorrId column. */
static void cuda_gpu_trace_sorts_by_duration(void)
{
    char *csv = run_report(stats_cuda_gpu_trace, TABLE_FORMAT_CSV, "duration");
    static const int expected[] = {2, 6, 1, 3, 4, 8, 10, 5, 7};
    char *line = strchr(csv, '\n') + 1;
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++) {
        int start, duration, corr;
        ASSERT_EQ(sscanf(line, "%d,%d,%d,", &start, &duration, &corr), 3);
        ASSERT_EQ(corr, expected[i]);
        line = strchr(line, '\n') + 1;
    }
    ASSERT_STR_EQ(line, "");
    free(csv);
}

static void cuda_gpu_trace_rejects_an_unknown_sort(void)
{
    struct stats_ctx ctx = {.db = open_session(), .format = TABLE_FORMAT_CSV, .sort = "name"};
    ctx.out = fopen("/dev/null", "w");
    ASSERT_EQ(stats_cuda_gpu_trace(&ctx), -EINVAL);
    ASSERT_STR_EQ(ctx.error, "cuda_gpu_trace: cannot sort by 'name' (start or duration)");
    fclose(ctx.out);
    sqlite3_close(ctx.db);
}

/* A kernel counts for every range it was launched inside: "step" holds the kernels of its
 * "forward"/"backward" children; "region" (start/end) overlaps steps 1 and 2; "io" lives in
 * domain "mylib" on thread 1001; "idle" launched nothing. */
static void nvtx_kern_sum_attributes_kernels_to_enclosing_ranges(void)
{
    expect_csv(stats_nvtx_kern_sum, NULL,
               "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns),"
               "Min (ns),Max (ns),StdDev (ns),Kernel Name\n"
               ":backward,PushPop,1000,1000,1,1,300,300,300,300,300,0,reduce(float*)\n"
               ":forward,PushPop,1000,1000,2,3,2000,666.667,700,500,800,152.753,"
               "\"axpy(float*, float*, float)\"\n"
               ":region,StartEnd,1000,1000,1,3,2000,666.667,700,500,800,152.753,"
               "\"axpy(float*, float*, float)\"\n"
               ":region,StartEnd,1000,1000,1,1,300,300,300,300,300,0,reduce(float*)\n"
               ":step,PushPop,1000,1000,2,3,2000,666.667,700,500,800,152.753,"
               "\"axpy(float*, float*, float)\"\n"
               ":step,PushPop,1000,1000,1,1,300,300,300,300,300,0,reduce(float*)\n"
               "mylib:io,PushPop,1000,1001,1,1,200,200,200,200,200,0,reduce(float*)\n");
}

/* Projections: step 1 runs from axpy at 2000 to the memset ending at 9800 (7800 ns, 5 ops),
 * step 2 from axpy at 21000 to the copy ending at 27150 (6150 ns, 3 ops); region [500, 21000)
 * holds the launches of step 1 and of the second forward (2000 .. 21700, 6 ops). */
static void nvtx_gpu_proj_sum_projects_nested_and_overlapping_ranges(void)
{
    expect_csv(stats_nvtx_gpu_proj_sum, NULL,
               "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances,"
               "Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns),"
               "Total GPU Ops,Avg GPU Ops,Avg Range Lvl,Avg Num Child\n"
               ":region,StartEnd,19700,20500,1,19700,19700,19700,19700,0,6,6,0,0\n"
               ":step,PushPop,13950,19000,2,6975,6975,6150,7800,1166.726,8,4,0,1.5\n"
               ":forward,PushPop,2100,7800,2,1050,1050,700,1400,494.975,3,1.5,1,0\n"
               ":backward,PushPop,800,4900,1,800,800,800,800,0,2,2,1,0\n"
               "mylib:io,PushPop,200,300,1,200,200,200,200,0,1,1,0,0\n");
}

/* A start/end range never ended holds every launch after its start: "tail" from 25000 holds
 * the two copies launched at 26000 and 26200 (26500 .. 27150); its range time is unknown. */
static void nvtx_gpu_proj_sum_projects_a_range_that_never_ended(void)
{
    sqlite3 *db = open_session();
    ASSERT(sqlite3_exec(db,
                        "INSERT INTO strings VALUES(17, 'tail');"
                        "INSERT INTO ranges(id, process_id, name_id, style, start_thread_id,"
                        " start_ns) VALUES(9, 1, 17, 1, 1, 25000);",
                        NULL, NULL, NULL) == SQLITE_OK);
    char *csv = run_report_on(db, stats_nvtx_gpu_proj_sum, TABLE_FORMAT_CSV, NULL);
    ASSERT(strstr(csv, "\n:tail,StartEnd,650,,1,650,650,650,650,0,2,2,0,0\n"));
    free(csv);
}

/* JSON carries the same exact numbers under the column keys. */
static void cuda_gpu_kern_sum_json_has_exact_values(void)
{
    char *json = run_report(stats_cuda_gpu_kern_sum, TABLE_FORMAT_JSON, NULL);
    ASSERT(strstr(json, "\"total_ns\": 500, \"instances\": 2, \"avg_ns\": 250, "
                        "\"med_ns\": 250, \"min_ns\": 200, \"max_ns\": 300, "
                        "\"stddev_ns\": 70.711, \"name\": \"reduce(float*)\"}"));
    free(json);
}

static double query_double(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    ASSERT(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    double v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The aggregates on their own: NULLs skipped, the even-count median between the middle two,
 * stddev 0 for one value and the sample formula otherwise (2, 4, 4, 4, 5, 5, 7, 9: mean 5,
 * squares 32, 32 / 7), NULL over no values (printed as -1 here). */
static void median_and_stddev_aggregates_follow_nsys(void)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    ASSERT_EQ(aggregate_sql_register(db), 0);
    ASSERT(sqlite3_exec(db, "CREATE TABLE v(x); INSERT INTO v VALUES (10), (NULL), (1), (3), (2);",
                        NULL, NULL, NULL) == SQLITE_OK);
    ASSERT(query_double(db, "SELECT lantern_median(x) FROM v") == 2.5);
    ASSERT(query_double(db, "SELECT lantern_median(x) FROM v WHERE x < 10") == 2);
    ASSERT(query_double(db, "SELECT lantern_stddev(x) FROM v WHERE x = 3") == 0);
    ASSERT(query_double(db, "SELECT lantern_median(x) FROM v WHERE x > 99") == -1);
    ASSERT(query_double(db, "SELECT lantern_stddev(x) FROM v WHERE x > 99") == -1);
    ASSERT(sqlite3_exec(db, "DELETE FROM v; INSERT INTO v VALUES (2),(4),(4),(4),(5),(5),(7),(9);",
                        NULL, NULL, NULL) == SQLITE_OK);
    double sd = query_double(db, "SELECT lantern_stddev(x) FROM v");
    ASSERT(sd > 2.138089935299395 - 1e-12 && sd < 2.138089935299395 + 1e-12);
    sqlite3_close(db);
}

/* Averages such as 3001 / 3000 GPU ops print to three decimals as 1.000: trimmed to "1",
 * never to "1." (which is no JSON number). */
static void near_whole_averages_print_as_valid_numbers(void)
{
    static const struct table_column cols[] = {{"Avg GPU Ops", "avg", TABLE_REAL},
                                               {"Avg", "avg_ns", TABLE_NS}};
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ASSERT(out);
    struct table *t = table_new(out, TABLE_FORMAT_JSON, 0, cols, 2);
    ASSERT(t);
    table_real(t, 3001.0 / 3000.0);
    table_ns(t, 1000.0002);
    ASSERT_EQ(table_finish(t), 0);
    fclose(out);
    ASSERT_STR_EQ(text, "[\n {\"avg\": 1, \"avg_ns\": 1000}\n]");
    free(text);
}

/* A session without CUDA activity gives empty reports, not errors. */
static void reports_of_a_session_without_cuda_are_empty(void)
{
    int (*reports[])(struct stats_ctx *) = {
        stats_cuda_api_sum,          stats_cuda_gpu_kern_sum, stats_cuda_gpu_mem_time_sum,
        stats_cuda_gpu_mem_size_sum, stats_cuda_gpu_trace,    stats_nvtx_kern_sum,
        stats_nvtx_gpu_proj_sum,
    };
    for (size_t i = 0; i < sizeof reports / sizeof *reports; i++) {
        struct stats_ctx ctx = {.format = TABLE_FORMAT_JSON};
        char *text = NULL;
        size_t size = 0;
        ASSERT(sqlite3_open(":memory:", &ctx.db) == SQLITE_OK);
        exec_file(ctx.db, LANTERN_SOURCE_DIR "/src/db/schema.sql");
        ctx.out = open_memstream(&text, &size);
        ASSERT_EQ(reports[i](&ctx), 0);
        fclose(ctx.out);
        ASSERT_STR_EQ(text, "[]");
        free(text);
        sqlite3_close(ctx.db);
    }
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"cuda_api_sum_matches_hand_computed_rows", cuda_api_sum_matches_hand_computed_rows},
        {"cuda_gpu_kern_sum_matches_hand_computed_rows",
         cuda_gpu_kern_sum_matches_hand_computed_rows},
        {"cuda_gpu_mem_time_sum_groups_copies_and_memsets",
         cuda_gpu_mem_time_sum_groups_copies_and_memsets},
        {"cuda_gpu_mem_size_sum_gives_exact_bytes", cuda_gpu_mem_size_sum_gives_exact_bytes},
        {"cuda_gpu_mem_size_sum_table_shows_megabytes",
         cuda_gpu_mem_size_sum_table_shows_megabytes},
        {"cuda_gpu_trace_lists_every_operation_in_start_order",
         cuda_gpu_trace_lists_every_operation_in_start_order},
        {"cuda_gpu_trace_sorts_by_duration", cuda_gpu_trace_sorts_by_duration},
        {"cuda_gpu_trace_rejects_an_unknown_sort", cuda_gpu_trace_rejects_an_unknown_sort},
        {"nvtx_kern_sum_attributes_kernels_to_enclosing_ranges",
         nvtx_kern_sum_attributes_kernels_to_enclosing_ranges},
        {"nvtx_gpu_proj_sum_projects_nested_and_overlapping_ranges",
         nvtx_gpu_proj_sum_projects_nested_and_overlapping_ranges},
        {"nvtx_gpu_proj_sum_projects_a_range_that_never_ended",
         nvtx_gpu_proj_sum_projects_a_range_that_never_ended},
        {"cuda_gpu_kern_sum_json_has_exact_values", cuda_gpu_kern_sum_json_has_exact_values},
        {"median_and_stddev_aggregates_follow_nsys", median_and_stddev_aggregates_follow_nsys},
        {"near_whole_averages_print_as_valid_numbers", near_whole_averages_print_as_valid_numbers},
        {"reports_of_a_session_without_cuda_are_empty",
         reports_of_a_session_without_cuda_are_empty},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
