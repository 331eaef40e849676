/* `lantern kernels`: one row per GPU kernel (and memcpy/memset) with the layer and PyTorch op
 * that launched it, its shapes, FLOPs, bytes, Tensor Core use, occupancy and achieved rates
 * (docs/kernels.md). The CLI (src/cli/cmd_kernels.c) parses options and calls kernels_write;
 * `lantern stats --report kernels` runs it through stats_kernels (src/stats/kernels.c). */
#ifndef LANTERN_MODEL_KERNELS_H
#define LANTERN_MODEL_KERNELS_H

#include <sqlite3.h>
#include <stdio.h>

#include "output/table.h"

/* The report formats: text is the awk-friendly columns (the report's own "table"). */
enum kernels_format {
    KERNELS_FORMAT_TEXT = TABLE_FORMAT_TABLE,
    KERNELS_FORMAT_CSV = TABLE_FORMAT_CSV,
    KERNELS_FORMAT_JSON = TABLE_FORMAT_JSON,
};

struct kernels_options {
    const char *columns; /* "idx,op,kernel"; NULL for the default set */
    int width;           /* text format: total line width to fit (0: no limit) */
    int drop_columns;    /* text: leave out the last columns that do not fit width even cut
                          * (for a terminal; a pipe keeps every column for awk) */
    enum kernels_format format;
    int no_memops;  /* 1: kernels only, no memcpy/memset rows */
    int hints_only; /* 1: only rows with a hint, and the hints column added */
};

/* Writes the report of database db to out. Returns 0, or with drop_columns the number of
 * columns left out to fit width; -EINVAL for an unknown column name
 * (kernels_columns_check says which); -ENOMEM; -EIO when the database lacks the tables (not a
 * Lantern database, or one from another schema version). */
int kernels_write(sqlite3 *db, const struct kernels_options *opt, FILE *out);

/* What -EIO from kernels_write means, for the error line. */
#define KERNELS_NO_TABLES "no kernels tables (not a CUDA-capable Lantern database?) or output error"

/* Checks a -c list. Returns 0, or -EINVAL and points *bad at the first unknown name (a static
 * copy, valid until the next call). */
int kernels_columns_check(const char *columns, const char **bad);

/* Writes the list of columns and their meaning (for `lantern kernels -h`). */
void kernels_columns_help(FILE *out);

/* The default column lists, for the help text: without and with GPU metrics recorded. */
extern const char kernels_default_columns[];
extern const char kernels_default_columns_measured[];

#endif
