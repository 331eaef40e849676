/* Median and sample standard deviation (see aggregates.h): the C functions and the SQL
 * aggregates over them. An aggregate keeps every value of its group (sorted at the end for
 * the median), as the median needs them all anyway. */
#include "model/aggregates.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double aggregate_median_sorted(const double *sorted, size_t n)
{
    size_t mid = n / 2;
    return n % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

double aggregate_stddev(const double *values, size_t n)
{
    if (n < 2)
        return 0;
    long double sum = 0, squares = 0;
    for (size_t i = 0; i < n; i++)
        sum += values[i];
    long double mean = sum / n;
    for (size_t i = 0; i < n; i++)
        squares += (values[i] - mean) * (values[i] - mean);
    return (double)sqrtl(squares / (n - 1));
}

/* A group's values, as an aggregate collects them. */
struct group_values {
    double *values;
    size_t count, capacity;
    int out_of_memory;
};

static void values_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct group_values *g = sqlite3_aggregate_context(ctx, sizeof *g);
    if (!g || g->out_of_memory || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    if (g->count == g->capacity) {
        size_t capacity = g->capacity ? g->capacity * 2 : 64;
        double *grown = realloc(g->values, capacity * sizeof *grown);
        if (!grown) {
            g->out_of_memory = 1;
            return;
        }
        g->values = grown;
        g->capacity = capacity;
    }
    g->values[g->count++] = sqlite3_value_double(argv[0]);
}

/* The group's values, or NULL after setting the result (NULL for no values, an error when out
 * of memory). The caller frees them. */
static struct group_values *values_final(sqlite3_context *ctx)
{
    struct group_values *g = sqlite3_aggregate_context(ctx, 0);
    if (g && g->count && !g->out_of_memory)
        return g;
    if (g && g->out_of_memory)
        sqlite3_result_error_nomem(ctx);
    else
        sqlite3_result_null(ctx);
    if (g)
        free(g->values);
    return NULL;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void median_final(sqlite3_context *ctx)
{
    struct group_values *g = values_final(ctx);
    if (!g)
        return;
    qsort(g->values, g->count, sizeof *g->values, compare_doubles);
    sqlite3_result_double(ctx, aggregate_median_sorted(g->values, g->count));
    free(g->values);
}

static void stddev_final(sqlite3_context *ctx)
{
    struct group_values *g = values_final(ctx);
    if (!g)
        return;
    sqlite3_result_double(ctx, aggregate_stddev(g->values, g->count));
    free(g->values);
}

int aggregate_sql_register(sqlite3 *db)
{
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    int rc = sqlite3_create_function(db, "lantern_median", 1, flags, NULL, NULL, values_step,
                                     median_final);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "lantern_stddev", 1, flags, NULL, NULL, values_step,
                                     stddev_final);
    return rc == SQLITE_OK ? 0 : -rc;
}
