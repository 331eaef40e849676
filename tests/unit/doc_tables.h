/* A doc's generated tables, checked or rewritten: the one piece trace_doc.c (docs/trace-format.md
 * from records.def) and gpu_metrics_doc.c (docs/gpu-metrics.md from gpu_metrics.def) share.
 * Between a marker line starting with `begin` and the next `end` marker, the doc must hold
 * what the tool's put() writes for that marker line. `TOOL DOC` fails, saying how to fix it,
 * when a table differs (its ctest); `TOOL DOC --update` rewrites them (its build target). */
#ifndef LANTERN_TESTS_DOC_TABLES_H
#define LANTERN_TESTS_DOC_TABLES_H

#include <stddef.h>

/* A growing text (aborts when out of memory: a test tool). */
struct doc_text {
    char *p;
    size_t len, cap;
};

void doc_text_add(struct doc_text *t, const char *s, size_t len);
void doc_text_str(struct doc_text *t, const char *s);

struct doc_tables {
    const char *usage;  /* "trace_doc docs/trace-format.md" */
    const char *begin;  /* how a marker line starts */
    const char *end;    /* the marker that closes a table */
    const char *source; /* what the tables come from: "src/trace/records.def" */
    const char *target; /* the build target that rewrites them: "trace-format-doc" */
    /* Appends the table a marker line announces (line: the marker line, from `begin` to its
     * end of line). Returns 0, or -1 when the line announces none (it stays as it is). */
    int (*put)(struct doc_text *t, const char *line);
};

/* The tool's main: 0 when every table is as generated (or was rewritten), 1 when one differs
 * or a marker is missing, 2 on a usage or read error. */
int doc_tables_main(int argc, char **argv, const struct doc_tables *tables);

#endif
