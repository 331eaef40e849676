/* `lantern analyze`: expert rules over a Lantern database. Each rule (the table in rules.c,
 * one file per rule or small family) looks for one pattern that costs time or energy and
 * returns findings: what it saw, the evidence rows (time, duration, process/thread/stream,
 * NVTX range, kernel/API name), the time that could be saved and one line of advice.
 * docs/analyze.md documents every rule, its threshold and its cost formula. The CLI
 * (src/cli/cmd_analyze.c) prints the results; `lantern report` puts them in its HTML page. */
#ifndef LANTERN_ANALYZE_ANALYZE_H
#define LANTERN_ANALYZE_ANALYZE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/table.h"

/* At most this many evidence rows per finding (the worst ones), and findings per rule: the
 * output stays readable and bounded whatever the size of the run. */
#define ANALYZE_MAX_EVIDENCE 10
#define ANALYZE_MAX_FINDINGS 20

/* One row that shows a finding: -1 (numbers) and NULL (text) where unknown. */
struct analyze_evidence {
    int64_t start_ns; /* since the session start */
    int64_t duration_ns;
    int64_t pid, tid;    /* OS ids */
    int64_t gpu, stream; /* GPU (NVML index, else CUDA ordinal) and CUPTI stream id */
    char *range;         /* innermost NVTX range, "domain:name" */
    char *name;          /* kernel, copy or CUDA API name */
    char *detail;        /* what makes the row evidence ("4.00 MB pageable HtoD, 2.3 GB/s") */
};

struct analyze_finding {
    char *summary;      /* one line: what was seen */
    const char *advice; /* one line: what to do (static text) */
    double cost_ns;     /* time that could be saved (an estimate, docs/analyze.md) */
    double cost_j;      /* energy that could be saved, J; -1 when the rule does not say */
    int64_t count;      /* occurrences behind the finding (copies, calls, gaps, ...) */
    struct analyze_evidence evidence[ANALYZE_MAX_EVIDENCE];
    int evidence_count;
};

struct analyze_rule;

/* What one rule found. */
struct analyze_result {
    const struct analyze_rule *rule;
    char *note; /* why the rule could not look, or what it could not measure; NULL */
    struct analyze_finding findings[ANALYZE_MAX_FINDINGS];
    int count;
    int64_t more; /* findings past ANALYZE_MAX_FINDINGS, left out */
};

/* The session the rules look at, shared by all of them. */
struct analyze_timeline;
/* analyze_run flags */
#define ANALYZE_PAGE                                                                               \
    0x1u /* also what the HTML page draws: each kernel name's energy, and                          \
          * per thread the coverage of its top-level ranges */

struct analyze_ctx {
    sqlite3 *db;
    unsigned flags;                    /* ANALYZE_* */
    int64_t start_ns, end_ns;          /* meta start_ns / end_ns */
    int64_t duration_ns;               /* > 0 */
    struct analyze_timeline *timeline; /* computed once, by the first rule that needs it */
    char error[256];
};

struct analyze_rule {
    const char *name;      /* "pageable_memcpy" */
    const char *looks_for; /* what it looks for */
    const char *threshold; /* when it reports, in words */
    const char *advice;    /* the default advice of its findings */
    int (*run)(struct analyze_ctx *ctx, struct analyze_result *res); /* 0, or -1 with error */
};

/* The table of rules, ended by a row of NULLs (rules.c). */
extern const struct analyze_rule analyze_rules[];
const struct analyze_rule *analyze_rule_find(const char *name);

/* Every result of one run, and the session context the rules computed (kept for the HTML
 * page, which draws the timeline pass's busy bins and energies). */
struct analyze_run {
    struct analyze_result *results;
    int count;
    int64_t duration_ns;
    struct analyze_ctx *ctx;
};

/* Runs the rules named in the comma-separated list (NULL: all) over db, with ANALYZE_* flags.
 * Returns 0, -EINVAL with *bad_rule pointing at the first unknown name (inside list), or -1 with
 * error set. Release the run in every case. */
int analyze_run(sqlite3 *db, const char *list, unsigned flags, struct analyze_run *run,
                const char **bad_rule, char *error, size_t error_size);
void analyze_run_release(struct analyze_run *run);

/* The findings of a run, most costly first (pointers into run; free the array). */
struct analyze_ranked {
    const struct analyze_result *result;
    const struct analyze_finding *finding;
};
struct analyze_ranked *analyze_rank(const struct analyze_run *run, size_t *count);

/* Prints a run: text (one section per rule), CSV (one line per evidence row) or JSON. */
int analyze_write(const struct analyze_run *run, enum table_format format, FILE *out);

#endif
