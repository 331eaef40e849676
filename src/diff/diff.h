/* `lantern diff`: an A/B comparison of profiles, one or more runs per side, that says what got
 * slower or faster and how sure it is (docs/diff.md). Rows are matched by name across the
 * runs: NVTX ranges (domain:name), kernels (short name, also per NVTX range), copies (kind),
 * CUDA API calls (name), energy per range and GPU metrics per kernel where recorded, and
 * whole-run figures. Each row gets the median and its change with a 95 % confidence interval,
 * a test, a Benjamini-Hochberg q-value over all rows, and a verdict; ranges that changed are
 * explained by what they contain; comparability checks come first.
 *
 *   struct diff_run *base, *new;                  one per database (open, read-only)
 *   diff_run_load(db, path, &base, error, size);
 *   struct diff_result result;
 *   diff_compare(&base, 1, &new, 1, &options, &result, error, size);
 *   diff_write(&result, format, width, all, stdout);   and/or diff_write_html(&result, file)
 *   diff_result_release(&result); diff_run_free(base); ...
 *
 * Functions return 0 or a negative errno (-ENOMEM, -EIO, -EBADMSG) with the reason in error;
 * they never print. */
#ifndef LANTERN_DIFF_H
#define LANTERN_DIFF_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/table.h"

enum diff_kind {
    DIFF_KIND_RUN,          /* whole-run figures: duration, GPU busy share, GPU idle */
    DIFF_KIND_RANGE,        /* an NVTX range, by domain:name */
    DIFF_KIND_KERNEL,       /* a kernel, by short name */
    DIFF_KIND_RANGE_KERNEL, /* a kernel launched in an NVTX range (innermost): scope = range */
    DIFF_KIND_COPY,         /* copies by kind, memsets */
    DIFF_KIND_API,          /* a CUDA API call, by name */
    DIFF_KIND_ENERGY,       /* the GPU energy of an NVTX range's instances (J) */
    DIFF_KIND_METRIC,       /* a GPU metric over a kernel's executions (%): scope = metric */
    DIFF_KIND_COUNT
};

enum diff_unit { DIFF_UNIT_NS, DIFF_UNIT_JOULES, DIFF_UNIT_PERCENT };

/* The kinds' names in output ("range", "kernel in range", ...) and units. */
struct diff_kind_info {
    const char *name;
    enum diff_unit unit;
};
extern const struct diff_kind_info diff_kinds[DIFF_KIND_COUNT];

enum diff_verdict {
    DIFF_SLOWER,   /* a time that grew: significant and beyond the threshold */
    DIFF_FASTER,   /* a time that shrank */
    DIFF_HIGHER,   /* energy or a metric that grew */
    DIFF_LOWER,    /* energy or a metric that shrank */
    DIFF_NEW,      /* only in the new runs */
    DIFF_GONE,     /* only in the base runs */
    DIFF_SAME,     /* tested: not significant, or within the threshold */
    DIFF_UNTESTED, /* too few values to test (one value per side, fewer than 2 instances) */
    DIFF_VERDICT_COUNT
};
extern const char *const diff_verdict_names[DIFF_VERDICT_COUNT];

/* How a side is summarized and rows are tested. */
enum diff_mode {
    DIFF_MODE_INSTANCES, /* a side with one run: its instances (Mann-Whitney U, bootstrap) */
    DIFF_MODE_RUNS,      /* at least two runs on each side: the runs' medians (bootstrap) */
};

struct diff_options {
    double threshold_percent; /* a smaller change of the median is "same" (default 5) */
    double alpha;             /* the false-discovery rate (default 0.05) */
};

struct diff_run;

/* Reads what the diff compares from one open Lantern database; the run keeps db (for the
 * explanations) and path (for the messages), which must outlive it. */
int diff_run_load(sqlite3 *db, const char *path, struct diff_run **out, char *error, size_t size);
void diff_run_free(struct diff_run *run);

