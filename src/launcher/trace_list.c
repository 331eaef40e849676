/* The -t list's vocabulary, walked from src/trace/sources.def: the names it accepts, the
 * default, and the sources the launcher samples itself (launcher.h). No source is named here:
 * a new row of sources.def is a new -t name. */
#include "launcher/launcher.h"
#include "trace/format.h"
#include "trace/list.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const source_names[] = {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description) name,
#include "trace/sources.def"
#undef SOURCE
};

/* Appends name to list (size bytes) after sep when list is not empty. */
static void append(char *list, size_t size, const char *sep, const char *name)
{
    size_t len = strlen(list);
    snprintf(list + len, size - len, "%s%s", len ? sep : "", name);
}

const struct launcher_trace_names *launcher_trace_names(void)
{
    static struct launcher_trace_names n;
    if (n.known[0])
        return &n;
    /* The defaults list the agent's sources that need a GPU first: the order the default has
     * always had ("cuda,nvtx"), which the database keeps (meta.trace). */
    for (int gpu_pass = 1; gpu_pass >= 0; gpu_pass--) {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    if (!strcmp(where, "agent") && needs_gpu == gpu_pass && by_default) {                          \
        append(n.default_gpu, sizeof n.default_gpu, ",", name);                                    \
        if (!needs_gpu)                                                                            \
            append(n.default_no_gpu, sizeof n.default_no_gpu, ",", name);                          \
    }
#include "trace/sources.def"
#undef SOURCE
    }
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    if (!strcmp(where, "launcher"))                                                                \
        append(n.sampled, sizeof n.sampled, ", ", name);
#include "trace/sources.def"
#undef SOURCE
    for (size_t i = 0; i < sizeof source_names / sizeof source_names[0]; i++)
        append(n.known, sizeof n.known, ", ", source_names[i]);
    return &n;
}

int launcher_trace_valid(const char *list)
{
    return trace_list_within(list, source_names, sizeof source_names / sizeof source_names[0]);
}

const char *launcher_default_trace(void)
{
    const struct launcher_trace_names *n = launcher_trace_names();
    return access("/dev/nvidiactl", F_OK) == 0 ? n->default_gpu : n->default_no_gpu;
}
