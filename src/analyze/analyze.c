/* Runs the rules of the table (rules.c) over a database and ranks their findings by the time
 * they could save. */
#include "analyze/analyze.h"
#include "analyze/findings.h"
#include "analyze/host_activity.h"
#include "analyze/timeline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct analyze_rule *analyze_rule_find(const char *name)
{
    for (const struct analyze_rule *r = analyze_rules; r->name; r++)
        if (!strcmp(r->name, name))
            return r;
    return NULL;
}

/* Which rules the list names, in table order; -EINVAL for an unknown name. */
static int select_rules(const char *list, unsigned char *selected, const char **bad_rule)
{
    size_t n = 0;
    for (const struct analyze_rule *r = analyze_rules; r->name; r++, n++)
        selected[n] = list == NULL;
    if (!list)
        return 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; analyze_rules[i].name; i++)
            if (strlen(analyze_rules[i].name) == len && !strncmp(analyze_rules[i].name, p, len))
                selected[i] = found = 1;
        if (!found && len > 0) {
            *bad_rule = p;
            return -EINVAL;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int analyze_run(sqlite3 *db, const char *list, unsigned flags, struct analyze_run *run,
                const char **bad_rule, char *error, size_t error_size)
{
    unsigned char selected[64];
    size_t rule_count = 0;
    while (analyze_rules[rule_count].name)
        rule_count++;
    memset(run, 0, sizeof *run);
    if (select_rules(list, selected, bad_rule) < 0)
        return -EINVAL;
    struct analyze_ctx *ctx = calloc(1, sizeof *ctx);
    run->results = calloc(rule_count, sizeof *run->results);
    if (!ctx || !run->results) {
        free(ctx);
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    run->ctx = ctx;
    ctx->db = db;
    ctx->flags = flags;
    ctx->start_ns = analyze_query_int(ctx, "SELECT value FROM meta WHERE key = 'start_ns'", 0);
    ctx->end_ns = analyze_query_int(ctx, "SELECT value FROM meta WHERE key = 'end_ns'", 0);
    ctx->duration_ns = ctx->end_ns > ctx->start_ns ? ctx->end_ns - ctx->start_ns : 1;
    run->duration_ns = ctx->duration_ns;
    int rc = 0;
    for (size_t i = 0; i < rule_count && rc == 0; i++) {
        if (!selected[i])
            continue;
        struct analyze_result *res = &run->results[run->count++];
        res->rule = &analyze_rules[i];
        ctx->error[0] = '\0';
        rc = analyze_rules[i].run(ctx, res);
    }
    if (rc < 0)
        snprintf(error, error_size, "%s", ctx->error[0] ? ctx->error : "analysis failed");
    return rc;
}

void analyze_run_release(struct analyze_run *run)
{
    for (int i = 0; i < run->count; i++) {
        struct analyze_result *res = &run->results[i];
        free(res->note);
        for (int k = 0; k < res->count; k++) {
            struct analyze_finding *f = &res->findings[k];
            free(f->summary);
            analyze_host_free(f->host);
            for (int e = 0; e < f->evidence_count; e++) {
                free(f->evidence[e].range);
                free(f->evidence[e].name);
                free(f->evidence[e].detail);
            }
        }
    }
    free(run->results);
    if (run->ctx)
        analyze_timeline_free(run->ctx->timeline);
    if (run->ctx)
        analyze_cpu_free(run->ctx->cpu);
    free(run->ctx);
    memset(run, 0, sizeof *run);
}

static int compare_ranked(const void *a, const void *b)
{
    const struct analyze_ranked *x = a, *y = b;
    if (x->finding->cost_ns != y->finding->cost_ns)
        return x->finding->cost_ns < y->finding->cost_ns ? 1 : -1;
    /* ties (energy findings with no time cost, ...): table order, then finding order */
    if (x->result != y->result)
        return x->result < y->result ? -1 : 1;
    return x->finding < y->finding ? -1 : x->finding > y->finding;
}

struct analyze_ranked *analyze_rank(const struct analyze_run *run, size_t *count)
{
    size_t n = 0;
    for (int i = 0; i < run->count; i++)
        n += (size_t)run->results[i].count;
    struct analyze_ranked *ranked = calloc(n ? n : 1, sizeof *ranked);
    if (!ranked)
        return NULL;
    n = 0;
    for (int i = 0; i < run->count; i++)
        for (int k = 0; k < run->results[i].count; k++)
            ranked[n++] = (struct analyze_ranked){&run->results[i], &run->results[i].findings[k]};
    qsort(ranked, n, sizeof *ranked, compare_ranked);
    *count = n;
    return ranked;
}
