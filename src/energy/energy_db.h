/* The energy model over a Lantern database: loads each GPU's power samples and counter
 * updates from gpu_samples into energy tracks, so the importer (energy windows) and the
 * reports (energy per range, kernel, process) answer with the same interpolation. */
#ifndef LANTERN_ENERGY_DB_H
#define LANTERN_ENERGY_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "energy/energy_model.h"

struct energy_db_gpu {
    int64_t gpu_id; /* gpus.id */
    struct energy_track track;
};

/* Loads every GPU that has samples. Returns how many (0: none) with *out (free with
 * energy_db_free), or -1 (SQLite error or no memory). */
int energy_db_load(sqlite3 *db, struct energy_db_gpu **out);
void energy_db_free(struct energy_db_gpu *gpus, int count);

/* Registers SQL functions over the database's samples on this connection (the tracks are
 * loaded once and freed when the connection closes):
 *   lantern_gpu_energy_j(gpu_id, start_ns, end_ns)   joules of that GPU, NULL if no samples
 *   lantern_gpu_energy_error_j(gpu_id, start_ns, end_ns)   its error bound
 *   lantern_energy_j(start_ns, end_ns)               joules of all sampled GPUs together
 * so reports aggregate energy in SQL like any column. Returns the number of GPUs with samples
 * (0: the functions return NULL), or -1. */
int energy_db_register_sql(sqlite3 *db);

#endif
