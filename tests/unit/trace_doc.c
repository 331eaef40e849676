/* docs/trace-format.md's record tables, generated from src/trace/records.def (through the
 * description table in records.h). Between each pair of markers
 *   <!-- records FIRST-LAST: generated from src/trace/records.def -->
 *   <!-- end records -->
 * the doc holds the table of record types FIRST..LAST. `trace_doc FILE` fails, saying how to
 * fix it, when a table differs (ctest trace_format_doc); `trace_doc FILE --update` rewrites
 * them (cmake --build build --target trace-format-doc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/records.h"

#define BEGIN_MARK "<!-- records "
#define END_MARK "<!-- end records -->"

struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t len)
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

static void text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

static void put_table(struct text *t, unsigned first, unsigned last)
{
    text_str(t, "| type | record | fields | what |\n|---|---|---|---|\n");
    for (size_t i = 0; i < trace_record_spec_count; i++) {
        const struct trace_record_spec *r = &trace_record_specs[i];
        if (r->type < first || r->type > last)
            continue;
        char head[128];
        snprintf(head, sizeof head, "| %u | `%s` | ", r->type, r->name);
        text_str(t, head);
        for (size_t k = 0; k < r->field_count; k++) {
            const struct trace_field_spec *f = &r->fields[k];
            text_str(t, k ? ", " : "");
            text_str(t, f->kind);
            text_str(t, " ");
            text_str(t, f->name);
            if (*f->doc) {
                text_str(t, " (");
                text_str(t, f->doc);
                text_str(t, ")");
            }
        }
        text_str(t, " | ");
        text_str(t, r->doc);
        text_str(t, " |\n");
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct text t = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        text_add(&t, chunk, n);
    fclose(f);
    if (!t.p)
        text_add(&t, "", 0);
    *len = t.len;
    return t.p;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "--update") != 0) || argc > 3) {
        fprintf(stderr, "usage: trace_doc docs/trace-format.md [--update]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t len;
    char *doc = read_file(path, &len);
    if (!doc) {
        fprintf(stderr, "lantern: cannot read '%s'\n", path);
        return 2;
    }
    struct text out = {0};
    int tables = 0, rc = 1;
    const char *p = doc, *end = doc + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        text_add(&out, p, (size_t)(next - p));
        unsigned first, last;
        if (strncmp(p, BEGIN_MARK, strlen(BEGIN_MARK)) == 0 &&
            sscanf(p + strlen(BEGIN_MARK), "%u-%u", &first, &last) == 2) {
            const char *close = strstr(next, END_MARK);
            if (!close) {
                fprintf(stderr, "lantern: %s: a records table has no '%s'\n", path, END_MARK);
                goto done;
            }
            put_table(&out, first, last);
            tables++;
            next = close;
        }
        p = next;
    }
    if (tables == 0) {
        fprintf(stderr, "lantern: %s: no '%s' marker\n", path, BEGIN_MARK);
        goto done;
    }
    if (out.len == len && memcmp(out.p, doc, len) == 0) {
        rc = 0;
    } else if (argc == 3) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        int ok = f && fwrite(out.p, 1, out.len, f) == out.len;
        if (f && fclose(f) != 0)
            ok = 0;
        if (ok && rename(tmp, path) == 0) {
            printf("updated %s (%d tables)\n", path, tables);
            rc = 0;
        } else {
            fprintf(stderr, "lantern: cannot write '%s'\n", path);
        }
    } else {
        fprintf(stderr,
                "lantern: %s: the record tables differ from src/trace/records.def; regenerate "
                "them with: cmake --build build --target trace-format-doc\n",
                path);
    }
done:
    free(out.p);
    free(doc);
    return rc;
}
