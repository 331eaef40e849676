/* thread_state_sum: when each sampled thread ran, was blocked (it waited: a system call, a
 * futex, a sleep) or was preempted (runnable, another task on its CPU), from the kernel's
 * context switches (cpu_thread_states): the time and share of each over the thread's sampled
 * life, and its switches, one row per thread, the most time off the CPU first. With
 * --filter-nvtx RANGE only the time inside the ranges of that name the thread started counts.
 * Running is the rest of the life: the time on a CPU. docs/cpu.md, "Thread states". */
#include "model/gil_waits.h"
#include "model/thread_states.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state_row {
    int64_t thread_id, wall_ns;
    struct thread_state_sum sum;
};

struct state_rows {
    struct state_row *rows;
    size_t n, cap;
};

static const struct table_column columns[] = {
    {"Running", "running_percent", TABLE_PERCENT},
    {"Blocked", "blocked_percent", TABLE_PERCENT},
    {"Preempted", "preempted_percent", TABLE_PERCENT},
    {"Running Time", "running_ns", TABLE_NS},
    {"Blocked Time", "blocked_ns", TABLE_NS},
    {"Preempted Time", "preempted_ns", TABLE_NS},
    {"Switches", "switches", TABLE_INT},
    {"Wall Time", "wall_ns", TABLE_NS},
    {"Thread", "thread", TABLE_TEXT},
    {"Process", "process", TABLE_TEXT},
};
#define COLUMNS ((int)(sizeof columns / sizeof columns[0]))

/* One thread's row: its life (inside the ranges), its states there. */
static int add_thread(struct stats_ctx *ctx, struct state_rows *out, int64_t thread)
{
    int64_t *start = NULL, *end = NULL, life_start, life_end;
    struct cpu_windows windows = {0};
    struct state_row r = {.thread_id = thread};
    int rc = thread_states_life(ctx->db, thread, &life_start, &life_end);
    if (rc == 0 && ctx->filter_nvtx) {
        int64_t n = gil_range_windows(ctx->db, ctx->filter_nvtx, thread, &start, &end);
        rc = n < 0 ? (int)n : 0;
        windows = (struct cpu_windows){start, end, n > 0 ? (size_t)n : 0};
    }
    const struct cpu_windows *w = ctx->filter_nvtx ? &windows : NULL;
    if (rc < 0 || (rc = thread_states_add(ctx->db, thread, w, &r.sum)) < 0)
        goto out;
    r.wall_ns = gil_overlap(w, life_start, life_end);
    if (r.wall_ns <= 0)
        goto out;
    if ((rc = stats_room_for_row((void **)&out->rows, &out->cap, out->n, sizeof r)) < 0)
        goto out;
    out->rows[out->n++] = r;
out:
    free(start);
    free(end);
    return rc;
}

static int collect(struct stats_ctx *ctx, struct state_rows *out)
{
    sqlite3_stmt *threads = NULL;
    int rc = -EIO, step;
    if (sqlite3_prepare_v2(ctx->db, "SELECT DISTINCT thread_id FROM cpu_thread_states ORDER BY 1",
                           -1, &threads, NULL) != SQLITE_OK)
        goto out;
    rc = 0;
    while (rc == 0 && (step = sqlite3_step(threads)) == SQLITE_ROW)
        rc = add_thread(ctx, out, sqlite3_column_int64(threads, 0));
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
out:
    sqlite3_finalize(threads);
    return rc;
}

static int by_off_cpu(const void *a, const void *b)
{
    const struct state_row *x = a, *y = b;
    double ox = x->sum.blocked_ns + x->sum.preempted_ns, oy = y->sum.blocked_ns + y->sum.preempted_ns;
    if (ox != oy)
        return ox > oy ? -1 : 1;
    return (x->thread_id > y->thread_id) - (x->thread_id < y->thread_id);
}

static double share(double ns, int64_t wall)
{
    return wall > 0 ? 100.0 * ns / (double)wall : 0;
}

