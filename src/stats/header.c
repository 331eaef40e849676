/* The session header every report starts with: what ran, for how long, in how many
 * processes and threads, and what was lost (dropped events, damaged raw files), so a
 * summary is never read without knowing it may be incomplete. */
#include "common/sql_query.h"
#include "model/gpu_metrics_sources.h"
#include "model/session_losses.h"
#include "output/json.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct header_info {
    char *command;
    char *losses;       /* the shared line of what was lost (model/session_losses.h) */
    char *gpu_metrics;  /* what recorded them, per GPU (model/gpu_metrics_sources.h), or NULL */
    char *cpu_sampling; /* "on, 1000 Hz: ..." or why not, or NULL: -t cpu was off */
    char *osrt;         /* "on, threshold ...: kept of timed", or NULL: -t osrt was off */
    int64_t unfinished;
    int64_t duration_ns, processes, threads, dropped, warnings, unended, exit_status;
    int has_exit_status;
};

/* The CPU sampler's one line (-t cpu, docs/cpu.md): its rate and what it took where every
 * process was sampled; else why not, naming the processes it could not sample. */
static char *cpu_sampling_line(sqlite3 *db)
{
    sqlite3_stmt *st;
    char *line = NULL;
    if (sqlite3_prepare_v2(
            db,
            "SELECT count(*), sum(status = 'on'), max(1000000000 / nullif(period_ns, 0)),"
            " ifnull(sum(samples), 0), ifnull(sum(lost), 0), ifnull(sum(threads), 0),"
            " (SELECT group_concat('pid ' || p.pid, ', ') FROM cpu_sampling c2"
            "  JOIN processes p ON p.id = c2.process_id WHERE c2.status <> 'on'),"
            " (SELECT status || ': ' || ifnull(reason, '') FROM cpu_sampling"
            "  WHERE status <> 'on' LIMIT 1), ifnull(sum(threads_unsampled), 0),"
            " (SELECT reason FROM cpu_sampling WHERE status = 'on' AND reason <> '' LIMIT 1)"
            " FROM cpu_sampling",
            -1, &st, NULL) != SQLITE_OK)
        return NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
        long long processes = sqlite3_column_int64(st, 0), on = sqlite3_column_int64(st, 1);
        const char *off_pids = (const char *)sqlite3_column_text(st, 6);
        const char *why = (const char *)sqlite3_column_text(st, 7);
        int n;
        long long unsampled = sqlite3_column_int64(st, 8);
        long long threads = sqlite3_column_int64(st, 5);
        /* how it sampled where that is not perf events (CPU-time timers) */
        const char *how = (const char *)sqlite3_column_text(st, 9);
        if (on == processes)
            n = asprintf(
                &line, "on%s%s%s, %lld Hz: %lld samples of %lld thread%s (%lld lost)%s%.0lld%s",
                how ? " (" : "", how ? how : "", how ? ")" : "",
                (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3),
                threads, threads == 1 ? "" : "s", (long long)sqlite3_column_int64(st, 4),
                unsampled ? "; " : "", unsampled, unsampled ? " threads not sampled" : "");
        else
            n = asprintf(&line, "off in %s: %s%s", off_pids ? off_pids : "?", why ? why : "",
                         on ? " (the other processes were sampled)" : "");
        if (n < 0)
            line = NULL;
    }
    sqlite3_finalize(st);
    return line;
}

/* The OS runtime calls' one line (-t osrt, docs/osrt.md): the threshold, the calls kept of
 * those timed, and those lost, over the processes that ran the source. */
static char *osrt_line(sqlite3 *db)
{
    sqlite3_stmt *st;
    char *line = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*), min(threshold_ns), max(threshold_ns),"
                           " ifnull(sum(kept), 0), ifnull(sum(seen), 0), ifnull(sum(lost), 0),"
                           " count(seen) FROM osrt",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
        long long processes = sqlite3_column_int64(st, 0), ended = sqlite3_column_int64(st, 6);
        long long low = sqlite3_column_int64(st, 1), high = sqlite3_column_int64(st, 2);
        char threshold[64];
        snprintf(threshold, sizeof threshold, low == high ? "%lld ns" : "%lld-%lld ns", low, high);
        int n = ended < processes
                    ? asprintf(&line,
                               "on, threshold %s: %lld calls kept of %lld timed in %lld "
                               "processes (%lld lost); %lld ended without their counts",
                               threshold, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                               processes, sqlite3_column_int64(st, 5), processes - ended)
                    : asprintf(&line,
                               "on, threshold %s: %lld calls kept of %lld timed in %lld "
                               "process%s (%lld lost)",
                               threshold, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                               processes, processes == 1 ? "" : "es", sqlite3_column_int64(st, 5));
        if (n < 0)
            line = NULL;
    }
    sqlite3_finalize(st);
    return line;
}

