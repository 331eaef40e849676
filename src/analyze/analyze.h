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

#include "analyze/rule.h"
#include "output/table.h"

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
 * Returns 0, -EINVAL with *bad_rule pointing at the first unknown name (inside list), or another
 * negative errno (-ENOMEM, -EIO; never -EINVAL) with error set. Release the run in every case. */
int analyze_run(sqlite3 *db, const char *list, unsigned flags, struct analyze_run *run,
                const char **bad_rule, char *error, size_t error_size);
void analyze_run_release(struct analyze_run *run);

/* The findings of a run, most costly first (pointers into run; free the array). */
struct analyze_ranked {
    const struct analyze_result *result;
    const struct analyze_finding *finding;
};
struct analyze_ranked *analyze_rank(const struct analyze_run *run, size_t *count);

/* How a text analysis is written: its tables fitted into width columns (0: no limit), and with
 * details each finding's advice and evidence and every rule after the ranked summary; for a
 * terminal (CSV: control characters escaped, table.h). */
struct analyze_write_options {
    int width, details, terminal;
};
/* Prints a run: text (the findings most costly first, one line each; opt), CSV (one line per
 * evidence row) or JSON (the ranking, then rules > findings > evidence). */
int analyze_write(const struct analyze_run *run, enum table_format format,
                  const struct analyze_write_options *opt, FILE *out);

#endif
