/* Attribution for `lantern kernels` (kernels_attribute.c, docs/kernels.md "Attribution"). */
#ifndef LANTERN_MODEL_KERNELS_ATTRIBUTE_H
#define LANTERN_MODEL_KERNELS_ATTRIBUTE_H

#include "model/kernels_load.h"

/* Each row's layer, op, sub-index, FLOPs, bytes and hints. 0 or -ENOMEM. */
int kernels_attribute(struct kernels_state *s);

#endif
