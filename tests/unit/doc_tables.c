/* doc_tables.h: read the doc, copy it with every generated table written afresh, then compare
 * or rename the copy over it. */
#include "unit/doc_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void doc_text_add(struct doc_text *t, const char *s, size_t len)
{
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p)
            abort();
    }
    memcpy(t->p + t->len, s, len);
    t->len += len;
    t->p[t->len] = '\0';
}

void doc_text_str(struct doc_text *t, const char *s)
{
    doc_text_add(t, s, strlen(s));
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct doc_text t = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        doc_text_add(&t, chunk, n);
    fclose(f);
    if (!t.p)
        doc_text_add(&t, "", 0);
    *len = t.len;
    return t.p;
}

/* The doc with its tables generated into out: how many, or -1 (said) when one is not closed. */
static int generate(const struct doc_tables *tables, const char *path, const char *doc, size_t len,
                    struct doc_text *out)
{
    int count = 0;
    const char *p = doc, *end = doc + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        doc_text_add(out, p, (size_t)(next - p));
        struct doc_text table = {0};
        char *line = strncmp(p, tables->begin, strlen(tables->begin)) == 0
                         ? strndup(p, (size_t)((nl ? nl : end) - p))
                         : NULL;
        if (line && tables->put(&table, line) == 0) {
            const char *close = strstr(next, tables->end);
            if (!close) {
                fprintf(stderr, "lantern: %s: a table has no '%s'\n", path, tables->end);
                free(table.p);
                free(line);
                return -1;
            }
            if (table.p)
                doc_text_add(out, table.p, table.len);
            count++;
            next = close;
        }
        free(table.p);
        free(line);
        p = next;
    }
    return count;
}

static int write_file(const char *path, const struct doc_text *out)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(out->p, 1, out->len, f) == out->len;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* 0 when the doc is as generated or was rewritten with it (update), else 1 (said). */
static int compare_or_update(const struct doc_tables *tables, const char *path, const char *doc,
                             size_t len, const struct doc_text *out, int count, int update)
{
    if (out->len == len && memcmp(out->p, doc, len) == 0)
        return 0;
    if (!update) {
        fprintf(stderr,
                "lantern: %s: the generated tables differ from %s; regenerate them with: "
                "cmake --build build --target %s\n",
                path, tables->source, tables->target);
        return 1;
    }
    if (write_file(path, out) < 0) {
        fprintf(stderr, "lantern: cannot write '%s'\n", path);
        return 1;
    }
    printf("updated %s (%d table%s)\n", path, count, count == 1 ? "" : "s");
    return 0;
}

int doc_tables_main(int argc, char **argv, const struct doc_tables *tables)
{
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "--update") != 0) || argc > 3) {
        fprintf(stderr, "usage: %s [--update]\n", tables->usage);
        return 2;
    }
    const char *path = argv[1];
    size_t len;
    char *doc = read_file(path, &len);
    if (!doc) {
        fprintf(stderr, "lantern: cannot read '%s'\n", path);
        return 2;
    }
    struct doc_text out = {0};
    int count = generate(tables, path, doc, len, &out), rc = 1;
    if (count == 0)
        fprintf(stderr, "lantern: %s: no '%s' marker\n", path, tables->begin);
    else if (count > 0)
        rc = compare_or_update(tables, path, doc, len, &out, count, argc == 3);
    free(doc);
    free(out.p);
    return rc;
}
