/* docs/trace-format.md's record tables, generated from src/trace/records.def (through the
 * description table in records.h), and its table of thread events, from src/trace/events.def
 * (events.h's). Between each pair of markers
 *   <!-- records FIRST-LAST: generated from src/trace/records.def -->
 *   <!-- end records -->
 * the doc holds the table of record types FIRST..LAST; between
 *   <!-- events: generated from src/trace/events.def -->
 *   <!-- end events -->
 * the table of events. `trace_doc FILE` fails, saying how to
 * fix it, when a table differs (ctest trace_format_doc); `trace_doc FILE --update` rewrites
 * them (cmake --build build --target trace-format-doc); unit/doc_tables.c does both. */
#include <stdio.h>
#include <string.h>

#include "trace/events.h"
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

/* One event's fields after its header, as the doc writes them. */
static void put_event_fields(struct doc_text *t, const struct trace_event_spec *e)
{
    if (!e->record) {
        doc_text_str(t, e->doc);
        return;
    }
    doc_text_str(t, e->flags & TRACE_EV_TICKS ? "" : "(no `dticks`) ");
    doc_text_str(t, e->flags & TRACE_EV_HAS_DOMAIN ? "[u domain]" : "");
    for (size_t k = 0; k < e->field_count; k++) {
        const struct trace_field_spec *f = &e->fields[k];
        if (!strcmp(f->kind, "a")) {
            doc_text_str(t, " [attributes]");
            continue;
        }
        doc_text_str(t, k || e->flags & TRACE_EV_HAS_DOMAIN ? (k ? ", " : " ") : "");
        doc_text_str(t, f->kind);
        doc_text_str(t, " ");
        doc_text_str(t, f->name);
        if (*f->doc) {
            doc_text_str(t, " (");
            doc_text_str(t, f->doc);
            doc_text_str(t, ")");
        }
    }
}

/* The table of events, for "<!-- events: ..." */
static int put_events(struct doc_text *t, const char *line)
{
    (void)line;
    doc_text_str(t, "| kind | becomes | fields after `i dticks` |\n|---|---|---|\n");
    for (size_t i = 0; i < trace_event_spec_count; i++) {
        const struct trace_event_spec *e = &trace_event_specs[i];
        char head[128];
        if (e->record)
            snprintf(head, sizeof head, "| %u | `%s` | ", e->kind, e->record);
        else
            snprintf(head, sizeof head, "| %u | (none: `%s`) | ", e->kind, e->name);
        doc_text_str(t, head);
        put_event_fields(t, e);
        doc_text_str(t, " |\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct doc_tables events = {
        .usage = "trace_doc docs/trace-format.md",
        .begin = "<!-- events: ",
        .end = "<!-- end events -->",
        .source = "src/trace/events.def",
        .target = "trace-format-doc",
        .put = put_events,
    };
    static const struct doc_tables tables = {
        .usage = "trace_doc docs/trace-format.md",
        .begin = "<!-- records ",
        .end = "<!-- end records -->",
        .source = "src/trace/records.def",
        .target = "trace-format-doc",
        .put = put_table,
    };
    int records = doc_tables_main(argc, argv, &tables);
    int events_rc = doc_tables_main(argc, argv, &events);
    return records > events_rc ? records : events_rc;
}