static int write_rows(struct stats_ctx *ctx, const struct state_rows *rows)
{
    sqlite3_stmt *thread = NULL;
    struct table *t = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(ctx->db,
                           "SELECT t.tid || ' (' || tl.label || ')', p.pid || ' (' || pl.label"
                           " || ')' FROM threads t JOIN thread_labels tl ON tl.id = t.id"
                           " JOIN processes p ON p.id = t.process_id"
                           " JOIN process_labels pl ON pl.id = p.id WHERE t.id = ?",
                           -1, &thread, NULL) != SQLITE_OK)
        goto out;
    if (!(t = stats_new_table(ctx, columns, COLUMNS))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < rows->n; i++) {
        const struct state_row *r = &rows->rows[i];
        double off = r->sum.blocked_ns + r->sum.preempted_ns;
        double running = off < (double)r->wall_ns ? (double)r->wall_ns - off : 0;
        table_percent(t, share(running, r->wall_ns));
        table_percent(t, share(r->sum.blocked_ns, r->wall_ns));
        table_percent(t, share(r->sum.preempted_ns, r->wall_ns));
        table_ns(t, running);
        table_ns(t, r->sum.blocked_ns);
        table_ns(t, r->sum.preempted_ns);
        table_int(t, r->sum.switches);
        table_ns(t, (double)r->wall_ns);
        sqlite3_reset(thread);
        sqlite3_bind_int64(thread, 1, r->thread_id);
        int known = sqlite3_step(thread) == SQLITE_ROW;
        table_text(t, known ? (const char *)sqlite3_column_text(thread, 0) : NULL);
        table_text(t, known ? (const char *)sqlite3_column_text(thread, 1) : NULL);
    }
    rc = table_finish(t) == 0 ? 0 : -EIO;
out:
    sqlite3_finalize(thread);
    return rc;
}

/* Why no thread is listed: the states are unknown (sampling off or refused, a kernel without
 * context switches, a database before them), or none inside the range. */
static void explain_empty(struct stats_ctx *ctx)
{
    sqlite3_stmt *st = NULL;
    const char *status = NULL, *reason = NULL;
    int states = -1;
    if (sqlite3_prepare_v2(ctx->db,
                           "SELECT status, reason, coalesce(thread_states, -1) FROM cpu_sampling"
                           " ORDER BY status = 'on' DESC, thread_states DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        status = (const char *)sqlite3_column_text(st, 0);
        reason = (const char *)sqlite3_column_text(st, 1);
        states = sqlite3_column_int(st, 2);
    }
    if (ctx->filter_nvtx && thread_states_present(ctx->db))
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: no thread state inside an NVTX range named '%s'",
                 ctx->filter_nvtx);
    else if (!status)
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: thread states unknown: no process was CPU-sampled (-t cpu)");
    else if (strcmp(status, "on") != 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: thread states unknown: CPU sampling was %s (%s)", status,
                 reason ? reason : "");
    else if (states == 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: thread states unknown: no context switches were recorded "
                 "(LANTERN_CPU_STATES=0, or a kernel before Linux 4.3)");
    else if (states < 0)
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: thread states unknown: not recorded (a database before "
                 "schema 9, or processes that ended without their sampler's totals)");
    else
        snprintf(ctx->note, sizeof ctx->note,
                 "thread_state_sum: no sampled thread left the CPU");
    sqlite3_finalize(st);
}

int stats_thread_state_sum(struct stats_ctx *ctx)
{
    struct state_rows rows = {0};
    int rc = collect(ctx, &rows);
    if (rc == 0) {
        if (rows.n)
            qsort(rows.rows, rows.n, sizeof *rows.rows, by_off_cpu);
        rc = write_rows(ctx, &rows);
        if (rc == 0 && rows.n == 0)
            explain_empty(ctx);
    }
    if (rc < 0)
        snprintf(ctx->error, sizeof ctx->error, "thread_state_sum: %s",
                 rc == -ENOMEM ? "out of memory" : sqlite3_errmsg(ctx->db));
    free(rows.rows);
    return rc;
}
