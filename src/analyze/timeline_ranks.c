/* The timeline's ranks (timeline.h): during the one pass over all GPU work, each process's work
 * on each GPU is folded into unions of intervals (all work, its kernels, its NCCL kernels, its
 * other kernels) and its NCCL kernels are kept in order, so the cross-rank rules (stragglers,
 * comm_overlap, rank_idle) need no pass of their own. The unions need the work in start order,
 * which the pass gives; memory grows with the ranks and their NCCL kernels only. */
#include "analyze/findings.h"
#include "analyze/timeline.h"
#include "common/index_map.h"
#include "model/nccl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void timeline_union_add(struct timeline_union *u, int64_t start, int64_t end)
{
    if (u->open && start <= u->end) {
        if (end > u->end)
            u->end = end;
        return;
    }
    timeline_union_close(u);
    u->start = start;
    u->end = end;
    u->open = 1;
}

void timeline_union_close(struct timeline_union *u)
{
    if (u->open)
        u->total += u->end - u->start;
    u->open = 0;
}

_Static_assert(sizeof((struct analyze_timeline *)0)->nccl_types[0] >=
                   sizeof((struct nccl_kernel *)0)->collective,
               "a collective's name fits its type slot whole");

/* The type index of a collective, added to the list if new (-1, none, when the list is full). */
static int nccl_type(struct analyze_timeline *t, const char *type)
{
    for (int i = 0; i < t->nccl_type_count; i++)
        if (strcmp(t->nccl_types[i], type) == 0)
            return i;
    if (t->nccl_type_count == TIMELINE_MAX_NCCL_TYPES)
        return -1;
    snprintf(t->nccl_types[t->nccl_type_count], sizeof t->nccl_types[0], "%s", type);
    return t->nccl_type_count++;
}

int timeline_ranks_begin(struct analyze_ctx *ctx, struct analyze_timeline *t)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "timeline", "SELECT id, value FROM strings WHERE value LIKE " NCCL_KERNEL_LIKE);
    if (!st)
        return -EIO;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        struct nccl_kernel kernel;
        if (!nccl_parse_kernel((const char *)sqlite3_column_text(st, 1), &kernel))
            continue;
        int k = nccl_type(t, kernel.collective);
        if (k >= 0 &&
            u64_map_put(&t->nccl_names, (uint64_t)sqlite3_column_int64(st, 0), (uint64_t)k + 1) < 0)
            rc = -ENOMEM;
    }
    sqlite3_finalize(st);
    if (rc)
        snprintf(ctx->error, sizeof ctx->error, "timeline: out of memory");
    return rc;
}

static int rank_eq(const void *array, size_t pos, const void *key)
{
    const struct timeline_rank *a = &((const struct timeline_rank *)array)[pos], *b = key;
    return a->process_id == b->process_id && a->gpu_id == b->gpu_id;
}

static int add_collective(struct timeline_rank *r, int64_t id, int64_t start, int64_t end, int type)
{
    if (index_reserve((void **)&r->collectives, &r->collective_cap, r->collective_count,
                      sizeof *r->collectives) < 0)
        return -ENOMEM;
    r->collectives[r->collective_count++] =
        (struct timeline_collective){.id = id, .start = start, .end = end, .type = type};
    return 0;
}

int timeline_ranks_op(struct analyze_timeline *t, struct index_map *index, int64_t process_id,
                      int64_t gpu_id, int is_kernel, int64_t name_id, int64_t id, int64_t start,
                      int64_t end)
{
    struct timeline_rank key = {.process_id = process_id, .gpu_id = gpu_id};
    int added;
    if (index_reserve((void **)&t->ranks, &t->rank_cap, t->rank_count, sizeof *t->ranks) < 0)
        return -ENOMEM;
    long pos = index_get(index, index_mix(index_mix(5, process_id), gpu_id), t->ranks, rank_eq,
                         &key, t->rank_count, &added);
    if (pos < 0)
        return -ENOMEM;
    struct timeline_rank *r = &t->ranks[pos];
    if (added) {
        *r = key;
        r->rank = r->pid = r->gpu_label = -1;
        r->first_start = start;
        t->rank_count++;
    }
    if (end > r->last_end)
        r->last_end = end;
    if (r->all.open && start - r->all.end >= t->gap_threshold_ns)
        r->gaps++;
    timeline_union_add(&r->all, start, end);
    if (!is_kernel)
        return 0;
    timeline_union_add(&r->kernels, start, end);
    const uint64_t *type = u64_map_find(&t->nccl_names, (uint64_t)name_id);
    if (!type) {
        timeline_union_add(&r->compute, start, end);
        return 0;
    }
    timeline_union_add(&r->nccl, start, end);
    return add_collective(r, id, start, end, (int)*type - 1);
}

