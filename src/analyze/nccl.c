/* NCCL kernel names (nccl.h). */
#include "analyze/nccl.h"

#include <ctype.h>
#include <string.h>

static const char *const nccl_prefixes[] = {"ncclDevKernel_", "ncclKernel_"};

int nccl_collective(const char *name, char *out, size_t size)
{
    if (!name || size == 0)
        return 0;
    if (strncmp(name, "void ", 5) == 0) /* a demangled return type */
        name += 5;
    size_t ident = strlen(name);
    if (name[0] == '_' && name[1] == 'Z') { /* mangled: _Z, the name's length, the name */
        name += 2;
        if (!isdigit((unsigned char)*name))
            return 0;
        ident = 0;
        while (isdigit((unsigned char)*name) && ident < 4096)
            ident = ident * 10 + (size_t)(*name++ - '0');
        if (strnlen(name, ident) < ident)
            return 0;
    }
    for (size_t i = 0; i < sizeof nccl_prefixes / sizeof nccl_prefixes[0]; i++) {
        size_t len = strlen(nccl_prefixes[i]);
        if (ident <= len || strncmp(name, nccl_prefixes[i], len) != 0)
            continue;
        const char *type = name + len;
        size_t n = strcspn(type, "_(<");
        if (n > ident - len) /* the mangled name's parameters follow the name at once */
            n = ident - len;
        if (n == 0 || n >= size)
            return 0;
        memcpy(out, type, n);
        out[n] = '\0';
        return 1;
    }
    return 0;
}
