/* The one wording of a session's losses (session_losses.h), read from the database. */
#include "model/session_losses.h"
#include "common/sql_query.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

/* Processes and threads named in the line; the rest are counted. */
#define LOSSES_NAMED 3

/* " train.py (rank 1)" after a process's pid: its label, unless that is only "pid N" */
#define LOSSES_LABEL "CASE WHEN l.label = 'pid ' || p.pid THEN '' ELSE ' ' || l.label END"

static const char unfinished_why[] = "no end record: killed, or still running when imported; "
                                     "events after the last write missing: unknown";
static const char ended_why[] = "events after the last write missing: unknown";

/* The processes without an end record, split by whether the launcher saw how they ended
 * (processes.exit_status, exit_signal: it reaped them). */
#define LOSSES_END_UNKNOWN "end_record = 0 AND exit_status IS NULL AND exit_signal IS NULL"
#define LOSSES_END_SEEN "end_record = 0 AND (exit_status IS NOT NULL OR exit_signal IS NOT NULL)"

/* The signals a process is commonly ended by, by the names users know. */
static const struct {
    int number;
    const char *name;
} signal_names[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
};

/* How a process ended, from its exit_status, exit_signal and core_dumped (columns col, col + 1,
 * col + 2 of st): "exit code 5" (in a sentence: "exited with code 5"), "ended by SIGKILL",
 * "ended by signal 40, core dumped". */
static void put_end(FILE *out, sqlite3_stmt *st, int col, int sentence)
{
    if (sqlite3_column_type(st, col + 1) == SQLITE_NULL) {
        fprintf(out, sentence ? "exited with code %lld" : "exit code %lld",
                (long long)sqlite3_column_int64(st, col));
        return;
    }
    int number = sqlite3_column_int(st, col + 1);
    size_t i = 0, count = sizeof signal_names / sizeof signal_names[0];
    while (i < count && signal_names[i].number != number)
        i++;
    if (i < count)
        fprintf(out, "ended by %s", signal_names[i].name);
    else
        fprintf(out, "ended by signal %d", number);
    if (sqlite3_column_int(st, col + 2))
        fputs(", core dumped", out);
}

/* " [tid 1240 worker: 12, ...]": the threads of a process that dropped events (none when
 * its drops were all process-wide). */
