/* docs/trace-format.md's record tables, generated from src/trace/records.def (through the
 * description table in records.h). Between each pair of markers
 *   <!-- records FIRST-LAST: generated from src/trace/records.def -->
 *   <!-- end records -->
 * the doc holds the table of record types FIRST..LAST. `trace_doc FILE` fails, saying how to
 * fix it, when a table differs (ctest trace_format_doc); `trace_doc FILE --update` rewrites
 * them (cmake --build build --target trace-format-doc); unit/doc_tables.c does both. */
#include <stdio.h>
#include <string.h>

#include "trace/records.h"
#include "unit/doc_tables.h"

/* The table of record types FIRST..LAST, for "<!-- records FIRST-LAST: ..." */
static int put_table(struct doc_text *t, const char *line)
{
    unsigned first, last;
    if (sscanf(line, "<!-- records %u-%u", &first, &last) != 2)
        return -1;
    doc_text_str(t, "| type | record | fields | what |\n|---|---|---|---|\n");
    for (size_t i = 0; i < trace_record_spec_count; i++) {
        const struct trace_record_spec *r = &trace_record_specs[i];
        if (r->type < first || r->type > last)
            continue;
        char head[128];
        snprintf(head, sizeof head, "| %u | `%s` | ", r->type, r->name);
        doc_text_str(t, head);
        for (size_t k = 0; k < r->field_count; k++) {
            const struct trace_field_spec *f = &r->fields[k];
            doc_text_str(t, k ? ", " : "");
            doc_text_str(t, f->kind);
            doc_text_str(t, " ");
            doc_text_str(t, f->name);
            if (*f->doc) {
                doc_text_str(t, " (");
                doc_text_str(t, f->doc);
                doc_text_str(t, ")");
            }
        }
        doc_text_str(t, " | ");
        doc_text_str(t, r->doc);
        doc_text_str(t, " |\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct doc_tables tables = {
        .usage = "trace_doc docs/trace-format.md",
        .begin = "<!-- records ",
        .end = "<!-- end records -->",
        .source = "src/trace/records.def",
        .target = "trace-format-doc",
        .put = put_table,
    };
    return doc_tables_main(argc, argv, &tables);
}
