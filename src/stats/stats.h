/* `lantern stats` reports: each is one function in its own file, listed in the table of stats.c
 * that `lantern stats --report`, its --help and the tests all read. */
#ifndef LANTERN_STATS_STATS_H
#define LANTERN_STATS_STATS_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "output/table.h"

struct stats_ctx {
    sqlite3 *db; /* an open Lantern database */
    FILE *out;
    enum table_format format;
    char error[256];         /* why a report returned non-zero */
    const char *sort;        /* --sort: NULL for the report's own order, or a column ("duration") */
    int width;               /* text tables fit this many columns (0: no limit; output/fit.h) */
    int terminal;            /* out is a terminal: CSV escapes control characters (table.h) */
    char note[1024];         /* set by a report with an empty result that can say why (stderr) */
    const char *filter_nvtx; /* --filter-nvtx: only what happened inside ranges of this name */
};

struct stats_entry {
    const char *name;
    int (*run)(struct stats_ctx *ctx); /* 0, or -errno with ctx->error set */
    const char *help;
};

/* The table of reports, ended by a row of NULLs. */
extern const struct stats_entry stats_table[];
const struct stats_entry *stats_find(const char *name);

/* The session header (command, duration, processes, threads, dropped events, warnings)
 * written to out: text lines for a table or CSV (the caller picks a stream that keeps the
 * CSV clean), a JSON object for JSON. Returns 0 or -EIO with ctx->error set. */
int stats_header(struct stats_ctx *ctx, FILE *out);

/* Why a session recorded nothing at all (no process loaded the agent): the program used neither
 * NVTX nor CUDA, or lost the injection variables, and what to try, written into why; returns 1,
 * or 0 when a process was recorded. */
int stats_why_nothing(sqlite3 *db, char *why, size_t size);

/* The columns of nsys's summaries of durations (cuda_api_sum, osrt_sum, nvtx_sum, ...): the
 * spread of a group's durations, and the whole run of them: Time %, Total Time, a count (its
 * title and key), then the spread. */
#define STATS_DURATION_SPREAD_COLUMNS                                                              \
    {"Avg", "avg_ns", TABLE_NS}, {"Med", "med_ns", TABLE_NS}, {"Min", "min_ns", TABLE_NS},         \
        {"Max", "max_ns", TABLE_NS}, {"StdDev", "stddev_ns", TABLE_NS}
#define STATS_DURATION_COLUMNS(count_title, count_key)                                             \
    {"Time", "time_percent", TABLE_PERCENT}, {"Total Time", "total_ns", TABLE_NS},                 \
        {count_title, count_key, TABLE_INT}, STATS_DURATION_SPREAD_COLUMNS
/* Their SQL, over the expression `duration` of rows grouped by the caller, the share against
 * `all` (the SQL of all rows' total): the columns of STATS_DURATION_COLUMNS but the name. */
#define STATS_DURATION_SQL(duration, all)                                                          \
    "100.0 * SUM(" duration ") / (" all "), SUM(" duration "), COUNT(*), AVG(" duration "),"       \
    " lantern_median(" duration "), MIN(" duration "), MAX(" duration "),"                         \
    " lantern_stddev(" duration ")"

/* output.c: a report's table on ctx->out in its format, fitted to ctx->width, its CSV escaped for a
 * terminal (table.h). NULL if out of memory. */
struct table *stats_new_table(struct stats_ctx *ctx, const struct table_column *cols, int ncols);

/* A report with nothing to show (its reason already in ctx->note): its table without rows, so
 * that JSON stays whole and CSV keeps its header. Returns 0, or -EIO/-ENOMEM with ctx->error set. */
int stats_empty(struct stats_ctx *ctx, const struct table_column *cols, int ncols);

/* output.c: room for one more of the per-thread reports' rows (*rows holds n of *cap, each
 * size bytes), doubling from 16. 0 or -ENOMEM (the rows kept as they were). */
int stats_room_for_row(void **rows, size_t *cap, size_t n, size_t size);

/* output.c: the "Thread" and "Process" cells of a thread's row ("tid (label)", "pid (label)";
 * empty for a thread the database does not know) through the query stats_thread_query
 * prepares (NULL: the database's error). */
sqlite3_stmt *stats_thread_query(sqlite3 *db);
void stats_thread_cells(struct table *t, sqlite3_stmt *query, int64_t thread_id);

/* Why a database holds no CUDA activity (no API call, kernel, copy or set): writes the reason
 * ("-t cuda was off", "the host had no NVIDIA GPU", "the program made no CUDA call") into why
 * and returns 1; returns 0 when there is CUDA activity. */
int stats_why_no_cuda(sqlite3 *db, char *why, size_t size);

int stats_nvtx_sum(struct stats_ctx *ctx);
int stats_energy_sum(struct stats_ctx *ctx);      /* energy_sum.c */
int stats_nccl_sum(struct stats_ctx *ctx);        /* nccl_sum.c */
int stats_gpu_metrics_sum(struct stats_ctx *ctx); /* gpu_metrics_sum.c */
int stats_cpu_sample_sum(struct stats_ctx *ctx);  /* cpu_sample_sum.c */
int stats_kernels(struct stats_ctx *ctx);         /* kernels.c: `lantern kernels`' defaults */
int stats_osrt_sum(struct stats_ctx *ctx);        /* osrt_sum.c */
int stats_osrt_backtraces(struct stats_ctx *ctx); /* osrt_backtraces.c */
int stats_python_gil_sum(struct stats_ctx *ctx);  /* python_gil_sum.c */
int stats_thread_state_sum(struct stats_ctx *ctx); /* thread_state_sum.c */

#endif
