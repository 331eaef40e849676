/* gpu_metrics_sources.h: one line per GPU from gpu_metric_sets (the source, its rate and how
 * many metrics) and gpu_metric_status (samples lost, or why nothing was recorded). */
#include "common/gpu_metrics_sources.h"
#include "common/sql_query.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
    char *s;
    size_t len;
    int failed;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *piece = NULL;
    int n = vasprintf(&piece, fmt, ap);
    va_end(ap);
    char *grown = n < 0 ? NULL : realloc(t->s, t->len + (size_t)n + 1);
    if (!grown) {
        free(piece);
        t->failed = 1;
        return;
    }
    memcpy(grown + t->len, piece, (size_t)n + 1);
    t->s = grown;
    t->len += (size_t)n;
    free(piece);
}

/* "10 kHz", "100 Hz", "1.5 Hz" from the period asked for; "?" when unknown. */
static void add_rate(struct text *t, int64_t period_ns)
{
    if (period_ns <= 0)
        add(t, "? Hz");
    else if (period_ns <= 1000000)
        add(t, "%g kHz", 1e6 / (double)period_ns);
    else
        add(t, "%g Hz", 1e9 / (double)period_ns);
}

/* The sets of gpu_id: "CUPTI PM sampling, 10 kHz, 15 metrics" (several joined by " + ").
 * Returns how many. */
static int add_sets(struct text *t, sqlite3 *db, int64_t gpu_id)
{
    sqlite3_stmt *st;
    int n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT source, period_ns, metrics FROM gpu_metric_sets"
                           " WHERE gpu_id = ? ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, gpu_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *metrics = (const char *)sqlite3_column_text(st, 2);
        int count = metrics && *metrics;
        for (const char *p = metrics; p && (p = strchr(p, ',')); p++)
            count++;
        add(t, "%s%s, ", n++ ? " + " : "", (const char *)sqlite3_column_text(st, 0));
        add_rate(t, sqlite3_column_int64(st, 1));
        add(t, ", %d metric%s", count, count == 1 ? "" : "s");
    }
    sqlite3_finalize(st);
    return n;
}

/* The statuses of gpu_id (gpu_id 0: those that name no GPU): "; 7 samples lost (buffer
 * full)", "; not permitted: ...". */
static void add_statuses(struct text *t, sqlite3 *db, int64_t gpu_id, int first)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT code, count, reason, source FROM gpu_metric_status"
                           " WHERE gpu_id IS ? ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    if (gpu_id)
        sqlite3_bind_int64(st, 1, gpu_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *code = (const char *)sqlite3_column_text(st, 0);
        const char *reason = (const char *)sqlite3_column_text(st, 2);
        const char *source = (const char *)sqlite3_column_text(st, 3);
        add(t, "%s", first ? "" : "; ");
        first = 0;
        if (code && !strcmp(code, "lost"))
            add(t, "%lld samples lost", (long long)sqlite3_column_int64(st, 1));
        else
            add(t, "%s%s%s", source ? source : "", source ? ": " : "", code ? code : "failed");
        if (reason && *reason)
            add(t, code && !strcmp(code, "lost") ? " (%s)" : ": %s", reason);
    }
    sqlite3_finalize(st);
}

static int asked_for(sqlite3 *db)
{
    return sql_query_int(db,
                         "SELECT (SELECT count(*) FROM gpu_metric_sets) + (SELECT count(*) FROM"
                         " gpu_metric_status) + (SELECT count(*) FROM meta WHERE key = 'trace'"
                         " AND ',' || value || ',' LIKE '%,gpu_metrics,%')",
                         0) > 0;
}

char *gpu_metrics_sources_lines(sqlite3 *db)
{
    if (!asked_for(db))
        return NULL;
    struct text t = {0};
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT g.id, COALESCE(g.nvml_index, (SELECT min(device) FROM process_gpus p"
            " WHERE p.gpu_id = g.id)) AS idx, COALESCE(g.name, 'unknown GPU'), g.uuid FROM gpus g"
            " WHERE g.id IN (SELECT gpu_id FROM gpu_metric_sets UNION SELECT gpu_id FROM"
            " gpu_metric_status) ORDER BY idx IS NULL, idx, g.id",
            -1, &st, NULL) != SQLITE_OK)
        return NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            add(&t, "GPU %lld ", (long long)sqlite3_column_int64(st, 1));
        else
            add(&t, "GPU %s ", (const char *)sqlite3_column_text(st, 3));
        add(&t, "%s: ", (const char *)sqlite3_column_text(st, 2));
        int sets = add_sets(&t, db, sqlite3_column_int64(st, 0));
        if (!sets)
            add(&t, "not recorded: ");
        add_statuses(&t, db, sqlite3_column_int64(st, 0), !sets);
        add(&t, "\n");
    }
    sqlite3_finalize(st);
    if (sql_query_int(db, "SELECT count(*) FROM gpu_metric_status WHERE gpu_id IS NULL", 0)) {
        add(&t, "every GPU: ");
        add_statuses(&t, db, 0, 1);
        add(&t, "\n");
    }
    if (!t.len)
        add(&t, "none recorded (see the lantern: lines printed when it ran)\n");
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
