/* lantern_median() and lantern_stddev(): aggregates registered on the reports' connection.
 * Median keeps every value of its group (sorted at the end); stddev uses Welford's update so
 * large nanosecond values do not lose precision the way sum-of-squares would. */
#include "report/stats_sql.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct median_state {
    double *values;
    size_t count, capacity;
    int out_of_memory;
};

static void median_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct median_state *st = sqlite3_aggregate_context(ctx, sizeof *st);
    if (!st || st->out_of_memory || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    if (st->count == st->capacity) {
        size_t capacity = st->capacity ? st->capacity * 2 : 64;
        double *grown = realloc(st->values, capacity * sizeof *grown);
        if (!grown) {
            st->out_of_memory = 1;
            return;
        }
        st->values = grown;
        st->capacity = capacity;
    }
    st->values[st->count++] = sqlite3_value_double(argv[0]);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void median_final(sqlite3_context *ctx)
{
    struct median_state *st = sqlite3_aggregate_context(ctx, 0);
    if (!st || st->count == 0) {
        if (st)
            free(st->values);
        sqlite3_result_null(ctx);
        return;
    }
    if (st->out_of_memory) {
        free(st->values);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    qsort(st->values, st->count, sizeof *st->values, compare_doubles);
    size_t mid = st->count / 2;
    double median = st->count % 2 ? st->values[mid] : (st->values[mid - 1] + st->values[mid]) / 2;
    free(st->values);
    sqlite3_result_double(ctx, median);
}

struct stddev_state {
    long long count;
    double mean, squares; /* Welford: running mean and sum of squared deviations */
};

static void stddev_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct stddev_state *st = sqlite3_aggregate_context(ctx, sizeof *st);
    if (!st || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    double x = sqlite3_value_double(argv[0]);
    st->count++;
    double delta = x - st->mean;
    st->mean += delta / (double)st->count;
    st->squares += delta * (x - st->mean);
}

static void stddev_final(sqlite3_context *ctx)
{
    struct stddev_state *st = sqlite3_aggregate_context(ctx, 0);
    if (!st || st->count == 0) {
        sqlite3_result_null(ctx);
        return;
    }
    double variance = st->count > 1 ? st->squares / (double)(st->count - 1) : 0.0;
    sqlite3_result_double(ctx, sqrt(variance));
}

int stats_sql_register(sqlite3 *db)
{
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    int rc = sqlite3_create_function(db, "lantern_median", 1, flags, NULL, NULL, median_step,
                                     median_final);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "lantern_stddev", 1, flags, NULL, NULL, stddev_step,
                                     stddev_final);
    return rc == SQLITE_OK ? 0 : -rc;
}
