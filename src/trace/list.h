/* Comma-separated lists of names, parsed the same way wherever they are read: the -t list the
 * launcher checks (src/launcher/trace_list.c) and hands the agent as LANTERN_TRACE
 * (src/agent/agent.c), and LANTERN_CUDA_KINDS (src/agent/cupti.c). No allocation: the agent
 * reads them inside the profiled program. */
#ifndef LANTERN_TRACE_LIST_H
#define LANTERN_TRACE_LIST_H

#include <stddef.h>

/* Whether list holds name as one whole item ("nvtx,cuda" holds "cuda", not "cud"). A NULL
 * list holds nothing. */
int trace_list_has(const char *list, const char *name);

/* Whether every item of list (not NULL) is one of names[0..count). An empty item is none of
 * them: "", "nvtx," and "nvtx,,cuda" are not within any names. */
int trace_list_within(const char *list, const char *const *names, size_t count);

#endif