int timeline_ranks_end(struct analyze_ctx *ctx, struct analyze_timeline *t)
{
    sqlite3_stmt *st = analyze_prepare(
        ctx, "timeline",
        "SELECT p.pid, COALESCE(p.rank, -1), p.host, (SELECT COALESCE(g.nvml_index,"
        " (SELECT min(device) FROM process_gpus pg WHERE pg.gpu_id = g.id), -1) FROM gpus g"
        " WHERE g.id = ?2) FROM processes p WHERE p.id = ?1");
    if (!st)
        return -EIO;
    for (size_t i = 0; i < t->rank_count; i++) {
        struct timeline_rank *r = &t->ranks[i];
        timeline_union_close(&r->all);
        timeline_union_close(&r->kernels);
        timeline_union_close(&r->nccl);
        timeline_union_close(&r->compute);
        int first = 1; /* is this the first rank of its process? */
        for (size_t k = 0; k < i && first; k++)
            first = t->ranks[k].process_id != r->process_id;
        t->rank_processes += first;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, r->process_id);
        sqlite3_bind_int64(st, 2, r->gpu_id);
        if (sqlite3_step(st) != SQLITE_ROW)
            continue;
        r->pid = sqlite3_column_int64(st, 0);
        r->rank = sqlite3_column_int64(st, 1);
        r->host = analyze_strdup((const char *)sqlite3_column_text(st, 2));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            r->gpu_label = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    return 0;
}

void timeline_ranks_free(struct analyze_timeline *t)
{
    for (size_t i = 0; i < t->rank_count; i++) {
        free(t->ranks[i].host);
        free(t->ranks[i].collectives);
    }
    free(t->ranks);
    u64_map_release(&t->nccl_names);
}

const char *timeline_rank_label(const struct timeline_rank *r, char *buf, size_t size)
{
    char gpu[32] = "";
    if (r->gpu_label >= 0)
        snprintf(gpu, sizeof gpu, ", GPU %lld", (long long)r->gpu_label);
    if (r->rank >= 0)
        snprintf(buf, size, "rank %lld (pid %lld, %s%s)", (long long)r->rank, (long long)r->pid,
                 r->host ? r->host : "host unknown", gpu);
    else
        snprintf(buf, size, "pid %lld (%s%s)", (long long)r->pid,
                 r->host ? r->host : "host unknown", gpu);
    return buf;
}

int timeline_several_ranks(const struct analyze_timeline *t, struct analyze_result *res)
{
    if (t->rank_processes >= 2)
        return 1;
    analyze_note(res,
                 "GPU work of %d process: the cross-rank rules compare the ranks of a job "
                 "(lantern merge their databases, docs/multi-rank.md)",
                 t->rank_processes);
    return 0;
}

int timeline_rank_by_share(const void *a, const void *b)
{
    const struct timeline_rank_share *x = a, *y = b;
    if (x->share != y->share)
        return x->share < y->share ? 1 : -1;
    return (x->r->process_id > y->r->process_id) - (x->r->process_id < y->r->process_id);
}

long timeline_rank_shares(struct analyze_ctx *ctx, const struct analyze_timeline *t,
                          const char *rule,
                          int64_t (*measure)(const struct timeline_rank *r, int64_t span),
                          struct timeline_rank_share **out)
{
    struct timeline_rank_share *v = *out = calloc(t->rank_count, sizeof *v);
    if (!v) {
        snprintf(ctx->error, sizeof ctx->error, "%s: out of memory", rule);
        return -ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < t->rank_count; i++) {
        const struct timeline_rank *r = &t->ranks[i];
        int64_t span = r->last_end - r->first_start, ns = span > 0 ? measure(r, span) : -1;
        if (ns < 0)
            continue;
        v[n] = (struct timeline_rank_share){
            .r = r, .span = span, .ns = ns, .share = 100.0 * (double)ns / (double)span};
        n++;
    }
    if (n)
        qsort(v, n, sizeof *v, timeline_rank_by_share);
    return (long)n;
}

void timeline_rank_evidence(struct analyze_ctx *ctx, struct analyze_finding *f,
                            const struct timeline_rank *r, int64_t duration_ns, char *detail)
{
    char name[32];
    if (r->rank >= 0)
        snprintf(name, sizeof name, "rank %lld", (long long)r->rank);
    else
        snprintf(name, sizeof name, "pid %lld", (long long)r->pid);
    struct analyze_evidence row = {.start_ns = r->first_start - ctx->start_ns,
                                   .duration_ns = duration_ns,
                                   .pid = r->pid,
                                   .tid = -1,
                                   .gpu = r->gpu_label,
                                   .stream = -1,
                                   .name = name,
                                   .detail = detail};
    analyze_add_evidence(f, &row);
}
