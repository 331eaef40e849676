/* Loading gpu_samples into energy tracks (see energy_db.h): one pass to size each GPU's rings
 * exactly (so nothing is overwritten), one pass in time order to fill them; which GPUs each
 * process is charged with; and both as SQL functions for the reports. */
#include "energy/energy_db.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int count_gpus(sqlite3 *db, struct energy_db_gpu **out)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu_id, count(power_mw) + count(power_avg_mw), count(energy_mj)"
                           " FROM gpu_samples GROUP BY gpu_id ORDER BY gpu_id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int n = 0, cap = 0, rc, err = -ENOMEM;
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
    err = -EIO;
    if (rc != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    *out = gpus;
    return n;
fail:
    sqlite3_finalize(st);
    energy_db_free(gpus, n);
    return err;
}

/* The GPUs are in gpu_id order (count_gpus): a search, not a scan, since a merged database
 * of many ranks has hundreds of GPUs and the reports ask once per range or kernel. The index,
 * or -1 when none. */
static int find_index(const struct energy_db_gpu *gpus, int n, int64_t gpu_id)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (gpus[mid].gpu_id < gpu_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && gpus[lo].gpu_id == gpu_id ? lo : -1;
}

static struct energy_db_gpu *find(struct energy_db_gpu *gpus, int n, int64_t gpu_id)
{
    int i = find_index(gpus, n, gpu_id);
    return i < 0 ? NULL : &gpus[i];
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
        return -EIO;
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
        return -EIO;
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

/* ---- whose GPUs ---------------------------------------------------------------------------- */

/* The process -> GPU pairs of rules 1 and 2 (energy_db.h), in process order. */
static const char users_query[] =
    "SELECT process_id, gpu_id FROM cuda_contexts WHERE gpu_id IS NOT NULL"
    " UNION SELECT process_id, gpu_id FROM process_gpus WHERE gpu_id IS NOT NULL"
    "  AND process_id NOT IN (SELECT process_id FROM cuda_contexts WHERE gpu_id IS NOT NULL)"
    " ORDER BY 1, 2";
/* Rule 3: no known user at all, and one host (NULL hosts count as that one). */
static const char every_process_query[] =
    "SELECT id FROM processes WHERE (SELECT count(DISTINCT host) FROM processes) <= 1"
    " ORDER BY id";

/* Appends the pair (process, gpu); pairs come in (process, gpu) order. */
static int users_push(struct energy_db_users *u, size_t *cap, int64_t process, int gpu)
{
    if (u->count == *cap) {
        size_t bigger = *cap ? 2 * *cap : 64;
        int64_t *ids = realloc(u->process_id, bigger * sizeof *ids);
        if (ids)
            u->process_id = ids;
        int *grown = ids ? realloc(u->gpu, bigger * sizeof *grown) : NULL;
        if (!grown)
            return -ENOMEM;
        u->gpu = grown;
        *cap = bigger;
    }
    u->process_id[u->count] = process;
    u->gpu[u->count++] = gpu;
    return 0;
}

int energy_db_users_load(sqlite3 *db, const struct energy_db_gpu *gpus, int count,
                         struct energy_db_users *out)
{
    memset(out, 0, sizeof *out);
    if (count <= 0)
        return 0;
    size_t cap = 0;
    int known = 0, rc = -EIO, step;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, users_query, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        known = 1; /* a known user, sampled or not: rule 3 is off */
        int g = find_index(gpus, count, sqlite3_column_int64(st, 1));
        if (g >= 0 && (rc = users_push(out, &cap, sqlite3_column_int64(st, 0), g)) < 0)
            goto done;
    }
    rc = -EIO;
    if (step != SQLITE_DONE)
        goto done;
    sqlite3_finalize(st);
    st = NULL;
    if (!known) {
        if (sqlite3_prepare_v2(db, every_process_query, -1, &st, NULL) != SQLITE_OK)
            goto done;
        while ((step = sqlite3_step(st)) == SQLITE_ROW)
            for (int g = 0; g < count; g++)
                if ((rc = users_push(out, &cap, sqlite3_column_int64(st, 0), g)) < 0)
                    goto done;
        rc = step == SQLITE_DONE ? 0 : -EIO;
    } else {
        rc = 0;
    }
done:
    sqlite3_finalize(st);
    return rc;
}

