/* What the rules share: adding findings and evidence, the SQL of an NVTX range label, and
 * small SQL and formatting helpers (findings.c). */
#ifndef LANTERN_ANALYZE_FINDINGS_H
#define LANTERN_ANALYZE_FINDINGS_H

#include <stddef.h>

#include "analyze/rule.h"

/* The SQL text of an NVTX range label ("domain:name", ":name" in the default domain) for a
 * range row r; needs "LEFT JOIN strings rs ON rs.id = r.name_id LEFT JOIN domains rd ON
 * rd.id = r.domain_id LEFT JOIN strings rds ON rds.id = rd.name_id". */
#define ANALYZE_RANGE_LABEL                                                                        \
    "CASE WHEN r.id IS NULL THEN NULL ELSE COALESCE(rds.value, '') || ':' ||"                      \
    " COALESCE(rs.value, '(unnamed)') END"
#define ANALYZE_RANGE_JOINS(range_id_expr)                                                         \
    " LEFT JOIN ranges r ON r.id = " range_id_expr " LEFT JOIN strings rs ON rs.id = r.name_id"    \
    " LEFT JOIN domains rd ON rd.id = r.domain_id LEFT JOIN strings rds ON rds.id = rd.name_id"

/* A finding added to res (NULL once ANALYZE_MAX_FINDINGS are there: res->more counts it).
 * The summary is formatted like printf. */
struct analyze_finding *analyze_add_finding(struct analyze_result *res, double cost_ns,
                                            const char *advice, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds the rows of a statement as evidence of f, columns in this order: start_ns (absolute),
 * duration_ns, pid, tid, gpu, stream, range, name, detail. Steps st until done or f is full;
 * returns 0 or -EIO (SQLite error). */
int analyze_evidence_from(struct analyze_ctx *ctx, struct analyze_finding *f, sqlite3_stmt *st);

/* One evidence row from values (strings copied; NULL allowed). */
void analyze_add_evidence(struct analyze_finding *f, const struct analyze_evidence *e);

/* Sets res->note, formatted. */
void analyze_note(struct analyze_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepares sql; on failure sets ctx->error ("rule: message") and returns NULL. */
sqlite3_stmt *analyze_prepare(struct analyze_ctx *ctx, const char *rule, const char *sql);
/* The first column of the first row of sql as an integer (def when none or on error). */
int64_t analyze_query_int(struct analyze_ctx *ctx, const char *sql, int64_t def);
/* Whether the database has rows in table (a fixed name from the code, never user input). */
int analyze_table_has_rows(struct analyze_ctx *ctx, const char *table);
/* strdup that tolerates NULL. */
char *analyze_strdup(const char *s);

/* "1.250 ms" into buf. */
const char *analyze_fmt_ns(char *buf, size_t size, double ns);
/* Share of the run in percent. */
double analyze_share(const struct analyze_ctx *ctx, double ns);

#endif
