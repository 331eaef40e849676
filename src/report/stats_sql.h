/* SQL aggregates the reports need and SQLite lacks: median and sample standard deviation,
 * registered per connection so each report stays one readable query. */
#ifndef LANTERN_REPORT_STATS_SQL_H
#define LANTERN_REPORT_STATS_SQL_H

#include <sqlite3.h>

/* Registers lantern_median(x) and lantern_stddev(x) on db. NULL inputs are skipped.
 * lantern_median: middle value, the mean of the two middle values for an even count.
 * lantern_stddev: sample standard deviation (n - 1), 0 for a single value, as nsys reports it.
 * Returns 0, or a negative SQLite error code. Registering twice is harmless. */
int stats_sql_register(sqlite3 *db);

#endif
