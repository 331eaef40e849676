/* A process's short name from its command line, as its user would call it: the program's
 * base name, or for an interpreter the script it runs (`python3 train.py` -> `train.py`,
 * `python -m pkg` -> `pkg`, `bash -c ...` -> `bash -c`). Stored in processes.name. */
#include "db/import.h"

#include <string.h>

/* Interpreters whose first operand is the program, and those among them (Python) whose
 * options -W and -X take the next argument. */
static const char *const interpreters[] = {"python",  "pypy",  "bash", "sh",   "dash",
                                           "zsh",     "ksh",   "perl", "ruby", "node",
                                           "Rscript", "julia", "lua",  NULL};

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "python3.12" is python; "pythonista" is not: the interpreter's name, then digits, dots
 * and an ABI letter or 'w' at most. */
static int is_interpreter(const char *base, int *python)
{
    for (const char *const *p = interpreters; *p; p++) {
        size_t len = strlen(*p);
        if (strncmp(base, *p, len) != 0)
            continue;
        const char *rest = base + len;
        while ((*rest >= '0' && *rest <= '9') || *rest == '.')
            rest++;
        if (*rest == 'w' || *rest == 'd' || *rest == 'm' || *rest == 't')
            rest++;
        if (*rest)
            continue;
        *python = strcmp(*p, "python") == 0 || strcmp(*p, "pypy") == 0;
        return 1;
    }
    return 0;
}

static size_t copy_out(char *out, size_t cap, const char *a, const char *b)
{
    size_t n = 0;
    for (const char *s = a; s && *s && n + 1 < cap; s++)
        out[n++] = *s;
    for (const char *s = b; s && *s && n + 1 < cap; s++)
        out[n++] = *s;
    if (cap)
        out[n] = '\0';
    return n;
}

size_t import_process_name(const char *args, size_t len, char *out, size_t cap)
{
    const char *argv[64];
    int argc = 0;
    for (size_t i = 0; i < len && argc < 64; i += strnlen(args + i, len - i) + 1)
        argv[argc++] = args + i; /* the caller guarantees a NUL after the last argument */
    if (argc == 0 || !*argv[0])
        return copy_out(out, cap, NULL, NULL);
    const char *prog = base_name(argv[0]);
    int python = 0;
    if (!is_interpreter(prog, &python))
        return copy_out(out, cap, prog, NULL);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (python && strncmp(a, "-m", 2) == 0)
            return copy_out(out, cap, a[2] ? a + 2 : (i + 1 < argc ? argv[i + 1] : prog), NULL);
        if (strcmp(a, "-c") == 0 || (!python && strcmp(a, "-e") == 0))
            return copy_out(out, cap, prog, strcmp(a, "-c") == 0 ? " -c" : " -e");
        if (strcmp(a, "--") == 0)
            return copy_out(out, cap, i + 1 < argc ? base_name(argv[i + 1]) : prog, NULL);
        if (python && (strcmp(a, "-W") == 0 || strcmp(a, "-X") == 0 ||
                       strcmp(a, "--check-hash-based-pycs") == 0)) {
            i++; /* the option's value */
            continue;
        }
        if (a[0] == '-' && a[1])
            continue;
        return copy_out(out, cap, a[0] == '-' ? prog : base_name(a), NULL); /* "-": stdin */
    }
    return copy_out(out, cap, prog, NULL);
}
