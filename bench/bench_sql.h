/* Helpers shared by the benchmarks that write synthetic databases with SQL (bench_analyze,
 * bench_diff, bench_kernels, bench_ranks): one script run with its error printed, one prepared
 * row, the process's CPU and wall clocks in seconds. */
#ifndef LANTERN_BENCH_SQL_H
#define LANTERN_BENCH_SQL_H

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

/* Runs a script; on error prints it after the program's name and returns -1. */
static inline int exec_sql(sqlite3 *db, const char *sql)
{
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) == SQLITE_OK)
        return 0;
    fprintf(stderr, "%s: %s\n", program_invocation_short_name, error);
    sqlite3_free(error);
    return -1;
}

/* Binds n integers to a prepared statement and runs it once. */
static inline void bind_step(sqlite3_stmt *st, int n, const int64_t *v)
{
    sqlite3_reset(st);
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    sqlite3_step(st);
}

/* CPU seconds (user + system) this process has used. */
static inline double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static inline double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
