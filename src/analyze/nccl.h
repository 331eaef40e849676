/* NCCL's kernels recognised by name, for the cross-rank rules: NCCL launches one kernel per
 * collective on each rank's GPU, named after the collective
 * (ncclDevKernel_AllReduce_Sum_f32_RING_LL since NCCL 2.19, ncclKernel_AllReduce_RING_LL_Sum_float
 * before), so the kernel name alone says which collective a rank took part in. */
#ifndef LANTERN_ANALYZE_NCCL_H
#define LANTERN_ANALYZE_NCCL_H

#include <stddef.h>

/* SQL LIKE patterns that every NCCL kernel name matches (plain, demangled or mangled): a cheap
 * filter over strings before nccl_collective checks each candidate. */
#define NCCL_NAME_FILTER                                                                           \
    "(value LIKE '%ncclDevKernel\\_%' ESCAPE '\\' OR value LIKE '%ncclKernel\\_%' ESCAPE '\\')"

/* Whether name is an NCCL kernel's, plain ("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), demangled
 * ("ncclDevKernel_AllReduce_...(ncclDevComm*, unsigned long, ncclWork*)", "void ncclKernel_...")
 * or mangled ("_Z38ncclDevKernel_..."): 1 with the collective ("AllReduce", "SendRecv",
 * "Generic", ...) in out, else 0. */
int nccl_collective(const char *name, char *out, size_t size);

#endif
