/* Loading gpu_samples into energy tracks (see energy_db.h): one pass to size each GPU's rings
 * exactly (so nothing is overwritten), one pass in time order to fill them. */
#include "energy/energy_db.h"

#include <stdlib.h>

static int count_gpus(sqlite3 *db, struct energy_db_gpu **out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu_id, count(power_mw) + count(power_avg_mw), count(energy_mj)"
                           " FROM gpu_samples GROUP BY gpu_id ORDER BY gpu_id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int n = 0, cap = 0, rc;
    struct energy_db_gpu *gpus = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4;
            struct energy_db_gpu *bigger = realloc(gpus, (size_t)cap * sizeof *gpus);
            if (!bigger)
                goto fail;
            gpus = bigger;
        }
        struct energy_db_gpu *g = &gpus[n];
        g->gpu_id = sqlite3_column_int64(st, 0);
        if (energy_track_init(&g->track, (size_t)sqlite3_column_int64(st, 1),
                              (size_t)sqlite3_column_int64(st, 2)) != 0)
            goto fail;
        n++;
    }
    if (rc != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    *out = gpus;
    return n;
fail:
    sqlite3_finalize(st);
    energy_db_free(gpus, n);
    return -1;
}

static struct energy_db_gpu *find(struct energy_db_gpu *gpus, int n, int64_t gpu_id)
{
    for (int i = 0; i < n; i++)
        if (gpus[i].gpu_id == gpu_id)
            return &gpus[i];
    return NULL;
}

int energy_db_load(sqlite3 *db, struct energy_db_gpu **out)
{
    *out = NULL;
    struct energy_db_gpu *gpus;
    int n = count_gpus(db, &gpus);
    if (n <= 0)
        return n;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu_id, ts_ns, COALESCE(power_mw, power_avg_mw), energy_mj,"
                           " COALESCE(energy_uncertainty_ns, 0) FROM gpu_samples"
                           " ORDER BY gpu_id, ts_ns",
                           -1, &st, NULL) != SQLITE_OK) {
        energy_db_free(gpus, n);
        return -1;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct energy_db_gpu *g = find(gpus, n, sqlite3_column_int64(st, 0));
        uint64_t ts = (uint64_t)sqlite3_column_int64(st, 1);
        if (!g)
            continue;
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            energy_track_add_power(&g->track, ts, sqlite3_column_double(st, 2));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            energy_track_add_update(&g->track, ts, (uint64_t)sqlite3_column_int64(st, 4),
                                    sqlite3_column_double(st, 3));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        energy_db_free(gpus, n);
        return -1;
    }
    *out = gpus;
    return n;
}

void energy_db_free(struct energy_db_gpu *gpus, int count)
{
    for (int i = 0; i < count; i++)
        energy_track_release(&gpus[i].track);
    free(gpus);
}

/* ---- SQL functions ------------------------------------------------------------------------- */

struct energy_sql {
    struct energy_db_gpu *gpus;
    int count;
};

static void energy_sql_free(void *p)
{
    struct energy_sql *e = p;
    energy_db_free(e->gpus, e->count);
    free(e);
}

enum energy_sql_result { RESULT_JOULES, RESULT_ERROR };

/* Shared by the per-GPU functions: sqlite3_user_data says which result is wanted. */
static void gpu_energy_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv,
                          enum energy_sql_result what)
{
    const struct energy_sql *e = sqlite3_user_data(ctx);
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL ||
        sqlite3_value_type(argv[2]) == SQLITE_NULL)
        return;
    const struct energy_db_gpu *g = find(e->gpus, e->count, sqlite3_value_int64(argv[0]));
    if (!g)
        return;
    struct energy_interval r = energy_track_between(
        &g->track, (uint64_t)sqlite3_value_int64(argv[1]), (uint64_t)sqlite3_value_int64(argv[2]));
    if (r.flags & ENERGY_NO_DATA)
        return;
    sqlite3_result_double(ctx, (what == RESULT_JOULES ? r.mj : r.error_mj) / 1000);
}

static void gpu_joules_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    gpu_energy_fn(c, n, v, RESULT_JOULES);
}
static void gpu_error_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    gpu_energy_fn(c, n, v, RESULT_ERROR);
}

static void all_joules_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const struct energy_sql *e = sqlite3_user_data(ctx);
    (void)argc;
    if (!e->count || sqlite3_value_type(argv[0]) == SQLITE_NULL ||
        sqlite3_value_type(argv[1]) == SQLITE_NULL)
        return;
    double mj = 0;
    for (int i = 0; i < e->count; i++)
        mj += energy_track_between(&e->gpus[i].track, (uint64_t)sqlite3_value_int64(argv[0]),
                                   (uint64_t)sqlite3_value_int64(argv[1]))
                  .mj;
    sqlite3_result_double(ctx, mj / 1000);
}

int energy_db_register_sql(sqlite3 *db)
{
    struct energy_sql *e = calloc(1, sizeof *e);
    if (!e)
        return -1;
    e->count = energy_db_load(db, &e->gpus);
    if (e->count < 0) {
        free(e);
        return -1;
    }
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    /* the last registration owns e and frees it when the connection closes */
    if (sqlite3_create_function_v2(db, "lantern_gpu_energy_j", 3, flags, e, gpu_joules_fn, NULL,
                                   NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(db, "lantern_gpu_energy_error_j", 3, flags, e, gpu_error_fn,
                                   NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(db, "lantern_energy_j", 2, flags, e, all_joules_fn, NULL, NULL,
                                   energy_sql_free) != SQLITE_OK) {
        energy_sql_free(e);
        return -1;
    }
    return e->count;
}
