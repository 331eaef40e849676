/* python_gil_sum on a database crafted with its numbers worked out by hand: two Python threads'
 * GIL waits (cpu_gil_waits), their totals equal to the table's rows, their share of each
 * thread's wall time, the functions they waited in, --filter-nvtx clipping the waits to a
 * thread's ranges, and why an empty report is empty. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "db/import.h"
#include "harness.h"
#include "stats/stats.h"

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s\n", err);
        exit(1);
    }
}

#define MS "000000"

/* Process 1 (pid 200, prog.py): thread 1 main (no wait), 2 w0, 3 w1. Frames hot, warm, run
 * (prog.py); stacks 1 run>hot, 2 run>warm. w0 has samples at 1 and 100 ms and waits [10,20]
 * hot, [30,40] hot, [50,60] warm, [65,70] with no stack: 35 ms of a 99 ms span (1 .. 100).
 * w1 starts at 5 ms and waits [20,50] warm: 30 ms of a 45 ms span (5 .. 50). Ranges 'step':
 * w0 [15,45] with [20,30] nested, and [65,80]; w1 [0,35]; 'other' on w0 [0,100]; 'tail' on
 * w1 from 40 ms, never ended: to the session's end (100 ms). */
static sqlite3 *gil_session(void)
{
    sqlite3 *db = NULL;
    ASSERT(sqlite3_open(":memory:", &db) == SQLITE_OK);
    exec(db, import_schema_sql);
    exec(db,
         "INSERT INTO meta VALUES('schema_version', 7), ('start_ns', 0), ('end_ns', 100" MS ");"
         "INSERT INTO processes(id, pid, start_ns, end_ns, clean_exit, name) VALUES(1, 200, 0,"
         " 100" MS ", 1, 'prog.py');"
         "INSERT INTO strings VALUES(1, 'w0'), (2, 'w1'), (3, 'step'), (4, 'other'), (5, 'tail');"
         "INSERT INTO threads(id, process_id, tid, python_name_id, start_ns) VALUES"
         " (1, 1, 200, NULL, NULL), (2, 1, 201, 1, NULL), (3, 1, 202, 2, 5" MS ");"
         "INSERT INTO cpu_sampling(process_id, status, period_ns, python_status)"
         " VALUES(1, 'on', 1" MS ", 'on');"
         "INSERT INTO cpu_frames(id, name, module, file, line) VALUES"
         " (1, 'hot', 'prog.py', '/p/prog.py', 3), (2, 'warm', 'prog.py', '/p/prog.py', 9),"
         " (3, 'run', 'prog.py', '/p/prog.py', 15);"
         "INSERT INTO cpu_callsites VALUES(1, NULL, 3, 0), (2, 1, 1, 1), (3, 1, 2, 1);"
         "INSERT INTO cpu_stacks VALUES(1, 1, 2), (2, 1, 3);"
         "INSERT INTO cpu_samples VALUES(2, 1" MS ", 1), (2, 100" MS ", 2), (1, 50" MS ", 1);"
         "INSERT INTO cpu_gil_waits VALUES(2, 20" MS ", 10" MS ", 1), (2, 40" MS ", 10" MS ", 1),"
         " (2, 60" MS ", 10" MS ", 2), (2, 70" MS ", 5" MS ", NULL), (3, 50" MS ", 30" MS ", 2);"
         "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
         " end_thread_id, start_ns, end_ns) VALUES"
         " (1, 1, 3, 0, 0, 2, 2, 15" MS ", 45" MS "), (2, 1, 3, 0, 1, 2, 2, 20" MS ", 30" MS "),"
         " (3, 1, 3, 0, 0, 2, 2, 65" MS ", 80" MS "), (4, 1, 3, 0, 0, 3, 3, 0, 35" MS "),"
         " (5, 1, 4, 0, 0, 2, 2, 0, 100" MS "), (6, 1, 5, 0, 0, 3, NULL, 40" MS ", NULL);");
    return db;
}

static char *run_gil(sqlite3 *db, enum table_format format, const char *filter, char *note)
{
    struct stats_ctx ctx = {.db = db, .format = format, .filter_nvtx = filter};
    char *text = NULL;
    size_t size = 0;
    ctx.out = open_memstream(&text, &size);
    ASSERT(ctx.out);
    int rc = stats_python_gil_sum(&ctx);
    if (rc != 0)
        fprintf(stderr, "report failed: %s\n", ctx.error);
    ASSERT_EQ(rc, 0);
    fclose(ctx.out);
    if (note)
        memcpy(note, ctx.note, sizeof ctx.note);
    return text;
}

