/* A demangled kernel name's start and base name (kernel_name.h): one walk over the name that
 * tracks template brackets, ABI tags, lambdas' braces and "(anonymous namespace)", which is
 * part of a name, not a parameter list. */
#include "output/kernel_name.h"

#include <string.h>

static const char anonymous_namespace[] = "(anonymous namespace)";

/* Length of "(anonymous namespace)" at p, or 0. */
static size_t anonymous_at(const char *p)
{
    size_t n = sizeof anonymous_namespace - 1;
    return strncmp(p, anonymous_namespace, n) == 0 ? n : 0;
}

const char *kernel_name_start(const char *name)
{
    int depth = 0;
    const char *start = name;
    for (const char *p = name; *p; p++) {
        size_t anonymous = anonymous_at(p);
        if (anonymous)
            p += anonymous - 1;
        else if (*p == '<' || *p == '[') /* [...]: an ABI tag, or a name such as "[CUDA memset]" */
            depth++;
        else if (*p == '>' || *p == ']')
            depth--;
        else if (*p == '(' && depth == 0)
            break;
        else if (*p == ' ' && depth == 0)
            start = p + 1;
    }
    return start;
}

const char *kernel_name_parameters(const char *start)
{
    int depth = 0;
    const char *p = start;
    for (; *p; p++) {
        size_t anonymous = anonymous_at(p);
        if (anonymous)
            p += anonymous - 1;
        else if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (*p == '(' && depth == 0)
            break;
    }
    return p;
}

char *kernel_name_base(const char *name, char *out, size_t size)
{
    if (size == 0)
        return out;
    /* a return type only before a parameter list: "step 3 of train" is a name as it is */
    const char *p = *kernel_name_parameters(name) ? kernel_name_start(name) : name;
    const char *base = p, *end = NULL;
    int depth = 0; /* inside <...>, [...] or {...} */
    for (; *p; p++) {
        size_t anonymous = depth == 0 ? anonymous_at(p) : 0;
        if (anonymous) {
            p += anonymous - 1;
        } else if (*p == '<' || *p == '[' || *p == '{') {
            if (depth++ == 0 && !end)
                end = p; /* template arguments or an ABI tag end the base name */
        } else if (*p == '>' || *p == ']' || *p == '}') {
            depth--;
        } else if (depth == 0 && *p == '(') {
            break;
        } else if (depth == 0 && p[0] == ':' && p[1] == ':') {
            base = p + 2; /* a namespace or class before it */
            end = NULL;
            p++;
        }
    }
    if (!end)
        end = p;
    if (end <= base) /* nothing C++ to strip: "[CUDA memcpy Host-to-Device]" */
        base = name, end = name + strlen(name);
    size_t n = (size_t)(end - base) < size - 1 ? (size_t)(end - base) : size - 1;
    memcpy(out, base, n);
    out[n] = '\0';
    return out;
}
