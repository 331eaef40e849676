/* The writers of `lantern kernels` (kernels_output.c): text, CSV or JSON of the chosen columns. */
#ifndef LANTERN_MODEL_KERNELS_OUTPUT_H
#define LANTERN_MODEL_KERNELS_OUTPUT_H

#include <stdio.h>

#include "model/kernels_internal.h"

struct kernels_options;
/* Returns 0 or the number of columns left out (drop_columns), or a negative errno. */
int kernels_output_write(const struct kernels_rows *rows, const struct kernels_options *opt,
                         FILE *out);

#endif
