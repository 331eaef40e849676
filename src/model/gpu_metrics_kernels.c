/* gpu_metrics_kernels.h: kernel names' GPU metrics, by one sweep of a GPU's kernels (in start
 * order) against its samples. */
#include "model/gpu_metrics_kernels.h"
#include "model/overlap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gpu_metrics_kernels_load(sqlite3 *db, struct gpu_metrics_kernel **out, size_t *count)
{
    sqlite3_stmt *q;
    *out = NULL;
    *count = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT gpu_id, start_ns, end_ns, name_id FROM kernel_ops"
                           " WHERE gpu_id IS NOT NULL ORDER BY start_ns",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    size_t cap = 0;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        if (*count == cap) {
            cap = cap ? 2 * cap : 4096;
            struct gpu_metrics_kernel *v = realloc(*out, cap * sizeof *v);
            if (!v) {
                rc = -ENOMEM;
                break;
            }
            *out = v;
        }
        int64_t start = sqlite3_column_int64(q, 1), end = sqlite3_column_int64(q, 2);
        (*out)[(*count)++] = (struct gpu_metrics_kernel){
            sqlite3_column_int64(q, 0), start, end > start ? end : start, /* damage: no time */
            sqlite3_column_int64(q, 3)};
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(q);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

struct gpu_metrics_group *gpu_metrics_group_of(struct gpu_metrics_groups *groups, int64_t key)
{
    uint64_t *at = u64_map_find(&groups->index, (uint64_t)key + 1);
    if (at)
        return &groups->v[*at - 1];
    if (groups->count == groups->cap) {
        size_t cap = groups->cap ? 2 * groups->cap : 64;
        struct gpu_metrics_group *v = realloc(groups->v, cap * sizeof *v);
        if (!v)
            return NULL;
        groups->v = v;
        groups->cap = cap;
    }
    if (u64_map_put(&groups->index, (uint64_t)key + 1, groups->count + 1) < 0)
        return NULL;
    struct gpu_metrics_group *g = &groups->v[groups->count++];
    memset(g, 0, sizeof *g);
    g->key = key;
    return g;
}

const struct gpu_metrics_group *gpu_metrics_group_find(const struct gpu_metrics_groups *groups,
                                                       int64_t key)
{
    uint64_t *at = u64_map_find(&groups->index, (uint64_t)key + 1);
    return at ? &groups->v[*at - 1] : NULL;
}

void gpu_metrics_group_add(struct gpu_metrics_group *g, const struct gpu_metrics_series *s,
                           struct gpu_metrics_cursor *c, int64_t start, int64_t end)
{
    g->instances++;
    g->time_ns += end - start;
    if (end > start)
        gpu_metrics_series_add(s, c, start, end, g->acc);
}

static int by_time(const void *a, const void *b)
{
    const struct gpu_metrics_group *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? 1 : -1;
    return (x->key > y->key) - (x->key < y->key);
}

void gpu_metrics_groups_sort(struct gpu_metrics_groups *groups)
{
    if (groups->count) /* qsort's base must not be NULL, even for 0 rows */
        qsort(groups->v, groups->count, sizeof *groups->v, by_time);
}

void gpu_metrics_groups_release(struct gpu_metrics_groups *groups)
{
    free(groups->v);
    u64_map_release(&groups->index);
    memset(groups, 0, sizeof *groups);
}

int gpu_metrics_kernels_sweep(const struct gpu_metrics_kernel *k, size_t n,
                              const struct gpu_metrics_series *s, struct gpu_metrics_groups *groups)
{
    size_t mine = 0;
    for (size_t i = 0; i < n; i++)
        mine += k[i].gpu_id == s->gpu_id;
    size_t cap = mine ? mine : 1;
    int64_t *start = malloc(cap * sizeof *start), *end = malloc(cap * sizeof *end);
    int64_t *shared = malloc(cap * sizeof *shared);
    const struct gpu_metrics_kernel **of = malloc(cap * sizeof *of);
    int rc = start && end && shared && of ? 0 : -ENOMEM;
    for (size_t i = 0, j = 0; rc == 0 && i < n; i++)
        if (k[i].gpu_id == s->gpu_id) {
            of[j] = &k[i];
            start[j] = k[i].start;
            end[j++] = k[i].end;
        }
    if (rc == 0)
        rc = overlap_with_others(start, end, mine, shared);
    struct gpu_metrics_cursor c = {0};
    for (size_t j = 0; rc == 0 && j < mine; j++) {
        struct gpu_metrics_group *g = gpu_metrics_group_of(groups, of[j]->name_id);
        if (!g) {
            rc = -ENOMEM;
            break;
        }
        g->overlapped_ns += shared[j];
        gpu_metrics_group_add(g, s, &c, start[j], end[j]);
    }
    free(start);
    free(end);
    free(shared);
    free(of);
    return rc;
}