static void put_threads(sqlite3 *db, FILE *out, int64_t process_id)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT t.tid, l.label, t.dropped_events, count(*) OVER () FROM threads t"
            " JOIN thread_labels l ON l.id = t.id"
            " WHERE t.process_id = ? AND t.dropped_events > 0"
            " ORDER BY t.dropped_events DESC, t.id",
            -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, process_id);
    int i = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; i++) {
        if (i == LOSSES_NAMED) {
            fprintf(out, ", and %lld more", (long long)sqlite3_column_int64(st, 3) - i);
            break;
        }
        fprintf(out, "%stid %lld %s: %lld", i ? ", " : " [", (long long)sqlite3_column_int64(st, 0),
                (const char *)sqlite3_column_text(st, 1), (long long)sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    if (i)
        fputc(']', out);
}

/* "12 events dropped (pid 1234 train.py: 12 [tid 1240 worker: 12]; ...)" */
static void put_dropped(sqlite3 *db, FILE *out, int64_t dropped)
{
    sqlite3_stmt *st;
    fprintf(out, "%lld event%s dropped", (long long)dropped, dropped == 1 ? "" : "s");
    if (sqlite3_prepare_v2(db,
                           "SELECT p.id, p.pid, " LOSSES_LABEL
                           ", p.dropped_events, count(*) OVER ()"
                           " FROM processes p JOIN process_labels l ON l.id = p.id"
                           " WHERE p.dropped_events > 0 ORDER BY p.dropped_events DESC, p.id",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    int i = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; i++) {
        if (i == LOSSES_NAMED) {
            fprintf(out, "; and %lld more processes", (long long)sqlite3_column_int64(st, 4) - i);
            break;
        }
        fprintf(out, "%spid %lld%s: %lld", i ? "; " : " (", (long long)sqlite3_column_int64(st, 1),
                (const char *)sqlite3_column_text(st, 2), (long long)sqlite3_column_int64(st, 3));
        put_threads(db, out, sqlite3_column_int64(st, 0));
    }
    sqlite3_finalize(st);
    if (i)
        fputc(')', out);
}

/* "1 process did not end (...): pid 99 daemon, ..." (seen 0), or "1 process ended without its
 * end record (...): pid 98 worker (exit code 5), ..." (seen 1: the launcher saw how) */
static void put_unfinished(sqlite3 *db, FILE *out, int64_t count, int seen)
{
    sqlite3_stmt *st;
    if (seen)
        fprintf(out, "%lld process%s ended without %s end record (%s)", (long long)count,
                count == 1 ? "" : "es", count == 1 ? "its" : "their", ended_why);
    else
        fprintf(out, "%lld process%s did not end (%s)", (long long)count, count == 1 ? "" : "es",
                unfinished_why);
    if (sqlite3_prepare_v2(db,
                           seen ? "SELECT p.pid, " LOSSES_LABEL ", p.exit_status, p.exit_signal,"
                                  " p.core_dumped FROM processes p JOIN process_labels l"
                                  " ON l.id = p.id WHERE " LOSSES_END_SEEN
                                  " ORDER BY p.start_ns, p.id"
                                : "SELECT p.pid, " LOSSES_LABEL " FROM processes p"
                                  " JOIN process_labels l ON l.id = p.id WHERE " LOSSES_END_UNKNOWN
                                  " ORDER BY p.start_ns, p.id",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    for (int i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
        if (i == LOSSES_NAMED) {
            fprintf(out, ", and %lld more", (long long)count - i);
            break;
        }
        fprintf(out, "%spid %lld%s", i ? ", " : ": ", (long long)sqlite3_column_int64(st, 0),
                (const char *)sqlite3_column_text(st, 1));
        if (seen) {
            fputs(" (", out);
            put_end(out, st, 2, 0);
            fputc(')', out);
        }
    }
    sqlite3_finalize(st);
}

/* The importer's losses (import_losses; absent from databases made before it), by reason:
 * "3 duplicated chunks skipped (...) (pid 1234 train.py: 3)". Returns whether there were any. */
static int put_import_losses(sqlite3 *db, FILE *out, int after)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT il.reason, sum(il.count), group_concat(CASE WHEN p.id IS NULL"
                           " THEN il.raw_file ELSE 'pid ' || p.pid || " LOSSES_LABEL " END"
                           " || ': ' || il.count, ', ') FROM import_losses il"
                           " LEFT JOIN processes p ON p.id = il.process_id"
                           " LEFT JOIN process_labels l ON l.id = p.id"
                           " GROUP BY il.reason ORDER BY min(il.rowid)",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    int n = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; n++)
        fprintf(out, "%s%lld %s (%s)", after || n ? "; " : "",
                (long long)sqlite3_column_int64(st, 1), (const char *)sqlite3_column_text(st, 0),
                (const char *)sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    return n > 0;
}

int64_t session_losses_unfinished(sqlite3 *db)
{
    return sql_query_int(db, "SELECT count(*) FROM processes WHERE end_record = 0", 0);
}

char *session_losses_line(sqlite3 *db)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    int64_t dropped = sql_query_int(db, "SELECT value FROM meta WHERE key = 'dropped_events'", 0);
    int64_t unknown =
        sql_query_int(db, "SELECT count(*) FROM processes WHERE " LOSSES_END_UNKNOWN, 0);
    int64_t seen = sql_query_int(db, "SELECT count(*) FROM processes WHERE " LOSSES_END_SEEN, 0);
    if (dropped)
        put_dropped(db, out, dropped);
    if (unknown) {
        if (dropped)
            fputs("; ", out);
        put_unfinished(db, out, unknown, 0);
    }
    if (seen) {
        if (dropped || unknown)
            fputs("; ", out);
        put_unfinished(db, out, seen, 1);
    }
    int imported = put_import_losses(db, out, dropped || unknown || seen);
    if (!dropped && !unknown && !seen && !imported)
        fputs("none", out);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* text (malloc'd or NULL) with the process's import_losses after it, "; " between. */
static char *import_losses_of(sqlite3 *db, int64_t process_id, char *text)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT group_concat(count || ' ' || reason, '; ') FROM import_losses"
                           " WHERE process_id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return text;
    sqlite3_bind_int64(st, 1, process_id);
    const char *losses =
        sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    char *joined = NULL;
    if (losses && asprintf(&joined, "%s%s%s", text ? text : "", text ? "; " : "", losses) >= 0) {
        free(text);
        text = joined;
    }
    sqlite3_finalize(st);
    return text;
}

char *session_losses_process(sqlite3 *db, int64_t process_id)
{
    sqlite3_stmt *st;
    char *text = NULL;
    size_t len = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT dropped_events, end_record, exit_status, exit_signal,"
                           " core_dumped FROM processes WHERE id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(st, 1, process_id);
    FILE *out = open_memstream(&text, &len);
    if (out && sqlite3_step(st) == SQLITE_ROW) {
        long long dropped = sqlite3_column_int64(st, 0);
        int ended = sqlite3_column_int(st, 1);
        int seen =
            sqlite3_column_type(st, 2) != SQLITE_NULL || sqlite3_column_type(st, 3) != SQLITE_NULL;
        if (dropped)
            fprintf(out, "%lld event%s dropped%s", dropped, dropped == 1 ? "" : "s",
                    ended ? "" : "; ");
        if (!ended && seen) {
            put_end(out, st, 2, 1);
            fprintf(out, " without its end record (%s)", ended_why);
        } else if (!ended) {
            fprintf(out, "did not end (%s)", unfinished_why);
        }
    }
    sqlite3_finalize(st);
    if (!out || fclose(out) != 0) {
        free(text);
        return NULL;
    }
    if (!len) { /* it lost nothing so far */
        free(text);
        text = NULL;
    }
    return import_losses_of(db, process_id, text);
}
