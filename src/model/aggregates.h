/* Median and sample standard deviation, the one implementation every report uses: as C
 * functions (nvtx_sum.c) and as SQL aggregates registered per connection so each CUDA report
 * stays one readable query. */
#ifndef LANTERN_MODEL_AGGREGATES_H
#define LANTERN_MODEL_AGGREGATES_H

#include <sqlite3.h>
#include <stddef.h>

/* Median of n > 0 values sorted ascending: the middle value, the mean of the two middle
 * values for an even count. */
double aggregate_median_sorted(const double *sorted, size_t n);

/* Sample standard deviation (n - 1) of n > 0 values, 0 for a single value, as nsys reports
 * it. Two passes in long double, so large nanosecond values keep their precision. */
double aggregate_stddev(const double *values, size_t n);

/* Registers lantern_median(x) and lantern_stddev(x) on db (the functions above over a
 * group's values; NULL inputs are skipped). Returns 0, or a negative SQLite error code.
 * Registering twice is harmless. */
int aggregate_sql_register(sqlite3 *db);

#endif
