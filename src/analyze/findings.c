/* The helpers every rule uses to add findings and evidence, and small SQL and formatting
 * helpers (findings.h). */
#include "analyze/findings.h"
#include "common/sql_query.h"
#include "output/table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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
        return -EIO;
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
    return sql_query_int(ctx->db, sql, def);
}

int analyze_table_has_rows(struct analyze_ctx *ctx, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s LIMIT 1", table);
    return analyze_query_int(ctx, sql, 0) == 1;
}
