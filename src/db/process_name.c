/* A process's short name from its command line, as its user would call it: the program's
 * base name, or for an interpreter the script it runs (`python3 train.py` -> `train.py`,
 * `python -m pkg` -> `pkg`, `bash -c ...` -> `bash -c`), a package's `__main__.py` by its
 * package (`.../site-packages/torch/_inductor/compile_worker/__main__.py` ->
 * `torch._inductor.compile_worker`), multiprocessing's `python -c 'from multiprocessing.spawn
 * import ...'` by its module. Stored in processes.name. */
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

/* A package run by its __main__.py, named as `python -m` would name it: the folders after
 * site-packages (or dist-packages), else the folder holding it. */
static size_t package_name(const char *path, char *out, size_t cap)
{
    const char *end = strrchr(path, '/'), *from = path;
    if (!end || end == path)
        return copy_out(out, cap, base_name(path), NULL);
    for (const char *p = path; (p = strstr(p, "-packages/")) && p < end; p++)
        from = p + strlen("-packages/"); /* the last site-packages or dist-packages */
    if (from == path) {                  /* no site-packages: the folder that holds __main__.py */
        from = end - 1;
        while (from > path && from[-1] != '/')
            from--;
    }
    size_t n = 0;
    for (const char *p = from; p < end && n + 1 < cap; p++)
        out[n++] = *p == '/' ? '.' : *p;
    if (cap)
        out[n] = '\0';
    return n;
}

/* The name of a script an interpreter runs. */
static size_t script_name(const char *path, char *out, size_t cap)
{
    if (!strcmp(base_name(path), "__main__.py"))
        return package_name(path, out, cap);
    return copy_out(out, cap, base_name(path), NULL);
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
        if (python && strcmp(a, "-c") == 0 && i + 1 < argc &&
            !strncmp(argv[i + 1], "from multiprocessing.", 21)) {
            size_t n = strcspn(argv[i + 1] + 5, " ;"); /* the module: multiprocessing.spawn */
            return copy_out(out, cap < n + 1 ? cap : n + 1, argv[i + 1] + 5, NULL);
        }
        if (strcmp(a, "-c") == 0 || (!python && strcmp(a, "-e") == 0))
            return copy_out(out, cap, prog, strcmp(a, "-c") == 0 ? " -c" : " -e");
        if (strcmp(a, "--") == 0)
            return i + 1 < argc ? script_name(argv[i + 1], out, cap)
                                : copy_out(out, cap, prog, NULL);
        if (python && (strcmp(a, "-W") == 0 || strcmp(a, "-X") == 0 ||
                       strcmp(a, "--check-hash-based-pycs") == 0)) {
            i++; /* the option's value */
            continue;
        }
        if (a[0] == '-' && a[1])
            continue;
        if (a[0] == '-') /* "-": stdin */
            return copy_out(out, cap, prog, NULL);
        return script_name(a, out, cap);
    }
    return copy_out(out, cap, prog, NULL);
}