static void read_info(sqlite3 *db, struct header_info *s)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'command'", -1, &st, NULL) ==
        SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            s->command = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    s->duration_ns = sql_query_int(db,
                                   "SELECT (SELECT value FROM meta WHERE key = 'end_ns') - "
                                   "(SELECT value FROM meta WHERE key = 'start_ns')",
                                   0);
    s->processes = sql_query_int(db, "SELECT count(*) FROM processes", 0);
    s->threads = sql_query_int(db, "SELECT count(*) FROM threads", 0);
    s->dropped = sql_query_int(db, "SELECT value FROM meta WHERE key = 'dropped_events'", 0);
    s->warnings = sql_query_int(db, "SELECT value FROM meta WHERE key = 'import_warnings'", 0);
    s->unended = sql_query_int(db, "SELECT count(*) FROM ranges WHERE end_ns IS NULL", 0);
    s->losses = session_losses_line(db);
    s->gpu_metrics = gpu_metrics_sources_lines(db);
    s->cpu_sampling = cpu_sampling_line(db);
    s->osrt = osrt_line(db);
    s->unfinished = session_losses_unfinished(db);
    s->has_exit_status =
        sql_query_int(
            db, "SELECT count(*) FROM meta WHERE key = 'exit_status' AND value IS NOT NULL", 0) > 0;
    s->exit_status = sql_query_int(db, "SELECT value FROM meta WHERE key = 'exit_status'", 0);
}

/* The processes, when there is more than one or a rank: pid, name, rank, and the traced
 * process that started it (docs/schema.md); labels from the process_labels view. */
static sqlite3_stmt *processes_query(sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT p.pid, l.label, parent.pid, p.name, p.rank FROM processes p"
                           " JOIN process_labels l ON l.id = p.id"
                           " LEFT JOIN processes parent ON parent.id = p.parent_id"
                           " WHERE (SELECT count(*) FROM processes) > 1 OR"
                           " (SELECT count(*) FROM processes"
                           "  WHERE rank IS NOT NULL OR local_rank IS NOT NULL) > 0"
                           " ORDER BY p.start_ns, p.id",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    return st;
}

/* Each damaged raw file's warning, as the importer stored it. */
static sqlite3_stmt *warnings_query(sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db, "SELECT import_warning FROM processes WHERE import_warning IS NOT NULL ORDER BY id",
            -1, &st, NULL) != SQLITE_OK)
        return NULL;
    return st;
}

static void print_text(sqlite3 *db, const struct header_info *s, FILE *out)
{
    char duration[32];
    table_format_duration(duration, sizeof duration, (double)s->duration_ns);
    char *command = s->command ? table_escape_controls(s->command) : NULL;
    fprintf(out, "Command:         %s\n", command ? command : "(unknown)");
    free(command);
    fprintf(out, "Duration:        %s\n", duration);
    if (s->has_exit_status)
        fprintf(out, "Exit status:     %lld\n", (long long)s->exit_status);
    fprintf(out, "Processes:       %lld\n", (long long)s->processes);
    sqlite3_stmt *procs = processes_query(db);
    while (procs && sqlite3_step(procs) == SQLITE_ROW) {
        fprintf(out, "  pid %-8lld %s", sqlite3_column_int64(procs, 0),
                (const char *)sqlite3_column_text(procs, 1));
        if (sqlite3_column_type(procs, 2) != SQLITE_NULL)
            fprintf(out, ", started by pid %lld", sqlite3_column_int64(procs, 2));
        putc('\n', out);
    }
    sqlite3_finalize(procs);
    fprintf(out, "Threads:         %lld\n", (long long)s->threads);
    /* one line per GPU, each escaped on its own (a GPU's name comes from the driver) */
    for (const char *line = s->gpu_metrics, *end; line && (end = strchr(line, '\n'));
         line = end + 1) {
        char *text = strndup(line, (size_t)(end - line));
        char *shown = text ? table_escape_controls(text) : NULL;
        fprintf(out, "%s%s\n", line == s->gpu_metrics ? "GPU metrics:     " : "                 ",
                shown ? shown : "");
        free(shown);
        free(text);
    }
    if (s->cpu_sampling) {
        char *shown = table_escape_controls(s->cpu_sampling);
        fprintf(out, "CPU sampling:    %s\n", shown ? shown : "");
        free(shown);
    }
    if (s->osrt)
        fprintf(out, "OS runtime:      %s\n", s->osrt);
    fprintf(out, "Dropped events:  %lld%s\n", (long long)s->dropped,
            s->dropped ? " (some ranges may be missing or unended; see LANTERN_BUFFER_KB)" : "");
    char *losses = s->losses ? table_escape_controls(s->losses) : NULL;
    fprintf(out, "Lost events:     %s\n", losses ? losses : "(unknown)");
    free(losses);
    fprintf(out, "Unended ranges:  %lld\n", (long long)s->unended);
    fprintf(out, "Import warnings: %lld\n", (long long)s->warnings);
    sqlite3_stmt *st = warnings_query(db);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        char *warning = table_escape_controls((const char *)sqlite3_column_text(st, 0));
        fprintf(out, "  warning: %s\n", warning ? warning : "");
        free(warning);
    }
    sqlite3_finalize(st);
    putc('\n', out);
}

