/* Are the runs comparable? What each database says about where and how it ran (its GPUs,
 * their power limit and clocks, throttling, the command, Lantern's version, the host, what was
 * lost) and how far the two sides' kernels overlap, compared run by run and said before any
 * row: a diff across different GPUs is allowed, but says so loudly (docs/diff.md). */
#include "common/sql_query.h"
#include "diff/diff_internal.h"
#include "model/aggregates.h"
#include "model/session_losses.h"
#include "model/throttle.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A sampled SM clock this much apart (%) between runs is a different clock. */
#define DIFF_CLOCK_TOLERANCE_PERCENT 5.0

/* The number sql selects, or -1 when none (a value the checks read as unknown). */
static double query_double(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q;
    double v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
        v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* The GPUs a run used: those it had a CUDA context on, else every GPU it lists. */
#define DIFF_USED_GPUS                                                                             \
    " FROM (SELECT * FROM gpus WHERE id IN (SELECT gpu_id FROM cuda_contexts)"                     \
    " OR NOT EXISTS (SELECT 1 FROM cuda_contexts WHERE gpu_id IS NOT NULL) ORDER BY id)"

int diff_facts_load(struct diff_run *run, char *error, size_t size)
{
    sqlite3 *db = run->db;
    struct diff_facts *f = &run->facts;
    f->command = sql_query_text(db, "SELECT value FROM meta WHERE key = 'command'");
    f->lantern_version = sql_query_text(db, "SELECT value FROM meta WHERE key = 'lantern_version'");
    f->host = sql_query_text(db, "SELECT value FROM meta WHERE key = 'host'");
    f->gpus =
        sql_query_text(db, "SELECT group_concat(ifnull(name, 'GPU ' || id), '; ')" DIFF_USED_GPUS);
    f->gpu_uuids =
        sql_query_text(db, "SELECT group_concat(ifnull(uuid, '?'), '; ')" DIFF_USED_GPUS);
    f->power_limits =
        sql_query_text(db, "SELECT group_concat(ifnull(CAST(round(power_limit_mw / 1000.0) AS "
                           "INTEGER) || ' W', 'unknown'), '; ')" DIFF_USED_GPUS);
    f->max_clocks = sql_query_text(db, "SELECT group_concat(ifnull((sm_clock_khz / 1000) || ' "
                                       "MHz', 'unknown'), '; ')" DIFF_USED_GPUS);
    if (aggregate_sql_register(db) < 0) {
        snprintf(error, size, "%s", sqlite3_errmsg(db));
        return -EIO;
    }
    /* the clock while the GPU works: an idle GPU drops its clock, which says nothing */
    f->sampled_clock =
        query_double(db, "SELECT lantern_median(sm_clock_mhz) FROM gpu_samples"
                         " WHERE sm_clock_mhz IS NOT NULL AND ifnull(gpu_util, 1) > 0");
    f->throttled = query_double(db, "SELECT 100.0 * sum((throttle_reasons & 236) != 0) / count(*)"
                                    " FROM gpu_samples WHERE throttle_reasons IS NOT NULL");
    f->throttle_reasons = (unsigned)sql_query_int(
        db,
        "WITH RECURSIVE bit(b) AS (SELECT 1 UNION ALL SELECT b * 2 FROM bit WHERE b < 128)"
        " SELECT sum(b) FROM bit WHERE EXISTS (SELECT 1 FROM gpu_samples"
        " WHERE throttle_reasons & b & 236)",
        0);
    f->losses = session_losses_line(db);
    if (!f->losses) {
        snprintf(error, size, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

void diff_facts_release(struct diff_facts *f)
{
    free(f->command);
    free(f->lantern_version);
    free(f->host);
    free(f->gpus);
    free(f->gpu_uuids);
    free(f->power_limits);
    free(f->max_clocks);
    free(f->losses);
}

/* A check's text grows by appending; out of memory leaves it NULL, which the caller reports. */
static void append(char **text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **text, const char *fmt, ...)
{
    char *more = NULL, *joined = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&more, fmt, ap);
    va_end(ap);
    if (n >= 0 && asprintf(&joined, "%s%s", *text ? *text : "", more) < 0)
        joined = NULL;
    free(more);
    free(*text);
    *text = joined;
}

struct sides {
    struct diff_run *const *run[2];
    int count[2];
};

/* A fact of every run, as one of the runs' texts. */
typedef char *(*fact_text)(const struct diff_run *run);

/* "value" when every run says the same, else "base: a, b; new: c" (each side's distinct
 * values in order); *differs when any two runs disagree. NULL when out of memory. */
static char *compare_fact(const struct sides *s, fact_text fact, int *differs)
{
    int total = s->count[0] + s->count[1];
    char **v = calloc((size_t)total, sizeof *v), *text = NULL;
    int ok = v != NULL;
    for (int k = 0; ok && k < total; k++) {
        const struct diff_run *run = k < s->count[0] ? s->run[0][k] : s->run[1][k - s->count[0]];
        v[k] = fact(run);
        ok = v[k] || (v[k] = strdup("not recorded")) != NULL;
    }
    *differs = 0;
    for (int k = 1; ok && k < total; k++)
        *differs |= strcmp(v[k], v[0]) != 0;
    if (ok && !*differs)
        text = strdup(v[0]);
    for (int side = 0, k = 0; ok && *differs && side < 2; side++) {
        append(&text, "%s%s:", side ? "; " : "", side ? "new" : "base");
        for (int i = 0, first = k; i < s->count[side]; i++, k++) {
            int repeated = 0;
            for (int j = first; j < k && !repeated; j++)
                repeated = !strcmp(v[j], v[k]);
            if (!repeated)
                append(&text, "%s %s", k > first ? "," : "", v[k]);
        }
    }
    for (int k = 0; v && k < total; k++)
        free(v[k]);
    free(v);
    return text;
}

static char *copy_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *fact_gpus(const struct diff_run *r)
{
    return copy_or_null(r->facts.gpus);
}
static char *fact_uuids(const struct diff_run *r)
{
    return copy_or_null(r->facts.gpu_uuids);
}
static char *fact_power(const struct diff_run *r)
{
    return copy_or_null(r->facts.power_limits);
}
static char *fact_max_clock(const struct diff_run *r)
{
    return copy_or_null(r->facts.max_clocks);
}
static char *fact_command(const struct diff_run *r)
{
    return copy_or_null(r->facts.command);
}
static char *fact_version(const struct diff_run *r)
{
    return copy_or_null(r->facts.lantern_version);
}
static char *fact_host(const struct diff_run *r)
{
    return copy_or_null(r->facts.host);
}
static char *fact_losses(const struct diff_run *r)
{
    return copy_or_null(r->facts.losses);
}

static int add_check(struct diff_result *res, const char *what, char *text, int differs)
{
    if (!text)
        return -ENOMEM;
    struct diff_check *grown = realloc(res->checks, (res->check_count + 1) * sizeof *grown);
    if (!grown) {
        free(text);
        return -ENOMEM;
    }
    res->checks = grown;
    res->checks[res->check_count++] = (struct diff_check){what, text, differs};
    return 0;
}

static char *fact_sampled_clock(const struct diff_run *r)
{
    char *text;
    if (r->facts.sampled_clock < 0 || asprintf(&text, "%.0f MHz", r->facts.sampled_clock) < 0)
        return NULL;
    return text;
}

static char *fact_throttling(const struct diff_run *r)
{
    char reasons[128], *text;
    if (r->facts.throttled <= 0)
        return r->facts.throttled < 0 ? NULL : strdup("none");
    throttle_text(r->facts.throttle_reasons, reasons, sizeof reasons);
    return asprintf(&text, "%.1f %% of samples (%s)", r->facts.throttled, reasons) < 0 ? NULL
                                                                                       : text;
}

/* The SM clock NVML sampled while the GPUs worked, and throttling, where power was sampled. */
static int sampled_checks(const struct sides *s, struct diff_result *res)
{
    double low = INFINITY, high = 0;
    int throttled = 0, differs;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < s->count[side]; i++) {
            const struct diff_facts *f = &s->run[side][i]->facts;
            if (f->sampled_clock >= 0) {
                low = fmin(low, f->sampled_clock);
                high = fmax(high, f->sampled_clock);
            }
            throttled |= f->throttled > 0;
        }
    if (high <= 0) /* NVML did not sample: nothing to say */
        return 0;
    int clocks_differ = high > low * (1 + DIFF_CLOCK_TOLERANCE_PERCENT / 100);
    char *clock = compare_fact(s, fact_sampled_clock, &differs);
    if (clock)
        append(&clock, " (median while busy)");
    int rc = add_check(res, "SM clock sampled", clock, clocks_differ);
    if (rc == 0 && clocks_differ)
        rc = diff_warn(res,
                       "the GPUs' sampled SM clocks differ by %.0f %% between runs: the "
                       "clock, not the change, may explain a difference",
                       100 * (high / low - 1));
    if (rc == 0)
        rc = add_check(res, "Throttling", compare_fact(s, fact_throttling, &differs), throttled);
    if (rc == 0 && throttled)
        rc = diff_warn(res, "a GPU was throttled during a run (power or thermal slowdown): its "
                            "times are slower than the GPU can run");
    return rc;
}

/* Kernel names on both sides, only in base, only in new, and the share of each side's GPU time
 * the shared names hold (from the rows: each kernel name is one). */
static int kernel_overlap(struct diff_result *res)
{
    size_t both = 0, only[2] = {0, 0};
    double shared[2] = {0, 0}, total[2] = {0, 0};
    for (size_t i = 0; i < res->count; i++) {
        const struct diff_row *r = &res->rows[i];
        if (r->kind != DIFF_KIND_KERNEL)
            continue;
        total[0] += r->base.total;
        total[1] += r->new.total;
        if (r->base.count && r->new.count) {
            both++;
            shared[0] += r->base.total;
            shared[1] += r->new.total;
        } else {
            only[r->new.count > 0]++;
        }
    }
    if (!both && !only[0] && !only[1])
        return 0;
    char *text = NULL;
    append(&text, "%zu names in both, %zu only in base, %zu only in new", both, only[0], only[1]);
    if (total[0] > 0 && total[1] > 0)
        append(&text, "; the shared names hold %.1f %% of base and %.1f %% of new GPU time",
               100 * shared[0] / total[0], 100 * shared[1] / total[1]);
    return add_check(res, "Kernels", text, only[0] || only[1]);
}

int diff_checks(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                int new_count, struct diff_result *res)
{
    const struct sides s = {{base, new}, {base_count, new_count}};
    int differs, uuids_differ, rc = 0;
    int any_gpu = 0; /* a run without CUDA lists no GPU: nothing to compare then */
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < s.count[side]; i++)
            any_gpu |= s.run[side][i]->facts.gpus != NULL;
    char *gpus = any_gpu ? compare_fact(&s, fact_gpus, &differs) : NULL;
    char *uuids = any_gpu ? compare_fact(&s, fact_uuids, &uuids_differ) : NULL;
    free(uuids);
    if (gpus) {
        if (!differs && uuids_differ)
            append(&gpus, " (the same model; other GPUs)");
        rc = add_check(res, "GPU", gpus, differs);
        if (rc == 0 && differs)
            rc = diff_warn(res,
                           "THE RUNS USED DIFFERENT GPUS (%s): a difference may be the "
                           "hardware's, not the change's",
                           res->checks[res->check_count - 1].text);
        if (rc == 0)
            rc = add_check(res, "Power limit", compare_fact(&s, fact_power, &differs), differs);
        if (rc == 0)
            rc = add_check(res, "SM clock (max)", compare_fact(&s, fact_max_clock, &differs),
                           differs);
        if (rc == 0)
            rc = sampled_checks(&s, res);
        if (rc == 0)
            rc = add_check(res, "Driver, CUDA",
                           strdup("not recorded in Lantern databases: compare them yourself"), 0);
    }
    char *command = rc == 0 ? compare_fact(&s, fact_command, &differs) : NULL;
    if (command) {
        rc = add_check(res, "Command", command, differs);
        if (rc == 0 && differs)
            rc = diff_warn(res, "the runs ran different commands (see Command above)");
    }
    char *version = rc == 0 ? compare_fact(&s, fact_version, &differs) : NULL;
    if (version)
        rc = add_check(res, "Lantern", version, differs);
    char *host = rc == 0 ? compare_fact(&s, fact_host, &differs) : NULL;
    if (host)
        rc = add_check(res, "Host", host, differs);
    if (rc == 0)
        rc = kernel_overlap(res);
    char *losses = rc == 0 ? compare_fact(&s, fact_losses, &differs) : NULL;
    if (losses) {
        int lost = differs || strcmp(losses, "none");
        rc = add_check(res, "Lost events", losses, lost);
        if (rc == 0 && lost)
            rc = diff_warn(res, "a run lost events (see Lost events above): its rows may miss "
                                "instances");
    }
    return rc;
}
