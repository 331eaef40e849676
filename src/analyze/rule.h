/* The interface between `lantern analyze` and its rules: what a rule is given (the session
 * context), what it returns (findings with evidence rows) and the rule's row in the table.
 * analyze.h is the public side (run, rank, write); findings.h the helpers rules use. */
#ifndef LANTERN_ANALYZE_RULE_H
#define LANTERN_ANALYZE_RULE_H

#include <sqlite3.h>
#include <stdint.h>

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

struct analyze_host;

struct analyze_finding {
    char *summary;      /* one line: what was seen */
    const char *advice; /* one line: what to do (static text, or the host's: host->advice) */
    double cost_ns;     /* time that could be saved (an estimate, docs/analyze.md) */
    double cost_j;      /* energy that could be saved, J; -1 when the rule does not say */
    int64_t count;      /* occurrences behind the finding (copies, calls, gaps, ...) */
    struct analyze_evidence evidence[ANALYZE_MAX_EVIDENCE];
    int evidence_count;
    struct analyze_host *host; /* what the host did meanwhile (host_activity.h); NULL: the
                                * session has no CPU sampling, or the rule does not say */
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
    struct analyze_cpu *cpu;           /* the CPU samples, loaded by the first rule that needs them */
    char error[256];
};

struct analyze_rule {
    const char *name;      /* "pageable_memcpy" */
    const char *looks_for; /* what it looks for */
    const char *threshold; /* when it reports, in words */
    const char *advice;    /* the default advice of its findings */
    int (*run)(struct analyze_ctx *ctx, struct analyze_result *res); /* 0, or -errno with error (-ENOMEM, -EIO) */
};

#endif