static void print_json(sqlite3 *db, const struct header_info *s, FILE *out)
{
    fputs("{\"command\": ", out);
    json_write_cstring(out, s->command);
    fprintf(out,
            ", \"duration_ns\": %lld, \"processes\": %lld, \"threads\": %lld, \"dropped_events\": "
            "%lld, "
            "\"unended_ranges\": %lld, \"unfinished_processes\": %lld, \"lost_events\": ",
            (long long)s->duration_ns, (long long)s->processes, (long long)s->threads,
            (long long)s->dropped, (long long)s->unended, (long long)s->unfinished);
    json_write_cstring(out, s->losses);
    fputs(", \"exit_status\": ", out);
    if (s->has_exit_status)
        fprintf(out, "%lld", (long long)s->exit_status);
    else
        fputs("null", out);
    fputs(", \"process_list\": [", out);
    sqlite3_stmt *procs = processes_query(db);
    for (int i = 0; procs && sqlite3_step(procs) == SQLITE_ROW; i++) {
        fprintf(out, "%s{\"pid\": %lld, \"name\": ", i ? ", " : "", sqlite3_column_int64(procs, 0));
        json_write_cstring(out, (const char *)sqlite3_column_text(procs, 3));
        fputs(", \"rank\": ", out);
        if (sqlite3_column_type(procs, 4) != SQLITE_NULL)
            fprintf(out, "%lld", sqlite3_column_int64(procs, 4));
        else
            fputs("null", out);
        fputs(", \"started_by_pid\": ", out);
        if (sqlite3_column_type(procs, 2) != SQLITE_NULL)
            fprintf(out, "%lld}", sqlite3_column_int64(procs, 2));
        else
            fputs("null}", out);
    }
    sqlite3_finalize(procs);
    fputs("], \"gpu_metrics\": [", out);
    for (const char *line = s->gpu_metrics, *end; line && (end = strchr(line, '\n'));
         line = end + 1) {
        fputs(line == s->gpu_metrics ? "" : ", ", out);
        json_write_string(out, line, (size_t)(end - line));
    }
    fputs("], \"cpu_sampling\": ", out);
    json_write_cstring(out, s->cpu_sampling);
    fputs(", \"osrt\": ", out);
    json_write_cstring(out, s->osrt);
    fprintf(out, ", \"import_warnings\": %lld, \"warnings\": [", (long long)s->warnings);
    sqlite3_stmt *st = warnings_query(db);
    for (int i = 0; st && sqlite3_step(st) == SQLITE_ROW; i++) {
        fputs(i ? ", " : "", out);
        json_write_cstring(out, (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    fputs("]}", out);
}

int stats_header(struct stats_ctx *ctx, FILE *out)
{
    struct header_info s = {0};
    read_info(ctx->db, &s);
    if (ctx->format == TABLE_FORMAT_JSON)
        print_json(ctx->db, &s, out);
    else
        print_text(ctx->db, &s, out);
    free(s.command);
    free(s.losses);
    free(s.gpu_metrics);
    free(s.cpu_sampling);
    free(s.osrt);
    if (ferror(out)) {
        snprintf(ctx->error, sizeof ctx->error, "cannot write the session header");
        return -EIO;
    }
    return 0;
}

/* Whether the session's command runs Python (its first word is python*, pypy*). */
static int runs_python(const char *command)
{
    size_t n = command ? strcspn(command, " ") : 0;
    const char *base = command;
    for (size_t i = 0; i < n; i++)
        if (command[i] == '/')
            base = command + i + 1;
    return base && (!strncmp(base, "python", 6) || !strncmp(base, "pypy", 4));
}

int stats_why_nothing(sqlite3 *db, char *why, size_t size)
{
    if (sql_query_int(db, "SELECT count(*) FROM processes", 0) > 0)
        return 0;
    char *trace = sql_query_text(db, "SELECT value FROM meta WHERE key = 'trace'");
    char *command = sql_query_text(db, "SELECT value FROM meta WHERE key = 'command'");
    int cuda = trace && strstr(trace, "cuda") != NULL;
    int no_gpu =
        sql_query_int(db, "SELECT value FROM meta WHERE key = 'nvidia_gpu_present'", 1) == 0;
    snprintf(why, size,
             "nothing was recorded: no process of the command made an NVTX call%s (a process is "
             "recorded from its first), or the program's environment lost %s (a wrapper that "
             "clears or sets it), or Lantern could not run in it (a lantern: line said why as it "
             "ran); try %s%s",
             cuda ? " or a CUDA call" : "",
             cuda ? "NVTX_INJECTION64_PATH and CUDA_INJECTION64_PATH" : "NVTX_INJECTION64_PATH",
             runs_python(command) ? "--python-functions 'mymodule.*' (Python functions as ranges, "
                                    "with no change to the program), or NVTX ranges (pip install "
                                    "nvtx)"
                                  : "NVTX ranges in the program (nvtxRangePushA/nvtxRangePop, "
                                    "nvtx3/nvToolsExt.h)",
             no_gpu  ? "; this host has no NVIDIA GPU, so there was no CUDA to trace"
             : !cuda ? "; -t cuda,nvtx traces CUDA too"
                     : "");
    free(trace);
    free(command);
    return 1;
}
