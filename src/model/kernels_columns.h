/* The columns of `lantern kernels` (kernels_columns.c): a row's value in a column as text,
 * and the -c list parsed into columns; kernels_output.c writes them. */
#ifndef LANTERN_MODEL_KERNELS_COLUMNS_H
#define LANTERN_MODEL_KERNELS_COLUMNS_H

#include <stddef.h>

#include "model/kernels_internal.h"

#define KERNELS_FIELD_SIZE 512 /* a field's text is cut to fit */
#define KERNELS_MAX_COLUMNS 64 /* a -c list longer than this is refused */

/* One row's value in one column, as text. */
struct kernels_field {
    char text[KERNELS_FIELD_SIZE];
    int is_number; /* JSON: unquoted */
    int is_null;   /* "na" / null */
};

struct kernels_column {
    const char *name;
    const char *help;
    int width;    /* text format: minimum width; numbers are right-aligned to it */
    int flexible; /* text column: sized to its longest value, truncated by -w */
    void (*fn)(const struct kernels_row *row, size_t idx, struct kernels_field *f);
};

/* Splits a -c list into columns, adding hints with add_hints; returns the count, or -EINVAL
 * with *bad pointing at the unknown name (a static copy). */
int kernels_columns_select(const char *list, int add_hints, const struct kernels_column **out,
                           const char **bad);

/* Formats row number idx's value of column c into f. */
static inline void kernels_column_fill(const struct kernels_column *c,
                                       const struct kernels_row *row, size_t idx,
                                       struct kernels_field *f)
{
    f->is_number = f->is_null = 0;
    f->text[0] = '\0';
    c->fn(row, idx, f);
}

#endif
