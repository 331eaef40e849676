/* The energy model over a Lantern database: loads each GPU's power samples and counter
 * updates from gpu_samples into energy tracks, so the importer (energy windows) and the
 * reports (energy per range, kernel, process) answer with the same interpolation; and which
 * GPUs each process is charged with, so that in a database of many ranks a range costs the
 * energy of its own process's GPUs, not the whole job's. */
#ifndef LANTERN_ENERGY_DB_H
#define LANTERN_ENERGY_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "energy/energy_model.h"

struct energy_db_gpu {
    int64_t gpu_id; /* gpus.id */
    struct energy_track track;
};

/* Loads every GPU that has samples, in gpu_id order. Returns how many (0: none) with *out
 * (free with energy_db_free), or -EIO (SQLite error) or -ENOMEM. */
int energy_db_load(sqlite3 *db, struct energy_db_gpu **out);
void energy_db_free(struct energy_db_gpu *gpus, int count);

/* The sampled GPUs each process is charged with (docs/energy.md, "Whose energy"):
 * 1. the GPUs it had a CUDA context on (cuda_contexts: a context exists only on a GPU the
 *    process used; CUPTI may list every visible device in process_gpus);
 * 2. without any context, the GPUs CUDA listed for it (process_gpus);
 * 3. when no process of the database is known to have used a GPU (CUDA not traced) and the
 *    processes ran on one host, every sampled GPU (they are that host's);
 * otherwise none: a process that used no GPU, or one of several hosts without CUDA, is
 * charged nothing rather than another process's GPUs. */
struct energy_db_users {
    size_t count;        /* (process, GPU) pairs, in process then GPU order */
    int64_t *process_id; /* of each pair */
    int *gpu;            /* of each pair: an index into the energy_db_gpu array given to the load */
};
/* Returns 0, -EIO (SQLite error) or -ENOMEM; release *out in all cases. */
int energy_db_users_load(sqlite3 *db, const struct energy_db_gpu *gpus, int count,
                         struct energy_db_users *out);
/* The GPUs (indices into the loaded array) of a process; *n = 0 (and NULL) when none. */
const int *energy_db_users_of(const struct energy_db_users *u, int64_t process_id, size_t *n);
void energy_db_users_release(struct energy_db_users *u);

/* Registers SQL functions over the database's samples on this connection (the tracks are
 * loaded once and freed when the connection closes):
 *   lantern_gpu_energy_j(gpu_id, start_ns, end_ns)   joules of that GPU, NULL if no samples
 *   lantern_gpu_energy_error_j(gpu_id, start_ns, end_ns)   its error bound
 *   lantern_process_energy_j(process_id, start_ns, end_ns)   joules of the process's GPUs
 *                                                    (energy_db_users), NULL if it has none
 *   lantern_process_energy_error_j(process_id, start_ns, end_ns)   its error bound
 * and fills temp.energy_process_gpus(process_id, gpu_id) with the same pairs, for reports that
 * join on them; so reports aggregate energy in SQL like any column. Returns the number of
 * GPUs with samples (0: the functions return NULL), or -EIO or -ENOMEM. */
int energy_db_register_sql(sqlite3 *db);

#endif