static void each_thread_s_waits_sum_to_its_rows_with_their_share_and_functions(void)
{
    sqlite3 *db = gil_session();
    char *csv = run_gil(db, TABLE_FORMAT_CSV, NULL, NULL);
    ASSERT_STR_EQ(
        csv, "Wait (%),Total Wait (ns),Num Waits,Wall Time (ns),Functions,Thread,Process\n"
             "35.354,35000000,4,99000000,\"hot 57.1 %, warm 28.6 %, [no Python stack] 14.3 %\","
             "201 (w0),200 (prog.py)\n"
             "66.667,30000000,1,45000000,warm 100.0 %,202 (w1),200 (prog.py)\n");
    free(csv);
    /* the totals are the table's rows */
    sqlite3_stmt *st;
    ASSERT(sqlite3_prepare_v2(db,
                              "SELECT thread_id, sum(duration_ns), count(*) FROM cpu_gil_waits"
                              " GROUP BY 1 ORDER BY 1",
                              -1, &st, NULL) == SQLITE_OK);
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int64(st, 1), 35000000);
    ASSERT_EQ(sqlite3_column_int64(st, 2), 4);
    ASSERT(sqlite3_step(st) == SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int64(st, 1), 30000000);
    ASSERT_EQ(sqlite3_column_int64(st, 2), 1);
    sqlite3_finalize(st);
    char *json = run_gil(db, TABLE_FORMAT_JSON, NULL, NULL);
    ASSERT(strstr(json, "\"wait_ns\": 35000000"));
    ASSERT(strstr(json, "\"wall_ns\": 45000000"));
    ASSERT(strstr(json, "\"thread\": \"202 (w1)\""));
    free(json);
    sqlite3_close(db);
}

/* In 'step': w0's waits inside [15,45) and [65,80): 5 + 10 + 0 + 5 ms of 45 ms (the wait
 * [50,60] outside is not counted); w1's [20,50] inside [0,35): 15 of 35 ms. */
static void filter_nvtx_clips_the_waits_to_the_thread_s_ranges(void)
{
    sqlite3 *db = gil_session();
    char *csv = run_gil(db, TABLE_FORMAT_CSV, "step", NULL);
    ASSERT_STR_EQ(csv,
                  "Wait (%),Total Wait (ns),Num Waits,Wall Time (ns),Functions,Thread,Process\n"
                  "44.444,20000000,3,45000000,\"hot 75.0 %, [no Python stack] 25.0 %\","
                  "201 (w0),200 (prog.py)\n"
                  "42.857,15000000,1,35000000,warm 100.0 %,202 (w1),200 (prog.py)\n");
    free(csv);
    /* a range never ended counts to the session's end: w1's [40,50] of [40,100) */
    csv = run_gil(db, TABLE_FORMAT_CSV, "tail", NULL);
    ASSERT_STR_EQ(csv,
                  "Wait (%),Total Wait (ns),Num Waits,Wall Time (ns),Functions,Thread,Process\n"
                  "16.667,10000000,1,60000000,warm 100.0 %,202 (w1),200 (prog.py)\n");
    free(csv);
    char note[1024];
    csv = run_gil(db, TABLE_FORMAT_CSV, "nowhere", note);
    ASSERT_STR_EQ(csv,
                  "Wait (%),Total Wait (ns),Num Waits,Wall Time (ns),Functions,Thread,Process\n");
    ASSERT_STR_EQ(note, "python_gil_sum: no GIL wait inside an NVTX range named 'nowhere'");
    free(csv);
    sqlite3_close(db);
}

static void an_empty_report_says_why(void)
{
    sqlite3 *db = gil_session();
    char note[1024];
    exec(db, "DELETE FROM cpu_gil_waits");
    free(run_gil(db, TABLE_FORMAT_TABLE, NULL, note));
    ASSERT_STR_EQ(note, "python_gil_sum: no Python thread was seen waiting for the GIL");
    exec(db, "DELETE FROM cpu_sampling");
    free(run_gil(db, TABLE_FORMAT_TABLE, NULL, note));
    ASSERT(strstr(note, "the Python sampler did not run"));
    sqlite3_close(db);
}

static const struct test_case tests[] = {
    {"each_thread_s_waits_sum_to_its_rows_with_their_share_and_functions",
     each_thread_s_waits_sum_to_its_rows_with_their_share_and_functions},
    {"filter_nvtx_clips_the_waits_to_the_thread_s_ranges",
     filter_nvtx_clips_the_waits_to_the_thread_s_ranges},
    {"an_empty_report_says_why", an_empty_report_says_why},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    return test_main(tests, argc, argv);
}
