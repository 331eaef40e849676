/* lantern merge: several Lantern databases (one per rank, process or host) into one, as if
 * one session had recorded them all (merge.c; docs/schema.md "Merging databases"). */
#ifndef LANTERN_DB_MERGE_H
#define LANTERN_DB_MERGE_H

#include <stddef.h>

struct merge_options {
    int force; /* replace an existing output; merge inputs of one session (a copy) */
    /* Polled between statements and inside long ones: non-zero stops the merge, which fails
     * with "interrupted". NULL: never stop. */
    int (*cancel)(void *ctx);
    void *ctx;
};

/* Merges the n databases at inputs (each already checked to be a Lantern database of this
 * schema version) into a new database at out, written as a temporary file in out's folder and
 * renamed into place when complete. An existing out, and two inputs of one session (same host,
 * start and command: a database and its copy), are refused unless opt->force. Returns 0,
 * or a negative errno (-EINTR: cancelled; -EIO for most: the reason is err's) with a one-line
 * reason (no "lantern:" prefix) in err; nothing is left behind on failure. */
int merge_databases(const char *const *inputs, size_t n, const char *out,
                    const struct merge_options *opt, char *err, size_t err_len);

#endif