/* One row's figures on one side. */
struct diff_side {
    int64_t count;   /* instances over all runs (a figure of the whole run: runs that have it) */
    int runs;        /* runs that have the row */
    double median;   /* instances: the median; runs mode: the mean of the runs' medians */
    double p10, p90; /* of the instances of every run together */
    double total;    /* the sum of the instances, per run (the mean over the side's runs) */
};

/* What a changed NVTX range contains, per instance, on each side (runs averaged). */
enum diff_part_kind {
    DIFF_PART_KERNEL, /* GPU time of a kernel its process launched while it was open */
    DIFF_PART_COPY,   /* the same for a copy or memset */
    DIFF_PART_RANGE,  /* a nested NVTX range (a direct child) */
    DIFF_PART_SYNC,   /* time the thread waited in CUDA synchronization inside it */
    DIFF_PART_HOST,   /* host gaps: the range's time outside any CUDA API call */
    DIFF_PART_COUNT
};
extern const char *const diff_part_names[DIFF_PART_COUNT];

struct diff_part {
    enum diff_part_kind kind;
    char *name;       /* kernel, copy or range name; NULL for sync and host */
    double base, new; /* ns per instance */
    double tensor;    /* kernels: mean Tensor Core activity (%) in the new runs, -1: unknown */
};

struct diff_row {
    enum diff_kind kind;
    enum diff_unit unit; /* the kind's, but the whole run's "GPU busy" is a percentage */
    const char *scope;   /* the range of a kernel in a range, the metric of a metric; else NULL */
    const char *name;
    struct diff_side base, new;
    double change, change_low, change_high;    /* new - base median, and its 95 % interval */
    double percent, percent_low, percent_high; /* the same relative to base; NaN if base is 0 */
    double p, q;      /* the test's p-value and its Benjamini-Hochberg q; NaN when untested */
    const char *test; /* "mann-whitney", "bootstrap over runs"; NULL when untested */
    enum diff_verdict verdict;
    struct diff_part *parts; /* a changed range: what changed inside, largest change first */
    size_t part_count;
    char *explanation; /* the same as one line of text; NULL for other rows */
};

/* A comparability check, said first: what was compared, and whether the sides differ. */
struct diff_check {
    const char *what; /* "GPU", "Command", ... */
    char *text;
    int differs;
};

struct diff_result {
    enum diff_mode mode;
    int base_runs, new_runs;
    const char **base_paths, **new_paths;
    struct diff_options options;
    struct diff_row *rows; /* changes first, the largest first; then the rest by kind */
    size_t count;
    size_t verdicts[DIFF_VERDICT_COUNT];
    struct diff_check *checks;
    size_t check_count;
    char **warnings; /* what the reader must know before trusting the rows */
    size_t warning_count;
};

/* Compares the base runs with the new runs. The result's rows point at the runs' names:
 * release it before the runs. */
int diff_compare(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                 int new_count, const struct diff_options *options, struct diff_result *out,
                 char *error, size_t size);
void diff_result_release(struct diff_result *result);

/* Rows that are regressions: slower, significant and beyond the threshold. */
size_t diff_regressions(const struct diff_result *result);

/* Writes the result: a text table fitted to width (0: no limit) with the checks, warnings and
 * explanations around it; every row with all = 1, else the changes, the NVTX ranges and the
 * whole-run figures; CSV (one line per row, every field; checks and warnings are the caller's
 * to put on stderr) or JSON (everything). Returns 0, or -EIO if a write
 * failed (-ENOMEM: out of memory). */
int diff_write(const struct diff_result *result, enum table_format format, int width, int all,
               FILE *out);
/* Writes the checks and warnings as text lines ("Checks:" ...), for CSV's stderr. */
int diff_write_checks(const struct diff_result *result, FILE *out);
/* Writes the self-contained HTML page. Returns 0, or -EIO if a write failed. */
int diff_write_html(const struct diff_result *result, FILE *out);

#endif
