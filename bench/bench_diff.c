/* Benchmark of `lantern diff` (docs/benchmarks.md, "Diff"): builds two databases of N NVTX
 * ranges each (default 1 M: 50 names on one thread, durations around 10-500 µs with +-20 %
 * jitter; in the second, a fifth of the names 10 % slower), then times the whole comparison
 * in this process as `lantern diff` runs it: both loaded, compared (Mann-Whitney U and the
 * bootstrap per row, the false-discovery control, the explanations of the changed ranges,
 * the checks) and the table written to /dev/null. The generation is not timed.
 * Usage: bench_diff [N=1000000] [DIR=/tmp] [keep|drop] */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_sql.h"
#include "db/import.h"
#include "diff/diff.h"

#define NAMES 50

static int generate(const char *path, long ranges, int slower)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK || exec_sql(db, import_schema_sql) < 0)
        return -1;
    exec_sql(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;");
    char sql[512];
    for (int i = 0; i < NAMES; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO strings VALUES (%d, 'range_%02d');", i + 1, i);
        exec_sql(db, sql);
    }
    sqlite3_stmt *range;
    sqlite3_prepare_v2(db,
                       "INSERT INTO ranges(id, process_id, name_id, style, depth, start_thread_id,"
                       " end_thread_id, start_ns, end_ns) VALUES (?, 1, ?, 0, 0, 1, 1, ?, ?)",
                       -1, &range, NULL);
    unsigned seed = slower ? 2 : 1;
    int64_t t = 1000;
    for (long i = 0; i < ranges; i++) {
        int name = (int)(i % NAMES);
        double ns = 10000.0 * (1 + name) * (0.8 + 0.4 * rand_r(&seed) / RAND_MAX);
        if (slower && name % 5 == 0)
            ns *= 1.1;
        bind_step(range, 4, (int64_t[]){i + 1, name + 1, t, t + (int64_t)ns});
        t += (int64_t)ns + 1000;
    }
    sqlite3_finalize(range);
    snprintf(sql, sizeof sql,
             "INSERT INTO meta VALUES ('schema_version', %d), ('start_ns', 0), ('end_ns', %lld),"
             " ('command', 'bench_diff'), ('lantern_version', '%s'), ('host', 'bench'),"
             " ('dropped_events', 0), ('import_warnings', 0);"
             "INSERT INTO processes(id, pid, start_ns, end_ns, clean_exit) VALUES (1, 4242, 0,"
             " %lld, 1); INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 4242);"
             "INSERT INTO domains VALUES (0, NULL); COMMIT;",
             IMPORT_SCHEMA_VERSION, (long long)t, LANTERN_VERSION, (long long)t);
    int rc = exec_sql(db, sql) < 0 || exec_sql(db, import_indexes_sql) < 0 ? -1 : 0;
    sqlite3_close(db);
    return rc;
}

int main(int argc, char **argv)
{
    long ranges = argc > 1 ? atol(argv[1]) : 1000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    int keep = argc > 3 && !strcmp(argv[3], "keep");
    char paths[2][512];
    for (int side = 0; side < 2; side++) {
        snprintf(paths[side], sizeof paths[side], "%s/lantern_bench_diff_%ld_%s.db", dir, ranges,
                 side ? "new" : "base");
        if (access(paths[side], F_OK) == 0)
            continue;
        double t0 = wall_s();
        if (generate(paths[side], ranges, side) < 0)
            return fprintf(stderr, "bench_diff: cannot create %s\n", paths[side]), 1;
        fprintf(stderr, "bench_diff: generated %s in %.1f s (not timed below)\n", paths[side],
                wall_s() - t0);
    }
    sqlite3 *db[2];
    struct diff_run *run[2];
    struct diff_result res;
    struct diff_options options = {.threshold_percent = 5, .alpha = 0.05};
    char error[256];
    FILE *out = fopen("/dev/null", "w");
    double c0 = cpu_s(), w0 = wall_s();
    for (int side = 0; side < 2; side++)
        if (sqlite3_open_v2(paths[side], &db[side], SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK ||
            diff_run_load(db[side], paths[side], &run[side], error, sizeof error) < 0)
            return fprintf(stderr, "bench_diff: %s: %s\n", paths[side], error), 1;
    double c1 = cpu_s(), w1 = wall_s();
    if (diff_compare(&run[0], 1, &run[1], 1, &options, &res, error, sizeof error) < 0)
        return fprintf(stderr, "bench_diff: %s\n", error), 1;
    diff_write(&res, TABLE_FORMAT_TABLE, 0, 1, out);
    double c2 = cpu_s(), w2 = wall_s();
    printf("ranges %ld per database: load %.2f s CPU (%.2f s wall), compare and write %.2f s CPU "
           "(%.2f s wall), together %.2f s CPU (%.2f s wall); %zu rows, %zu slower\n",
           ranges, c1 - c0, w1 - w0, c2 - c1, w2 - w1, c2 - c0, w2 - w0, res.count,
           res.verdicts[DIFF_SLOWER]);
    diff_result_release(&res);
    for (int side = 0; side < 2; side++) {
        diff_run_free(run[side]);
        sqlite3_close(db[side]);
        if (!keep)
            unlink(paths[side]);
    }
    fclose(out);
    return 0;
}
