/* What the files of src/diff/ share: a run as loaded (its series of values by row), what it
 * says about where it ran (for the checks), and the steps diff_compare calls in order:
 * diff_load.c reads the runs, diff_compare.c matches and tests the rows, diff_explain.c
 * explains the ranges that changed, diff_checks.c compares the runs' conditions. */
#ifndef LANTERN_DIFF_INTERNAL_H
#define LANTERN_DIFF_INTERNAL_H

#include "common/index_map.h"
#include "diff/diff.h"

/* One row's values in one run: every instance's (sorted ascending once loaded), or one value
 * for the whole run (single). */
struct diff_series {
    enum diff_kind kind;
    enum diff_unit unit;
    char *scope, *name;
    double *v;
    size_t n, cap;
    int single;
    int64_t domain_id, name_id; /* ranges: their ids in this run's database (diff_explain.c) */
};

/* Where and how a run ran, as its database says (diff_checks.c). Strings are NULL when not
 * recorded. */
struct diff_facts {
    char *command, *lantern_version, *host;
    char *gpus;           /* "NVIDIA H100 80GB HBM3" per GPU, "; "-separated */
    char *gpu_uuids;      /* the same GPUs' uuids */
    char *power_limits;   /* "700 W" per GPU */
    char *max_clocks;     /* the SM clock each GPU's CUDA reports, "1980 MHz" */
    double sampled_clock; /* median SM clock NVML sampled (MHz), -1: not sampled */
    double throttled;     /* share of NVML samples with a slowdown reason (%), -1: not sampled */
    unsigned throttle_reasons;
    char *losses; /* the session's Lost events line */
};

struct diff_run {
    sqlite3 *db;
    const char *path;
    struct diff_series *series;
    size_t count, cap;
    struct index_map index; /* (kind, scope, name) -> position in series */
    struct diff_facts facts;
};

/* The run's series of a row, added (empty) when new; NULL when out of memory. */
struct diff_series *diff_run_series(struct diff_run *run, enum diff_kind kind, const char *scope,
                                    const char *name);
/* The hash of a row's key, shared by the run's index and the comparison's. */
uint64_t diff_row_hash(enum diff_kind kind, const char *scope, const char *name);

int diff_facts_load(struct diff_run *run, char *error, size_t size);
void diff_facts_release(struct diff_facts *facts);

/* Adds the comparability checks and their warnings to result, whose rows are made (the
 * kernels' overlap is counted from them). 0 or -ENOMEM. */
int diff_checks(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                int new_count, struct diff_result *result);

/* Explains each slower or faster NVTX range of result: its parts and its line of text. */
int diff_explain(struct diff_run *const *base, int base_count, struct diff_run *const *new,
                 int new_count, struct diff_result *result, char *error, size_t size);

/* Adds a warning (printf-style) to result. 0 or -ENOMEM. */
int diff_warn(struct diff_result *result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "+1.250 ms", "-3.0 %", "+2.5 J": a change in the unit, with its sign, into buf. */
void diff_format_change(char *buf, size_t size, double v, enum diff_unit unit);
/* A value in its unit, without sign ("1.250 ms", "42.0 %", "2.50 J"). */
void diff_format_value(char *buf, size_t size, double v, enum diff_unit unit);
/* The row's name as shown: "k in :step" for a kernel in a range, "tensor_active of k" for a
 * metric (malloc'd; NULL when out of memory). */
char *diff_row_label(const struct diff_row *r);

#endif
