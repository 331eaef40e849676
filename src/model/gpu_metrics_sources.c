/* gpu_metrics_sources.h: one line per GPU from gpu_metric_sets (the source, its rate and how
 * many metrics) and gpu_metric_status (samples lost, or why nothing was recorded), written to
 * a memory stream as session_losses.c writes its line. */
#include "model/gpu_metrics_sources.h"
#include "common/sql_query.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "10 kHz", "100 Hz", "1.5 Hz" from the period asked for; "?" when unknown. */
static void put_rate(FILE *out, int64_t period_ns)
{
    if (period_ns <= 0)
        fputs("? Hz", out);
    else if (period_ns <= 1000000)
        fprintf(out, "%g kHz", 1e6 / (double)period_ns);
    else
        fprintf(out, "%g Hz", 1e9 / (double)period_ns);
}

/* The sets of gpu_id: "CUPTI PM sampling, 10 kHz, 15 metrics" (several joined by " + ").
 * Returns how many. */
static int put_sets(FILE *out, sqlite3 *db, int64_t gpu_id)
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
        fprintf(out, "%s%s, ", n++ ? " + " : "", (const char *)sqlite3_column_text(st, 0));
        put_rate(out, sqlite3_column_int64(st, 1));
        fprintf(out, ", %d metric%s", count, count == 1 ? "" : "s");
    }
    sqlite3_finalize(st);
    return n;
}

/* The statuses of gpu_id (gpu_id 0: those that name no GPU): "; 7 samples lost (buffer
 * full)", "; not permitted: ...". */
static void put_statuses(FILE *out, sqlite3 *db, int64_t gpu_id, int first)
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
        fputs(first ? "" : "; ", out);
        first = 0;
        int own_words = code && (!strcmp(code, "crashed") || !strcmp(code, "hung"));
        if (code && !strcmp(code, "lost"))
            fprintf(out, "%lld samples lost", (long long)sqlite3_column_int64(st, 1));
        else if (own_words && reason && *reason) { /* "the metric sampler crashed (...) ..." */
            fputs(reason, out);
            continue;
        } else
            fprintf(out, "%s%s%s", source ? source : "", source ? ": " : "",
                    code ? code : "failed");
        if (reason && *reason)
            fprintf(out, code && !strcmp(code, "lost") ? " (%s)" : ": %s", reason);
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

/* One line per GPU with metrics or a status (GPU_METRICS_SQL_GPU_INDEX, else its uuid), then
 * the statuses of no GPU.
 * 0, or -EIO when the database cannot say. */
static int put_lines(FILE *out, sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT g.id, " GPU_METRICS_SQL_GPU_INDEX " AS idx, COALESCE(g.name, 'unknown GPU'),"
            " g.uuid FROM gpus g"
            " WHERE g.id IN (SELECT gpu_id FROM gpu_metric_sets UNION SELECT gpu_id FROM"
            " gpu_metric_status) ORDER BY idx IS NULL, idx, g.id",
            -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            fprintf(out, "GPU %lld ", (long long)sqlite3_column_int64(st, 1));
        else
            fprintf(out, "GPU %s ", (const char *)sqlite3_column_text(st, 3));
        fprintf(out, "%s: ", (const char *)sqlite3_column_text(st, 2));
        int sets = put_sets(out, db, sqlite3_column_int64(st, 0));
        if (!sets)
            fputs("not recorded: ", out);
        put_statuses(out, db, sqlite3_column_int64(st, 0), !sets);
        fputc('\n', out);
    }
    sqlite3_finalize(st);
    if (sql_query_int(db, "SELECT count(*) FROM gpu_metric_status WHERE gpu_id IS NULL", 0)) {
        fputs("every GPU: ", out);
        put_statuses(out, db, 0, 1);
        fputc('\n', out);
    }
    return 0;
}

char *gpu_metrics_sources_lines(sqlite3 *db)
{
    if (!asked_for(db))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    int rc = put_lines(out, db);
    if (rc == 0 && fflush(out) == 0 && len == 0)
        fputs("none recorded (see the lantern: lines printed when it ran)\n", out);
    if (fclose(out) != 0 || rc < 0) {
        free(text);
        return NULL;
    }
    return text;
}
