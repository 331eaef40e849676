/* CPU package energy (RAPL) as the reports read it: the launcher's cumulative samples
 * (cpu_energy_samples, docs/schema.md) interpolated linearly at an interval's ends, so that
 * disjoint intervals add up to their union, as GPU energy does (src/energy/energy_db.h). */
#ifndef LANTERN_MODEL_CPU_ENERGY_H
#define LANTERN_MODEL_CPU_ENERGY_H

#include <sqlite3.h>
#include <stddef.h>

/* Registers the SQL function lantern_cpu_energy_j(package, start_ns, end_ns) on db: the
 * package's joules in [start, end] (clamped to its sampled span; NULL for a package never
 * sampled). Returns how many packages were sampled (0: none, or a database from before
 * RAPL was recorded, and the function is not registered), or a negative errno. */
int cpu_energy_register_sql(sqlite3 *db);

/* Why CPU energy was not sampled (meta.rapl_disabled_reason) into why; 1 when there is one,
 * 0 when none was recorded (RAPL not asked for, or sampled). */
int cpu_energy_disabled_reason(sqlite3 *db, char *why, size_t size);

#endif
