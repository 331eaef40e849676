/* Runs the rules of the table (rules.c) over a database, and the helpers every rule uses to
 * add findings and evidence. Findings are ranked by the time they could save. */
#include "analyze/analyze_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

char *analyze_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

const char *analyze_fmt_ns(char *buf, size_t size, double ns)
{
    table_format_duration(buf, size, ns);
    return buf;
}

double analyze_share(const struct analyze_ctx *ctx, double ns)
{
    return ctx->duration_ns > 0 ? 100.0 * ns / (double)ctx->duration_ns : 0;
}

struct analyze_finding *analyze_add_finding(struct analyze_result *res, double cost_ns,
                                            const char *advice, const char *fmt, ...)
{
    if (res->count >= ANALYZE_MAX_FINDINGS) {
        res->more++;
        return NULL;
    }
    struct analyze_finding *f = &res->findings[res->count];
    memset(f, 0, sizeof *f);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&f->summary, fmt, ap) < 0)
        f->summary = NULL;
    va_end(ap);
    if (!f->summary)
        return NULL;
    f->cost_ns = cost_ns > 0 ? cost_ns : 0;
    f->cost_j = -1;
    f->advice = advice ? advice : res->rule->advice;
    res->count++;
    return f;
}

void analyze_note(struct analyze_result *res, const char *fmt, ...)
{
    free(res->note);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&res->note, fmt, ap) < 0)
        res->note = NULL;
    va_end(ap);
}

void analyze_add_evidence(struct analyze_finding *f, const struct analyze_evidence *e)
{
    if (!f || f->evidence_count >= ANALYZE_MAX_EVIDENCE)
        return;
    struct analyze_evidence *d = &f->evidence[f->evidence_count++];
    *d = *e;
    d->range = analyze_strdup(e->range);
    d->name = analyze_strdup(e->name);
    d->detail = analyze_strdup(e->detail);
}

static int64_t column_or(sqlite3_stmt *st, int col, int64_t unknown)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? unknown : sqlite3_column_int64(st, col);
}

int analyze_evidence_from(struct analyze_ctx *ctx, struct analyze_finding *f, sqlite3_stmt *st)
{
    int step = SQLITE_DONE;
    while (f && f->evidence_count < ANALYZE_MAX_EVIDENCE &&
           (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t start = column_or(st, 0, -1);
        struct analyze_evidence e = {
            .start_ns = start >= 0 ? start - ctx->start_ns : -1,
            .duration_ns = column_or(st, 1, -1),
            .pid = column_or(st, 2, -1),
            .tid = column_or(st, 3, -1),
            .gpu = column_or(st, 4, -1),
            .stream = column_or(st, 5, -1),
            .range = (char *)sqlite3_column_text(st, 6),
            .name = (char *)sqlite3_column_text(st, 7),
            .detail = (char *)sqlite3_column_text(st, 8),
        };
        analyze_add_evidence(f, &e);
    }
    if (f && f->evidence_count < ANALYZE_MAX_EVIDENCE && step != SQLITE_DONE) {
        snprintf(ctx->error, sizeof ctx->error, "evidence: %s", sqlite3_errmsg(ctx->db));
        return -1;
    }
    return 0;
}

sqlite3_stmt *analyze_prepare(struct analyze_ctx *ctx, const char *rule, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(ctx->error, sizeof ctx->error, "%s: %s", rule, sqlite3_errmsg(ctx->db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

int64_t analyze_query_int(struct analyze_ctx *ctx, const char *sql, int64_t def)
{
    sqlite3_stmt *st;
    int64_t v = def;
    if (sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) != SQLITE_OK)
        return def;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int analyze_table_has_rows(struct analyze_ctx *ctx, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s LIMIT 1", table);
    return analyze_query_int(ctx, sql, 0) == 1;
}

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
        return -1;
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
