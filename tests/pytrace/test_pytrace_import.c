/* --python-backtrace from the trace file to `lantern kernels -c trace`: TRACE_CUDA_BACKTRACE
 * records written as the agent writes them (before the CUPTI records of their calls), imported
 * by the real importer, and the report's trace column checked value by value. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "db/import.h"
#include "harness.h"
#include "import/raw_writer.h"
#include "model/kernels.h"

static const char step_stack[] = "/home/u/train.py:12:step<-/home/u/train.py:30:main";
static const char native_stack[] = "launch_vec_add+0x2f(app)<-main+0x40(app)";

static void raw_backtrace(struct raw_writer *w, uint64_t correlation, uint64_t string_id)
{
    RAW(w, cuda_backtrace, .correlation = correlation, .stack = string_id);
}

static void raw_api(struct raw_writer *w, uint64_t api, uint64_t name, uint64_t start,
                    uint64_t correlation)
{
    RAW(w, cuda_api, .os_tid = 4242, .api = api,
        .cbid = api ? 307 : 211, /* not looked at by the importer */
        .name = name, .start = start, .end = start + 5, .return_code = 0,
        .correlation = correlation);
}

static void raw_kernel(struct raw_writer *w, uint64_t correlation, uint64_t start, uint64_t name)
{
    RAW(w, cuda_kernel, .device = 0, .context = 1, .stream = 7, .correlation = correlation,
        .start = start, .end = start + 100, .name = name, .demangled = name, .grid_x = 1,
        .grid_y = 1, .grid_z = 1, .block_x = 1, .block_y = 1, .block_z = 1, .cluster_x = 1,
        .cluster_y = 1, .cluster_z = 1);
}

/* Five launches: 1 and 2 from one Python line (the same string id, as the writer interns
 * it), 3 from native code, 4 by the runtime with its driver call sharing the correlation,
 * 5 without a backtrace. */
static void write_session(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/4242-1000.lrt", dir);
    struct raw_writer w;
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, 1000);
    raw_process(&w, 4242, 1000, "python\0train.py", 15, TRACE_FLAG_CUDA, "cuda");
    raw_string(&w, 1, step_stack);
    raw_string(&w, 2, native_stack);
    raw_string(&w, 3, "cudaLaunchKernel");
    raw_string(&w, 4, "cuLaunchKernel");
    raw_string(&w, 5, "vec_add");
    raw_backtrace(&w, 11, 1);
    raw_backtrace(&w, 12, 1);
    raw_backtrace(&w, 13, 2);
    raw_backtrace(&w, 14, 1);
    raw_flush(&w, 0);
    raw_chunk(&w, 2000);
    for (uint64_t c = 11; c <= 15; c++) {
        raw_api(&w, 0, 3, 2000 + c * 10, c);
        raw_kernel(&w, c, 5000 + c * 1000, 5);
    }
    raw_api(&w, 1, 4, 2142, 14); /* inside launch 14's runtime call */
    raw_flush(&w, 0);
    raw_close(&w);
}

static sqlite3 *import_into(char *dir, char *db_path, size_t db_path_len)
{
    ASSERT(mkdtemp(dir));
    write_session(dir);
    snprintf(db_path, db_path_len, "%s.db", dir);
    ASSERT_EQ(import_session(dir, db_path, NULL, NULL), 0);
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

static void cleanup(sqlite3 *db, const char *dir, const char *db_path)
{
    char cmd[600];
    sqlite3_close(db);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, db_path);
    ASSERT_EQ(system(cmd), 0);
}

static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    long long v = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL
                      ? sqlite3_column_int64(st, 0)
                      : -1;
    sqlite3_finalize(st);
    return v;
}

static void backtraces_land_on_every_call_of_their_correlation(void)
{
    char dir[] = "/tmp/lantern-pytrace-XXXXXX", db_path[64];
    sqlite3 *db = import_into(dir, db_path, sizeof db_path);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api"), 6);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api WHERE backtrace_id IS NOT NULL"), 5);
    /* one string for the repeated stack */
    ASSERT_EQ(query_int(db, "SELECT count(DISTINCT backtrace_id) FROM cuda_api"), 2);
    ASSERT_EQ(query_int(db, "SELECT count(*) FROM cuda_api a JOIN strings s ON s.id ="
                            " a.backtrace_id WHERE s.value LIKE '%train.py:12:step%'"),
              4); /* 11, 12, and 14's runtime and driver calls */
    ASSERT_EQ(query_int(db, "SELECT backtrace_id IS NULL FROM cuda_api WHERE correlation_id = 15"),
              1);
    cleanup(db, dir, db_path);
}

static void kernels_trace_column_shows_the_launching_stack(void)
{
    char dir[] = "/tmp/lantern-pytrace-XXXXXX", db_path[64];
    sqlite3 *db = import_into(dir, db_path, sizeof db_path);
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    ASSERT(out);
    struct kernels_options opt = {.columns = "idx,kernel,trace", .format = KERNELS_FORMAT_CSV};
    ASSERT_EQ(kernels_write(db, &opt, out), 0);
    ASSERT_EQ(fclose(out), 0);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "idx,kernel,trace\n0,vec_add,%s\n1,vec_add,%s\n2,vec_add,%s\n3,vec_add,%s\n"
             "4,vec_add,na\n",
             step_stack, step_stack, native_stack, step_stack);
    ASSERT_STR_EQ(text, expected);
    free(text);
    cleanup(db, dir, db_path);
}

static const struct test_case tests[] = {
    {"backtraces_land_on_every_call_of_their_correlation",
     backtraces_land_on_every_call_of_their_correlation},
    {"kernels_trace_column_shows_the_launching_stack",
     kernels_trace_column_shows_the_launching_stack},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
