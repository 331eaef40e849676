/* gpu_metrics_kernels.h: kernel names' GPU metrics, by one sweep of a GPU's kernels (in start
 * order) against its samples. */
#include "report/gpu_metrics_kernels.h"
#include "common/overlap.h"

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

static struct gpu_metrics_kernel_group *group_of(struct gpu_metrics_kernel_groups *g,
                                                 int64_t name_id)
{
    uint64_t *at = u64_map_find(&g->index, (uint64_t)name_id + 1);
    if (at)
        return &g->v[*at - 1];
    if (g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct gpu_metrics_kernel_group *v = realloc(g->v, cap * sizeof *v);
        if (!v)
            return NULL;
        g->v = v;
        g->cap = cap;
    }
    if (u64_map_put(&g->index, (uint64_t)name_id + 1, g->count + 1) < 0)
        return NULL;
    struct gpu_metrics_kernel_group *n = &g->v[g->count++];
    memset(n, 0, sizeof *n);
    n->name_id = name_id;
    return n;
}

int gpu_metrics_kernels_sweep(const struct gpu_metrics_kernel *k, size_t n,
                              const struct gpu_metrics_series *s,
                              struct gpu_metrics_kernel_groups *groups)
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
        struct gpu_metrics_kernel_group *g = group_of(groups, of[j]->name_id);
        if (!g) {
            rc = -ENOMEM;
            break;
        }
        g->instances++;
        g->time_ns += end[j] - start[j];
        g->overlapped_ns += shared[j];
        if (end[j] > start[j])
            gpu_metrics_series_add(s, &c, start[j], end[j], g->acc);
    }
    free(start);
    free(end);
    free(shared);
    free(of);
    return rc;
}

void gpu_metrics_kernel_groups_release(struct gpu_metrics_kernel_groups *groups)
{
    free(groups->v);
    u64_map_release(&groups->index);
    memset(groups, 0, sizeof *groups);
}
