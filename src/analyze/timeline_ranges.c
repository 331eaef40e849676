/* The timeline's NVTX range names (timeline_ranges): each name's time, GPU energy and GPU-busy
 * time over its instances, for the energy rule and the HTML page, and per thread the coverage
 * of its top-level ranges that the page draws as lanes. Computed once, in one scan of the
 * ranges table, on first use. A range's energy and busy time are those of its own process's
 * GPUs (energy_db_users), so a merged job's ranges do not each carry every rank's GPU. */
#include "analyze/findings.h"
#include "analyze/timeline.h"
#include "common/index_map.h"
#include "energy/energy_db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const struct timeline_gpu *gpu_of(const struct analyze_timeline *t, int64_t gpu_id)
{
    for (int i = 0; i < t->gpu_count; i++)
        if (t->gpus[i].gpu_id == gpu_id)
            return &t->gpus[i];
    return NULL;
}

static int range_energy_eq(const void *array, size_t pos, const void *key)
{
    const struct timeline_range_energy *a = &((const struct timeline_range_energy *)array)[pos];
    const struct timeline_range_energy *b = key;
    return a->domain_id == b->domain_id && a->name_id == b->name_id;
}

static int by_joules(const void *a, const void *b)
{
    const struct timeline_range_energy *x = a, *y = b;
    if (x->joules != y->joules)
        return x->joules < y->joules ? 1 : -1;
    return (x->example_id > y->example_id) - (x->example_id < y->example_id);
}

/* Adds a top-level range of a thread to the coverage of its lane. */
static void add_lane(const struct analyze_ctx *ctx, struct analyze_timeline *t, int64_t thread,
                     int64_t start, int64_t end)
{
    int k = 0;
    while (k < t->lane_count && t->lanes[k].thread_id != thread)
        k++;
    if (k == t->lane_count) {
        if (k == TIMELINE_MAX_LANES)
            return;
        t->lanes[t->lane_count++].thread_id = thread;
    }
    struct timeline_lane *lane = &t->lanes[k];
    const double px_ns = (double)ctx->duration_ns / TIMELINE_LANE_PX;
    double s = (double)(start - ctx->start_ns) / px_ns, e = (double)(end - ctx->start_ns) / px_ns;
    s = s < 0 ? 0 : s;
    e = e > TIMELINE_LANE_PX ? TIMELINE_LANE_PX : e;
    if (e <= s)
        return;
    lane->ns += (e - s) * px_ns;
    for (int x = (int)s; x < TIMELINE_LANE_PX && x < e; x++) {
        double lo = s > x ? s : x, hi = e < x + 1 ? e : x + 1;
        lane->cover[x] += (float)(hi - lo);
    }
}

int timeline_ranges(struct analyze_ctx *ctx, struct analyze_timeline *t)
{
    if (t->range_energy_done)
        return 0;
    t->range_energy_done = 1;
    sqlite3_stmt *st = analyze_prepare(
        ctx, "energy",
        "SELECT domain_id, COALESCE(name_id, 0), start_ns, end_ns, id,"
        " depth = 0 OR style = 1, start_thread_id, process_id FROM ranges"
        " WHERE end_ns IS NOT NULL");
    if (!st)
        return -EIO;
    struct energy_db_users users;
    if (energy_db_users_load(ctx->db, t->energy, t->energy_count, &users) < 0) {
        energy_db_users_release(&users);
        sqlite3_finalize(st);
        snprintf(ctx->error, sizeof ctx->error, "energy: %s", sqlite3_errmsg(ctx->db));
        return -EIO;
    }
    if (t->want_page && !(t->lanes = calloc(TIMELINE_MAX_LANES, sizeof *t->lanes))) {
        sqlite3_finalize(st);
        return -ENOMEM;
    }
    struct timeline_range_energy *items = NULL;
    struct index_map index = {0};
    size_t n = 0, cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) { /* in table order, grouped by a hash: no sort */
        struct timeline_range_energy key = {.domain_id = sqlite3_column_int64(st, 0),
                                            .name_id = sqlite3_column_int64(st, 1)};
        int64_t s = sqlite3_column_int64(st, 2), e = sqlite3_column_int64(st, 3);
        int added;
        long pos = index_reserve((void **)&items, &cap, n, sizeof *items) < 0
                       ? -1
                       : index_get(&index, index_mix(index_mix(4, key.domain_id), key.name_id),
                                   items, range_energy_eq, &key, n, &added);
        if (pos < 0) {
            rc = -ENOMEM;
            break;
        }
        if (added) {
            key.example_id = sqlite3_column_int64(st, 4);
            items[n++] = key;
        }
        struct timeline_range_energy *r = &items[pos];
        r->instances++;
        r->ns += (double)(e - s);
        if (t->lanes && sqlite3_column_int(st, 5))
            add_lane(ctx, t, sqlite3_column_int64(st, 6), s, e);
        size_t own;
        const int *gpus = energy_db_users_of(&users, sqlite3_column_int64(st, 7), &own);
        for (size_t i = 0; i < own; i++) {
            const struct energy_db_gpu *g = &t->energy[gpus[i]];
            struct energy_interval iv = energy_track_between(&g->track, (uint64_t)s, (uint64_t)e);
            r->joules += iv.mj / 1000.0;
            r->error_j += iv.error_mj / 1000.0;
            const struct timeline_gpu *tg = gpu_of(t, g->gpu_id);
            if (tg)
                r->busy_ns += timeline_busy_between(t, tg, s, e);
        }
    }
    sqlite3_finalize(st);
    energy_db_users_release(&users);
    index_release(&index);
    if (rc < 0) {
        free(items);
        snprintf(ctx->error, sizeof ctx->error, "energy: out of memory");
        return -ENOMEM;
    }
    if (n)
        qsort(items, n, sizeof *items, by_joules);
    t->range_energy = items;
    t->range_energy_count = n;
    return 0;
}
