/* Comma-separated lists of names (see list.h). */
#include "trace/list.h"

#include <string.h>

/* Whether the item of len bytes at p is name. */
static int item_is(const char *p, size_t len, const char *name)
{
    return strlen(name) == len && strncmp(p, name, len) == 0;
}

int trace_list_has(const char *list, const char *name)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (item_is(p, len, name))
            return 1;
        p = p[len] ? p + len + 1 : NULL;
    }
    return 0;
}

int trace_list_within(const char *list, const char *const *names, size_t count)
{
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ","), i = 0;
        while (i < count && !item_is(p, len, names[i]))
            i++;
        if (i == count)
            return 0;
        p += len;
        if (!*p)
            return 1;
    }
}