const int *energy_db_users_of(const struct energy_db_users *u, int64_t process_id, size_t *n)
{
    size_t lo = 0, hi = u->count;
    while (lo < hi) { /* the process's first pair */
        size_t mid = lo + (hi - lo) / 2;
        if (u->process_id[mid] < process_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < u->count && u->process_id[end] == process_id)
        end++;
    *n = end - lo;
    return *n ? &u->gpu[lo] : NULL;
}

void energy_db_users_release(struct energy_db_users *u)
{
    free(u->process_id);
    free(u->gpu);
    memset(u, 0, sizeof *u);
}

/* ---- SQL functions ------------------------------------------------------------------------- */

struct energy_sql {
    struct energy_db_gpu *gpus;
    int count;
    struct energy_db_users users;
};

static void energy_sql_free(void *p)
{
    struct energy_sql *e = p;
    energy_db_free(e->gpus, e->count);
    energy_db_users_release(&e->users);
    free(e);
}

enum energy_sql_result { RESULT_JOULES, RESULT_ERROR };

/* Shared by the SQL functions (first argument a GPU's id, or a process's id for its GPUs; then
 * start and end): the energy of those GPUs summed, NULL when none has data there. */
static void energy_fn(sqlite3_context *ctx, sqlite3_value **argv, enum energy_sql_result what,
                      int of_process)
{
    const struct energy_sql *e = sqlite3_user_data(ctx);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL ||
        sqlite3_value_type(argv[2]) == SQLITE_NULL)
        return;
    int64_t id = sqlite3_value_int64(argv[0]);
    size_t n = 0;
    int one = -1;
    const int *gpus = &one;
    if (of_process)
        gpus = energy_db_users_of(&e->users, id, &n);
    else if ((one = find_index(e->gpus, e->count, id)) >= 0)
        n = 1;
    double mj = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        struct energy_interval r =
            energy_track_between(&e->gpus[gpus[i]].track, (uint64_t)sqlite3_value_int64(argv[1]),
                                 (uint64_t)sqlite3_value_int64(argv[2]));
        if (r.flags & ENERGY_NO_DATA)
            continue;
        mj += what == RESULT_JOULES ? r.mj : r.error_mj;
        any = 1;
    }
    if (any)
        sqlite3_result_double(ctx, mj / 1000);
}

static void gpu_joules_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    (void)n;
    energy_fn(c, v, RESULT_JOULES, 0);
}
static void gpu_error_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    (void)n;
    energy_fn(c, v, RESULT_ERROR, 0);
}
static void process_joules_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    (void)n;
    energy_fn(c, v, RESULT_JOULES, 1);
}
static void process_error_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
    (void)n;
    energy_fn(c, v, RESULT_ERROR, 1);
}

/* temp.energy_process_gpus: the pairs of e->users, for the reports' joins. */
static int fill_process_gpus(sqlite3 *db, const struct energy_sql *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_exec(db,
                          "CREATE TEMP TABLE IF NOT EXISTS energy_process_gpus(process_id INTEGER,"
                          " gpu_id INTEGER, PRIMARY KEY(process_id, gpu_id)) WITHOUT ROWID;"
                          "DELETE FROM temp.energy_process_gpus",
                          NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(db, "INSERT INTO temp.energy_process_gpus VALUES(?, ?)", -1,
                                        &st, NULL) == SQLITE_OK
                 ? 0
                 : -EIO;
    for (size_t i = 0; rc == 0 && i < e->users.count; i++) {
        sqlite3_bind_int64(st, 1, e->users.process_id[i]);
        sqlite3_bind_int64(st, 2, e->gpus[e->users.gpu[i]].gpu_id);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int energy_db_register_sql(sqlite3 *db)
{
    struct energy_sql *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->count = energy_db_load(db, &e->gpus);
    if (e->count < 0) {
        int rc = e->count;
        free(e);
        return rc;
    }
    int rc = energy_db_users_load(db, e->gpus, e->count, &e->users);
    if (rc < 0 || (rc = fill_process_gpus(db, e)) < 0) {
        energy_sql_free(e);
        return rc;
    }
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC, count = e->count;
    if (sqlite3_create_function_v2(db, "lantern_gpu_energy_j", 3, flags, e, gpu_joules_fn, NULL,
                                   NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(db, "lantern_gpu_energy_error_j", 3, flags, e, gpu_error_fn,
                                   NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(db, "lantern_process_energy_error_j", 3, flags, e,
                                   process_error_fn, NULL, NULL, NULL) != SQLITE_OK) {
        energy_sql_free(e);
        return -EIO;
    }
    /* the last registration owns e: SQLite frees it when the connection closes, or at once
     * if the registration fails */
    if (sqlite3_create_function_v2(db, "lantern_process_energy_j", 3, flags, e, process_joules_fn,
                                   NULL, NULL, energy_sql_free) != SQLITE_OK)
        return -EIO;
    return count;
}
