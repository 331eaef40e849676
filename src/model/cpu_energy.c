/* CPU package energy for the reports (cpu_energy.h): the samples of each package loaded once,
 * in time order, behind an SQL function that interpolates them. */
#include "model/cpu_energy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CPU_ENERGY_MAX_PACKAGES 64

struct package_samples {
    int64_t package;
    size_t count, cap;
    int64_t *ts;
    double *uj;
};

struct cpu_energy {
    size_t packages;
    struct package_samples p[CPU_ENERGY_MAX_PACKAGES];
};

static void cpu_energy_free(void *arg)
{
    struct cpu_energy *e = arg;
    for (size_t i = 0; i < e->packages; i++) {
        free(e->p[i].ts);
        free(e->p[i].uj);
    }
    free(e);
}

static int append(struct package_samples *p, int64_t ts, double uj)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        int64_t *t = realloc(p->ts, cap * sizeof *t);
        if (t)
            p->ts = t;
        double *u = realloc(p->uj, cap * sizeof *u);
        if (u)
            p->uj = u;
        if (!t || !u)
            return -ENOMEM;
        p->cap = cap;
    }
    p->ts[p->count] = ts;
    p->uj[p->count++] = uj;
    return 0;
}

/* The package's cumulative µJ at t, clamped to its first and last samples. */
static double energy_at(const struct package_samples *p, int64_t t)
{
    if (t <= p->ts[0])
        return p->uj[0];
    if (t >= p->ts[p->count - 1])
        return p->uj[p->count - 1];
    size_t lo = 0, hi = p->count - 1; /* ts[lo] < t < ts[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->ts[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double f = (double)(t - p->ts[lo]) / (double)(p->ts[hi] - p->ts[lo]);
    return p->uj[lo] + f * (p->uj[hi] - p->uj[lo]);
}

static void sql_cpu_energy_j(sqlite3_context *c, int argc, sqlite3_value **v)
{
    (void)argc;
    const struct cpu_energy *e = sqlite3_user_data(c);
    int64_t package = sqlite3_value_int64(v[0]);
    for (size_t i = 0; i < e->packages; i++)
        if (e->p[i].package == package) {
            int64_t a = sqlite3_value_int64(v[1]), b = sqlite3_value_int64(v[2]);
            sqlite3_result_double(c, (energy_at(&e->p[i], b) - energy_at(&e->p[i], a)) / 1e6);
            return;
        }
    sqlite3_result_null(c);
}

/* Loads every package's samples into e; 0 or a negative errno. */
static int load(sqlite3 *db, struct cpu_energy *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT package, ts_ns, energy_uj FROM cpu_energy_samples"
                           " ORDER BY package, ts_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return 0; /* a database from before RAPL was recorded: no table */
    int rc = 0, step;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t package = sqlite3_column_int64(st, 0);
        if (!e->packages || e->p[e->packages - 1].package != package) {
            if (e->packages == CPU_ENERGY_MAX_PACKAGES)
                break;
            e->p[e->packages++].package = package;
        }
        rc = append(&e->p[e->packages - 1], sqlite3_column_int64(st, 1),
                    sqlite3_column_double(st, 2));
    }
    if (!rc && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(st);
    return rc;
}

int cpu_energy_register_sql(sqlite3 *db)
{
    struct cpu_energy *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    int rc = load(db, e);
    if (rc < 0 || e->packages == 0) {
        cpu_energy_free(e);
        return rc;
    }
    int packages = (int)e->packages;
    if (sqlite3_create_function_v2(db, "lantern_cpu_energy_j", 3,
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC, e, sql_cpu_energy_j, NULL,
                                   NULL, cpu_energy_free) != SQLITE_OK)
        return -EIO; /* sqlite3_create_function_v2 called the destructor */
    return packages;
}

int cpu_energy_disabled_reason(sqlite3 *db, char *why, size_t size)
{
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'rapl_disabled_reason'", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(why, size, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}
