/* The docs tables of `lantern profile`'s options and of the agent's environment, generated from
 * their rows: between
 *   <!-- generated from src/launcher/profile_options.def: profile's options -->   (README.md)
 *   <!-- generated from src/trace/environment.def: the agent's environment -->
 * (docs/architecture.md) and the next
 *   <!-- end generated -->
 * `options_doc FILE` fails, saying how to fix it, when a table differs (ctests options_doc_*);
 * `options_doc FILE --update` rewrites it (cmake --build build --target options-doc);
 * unit/doc_tables.c does both. A variable a profile option sets names the option in its
 * "set by" cell. */
#include <stdio.h>
#include <string.h>

#include "trace/environment.h"
#include "unit/doc_tables.h"

/* The rows' columns the docs show. */
static const struct option_doc {
    char short_flag;
    const char *long_flag, *usage;
    enum trace_env variable; /* TRACE_ENV_COUNT: none */
    const char *doc;         /* NULL: not in the table (-h) */
} options[] = {
#define ENV(id, render) TRACE_ENV_##id
#define ENV_EARLY(id, render) TRACE_ENV_##id
#define NO_ENV TRACE_ENV_COUNT
#define PROFILE_OPTION(source, short_flag, long_flag, argument, value_name, check, field, env,     \
                       help_text, doc)                                                             \
    {short_flag, long_flag, value_name, env, doc},
#include "launcher/profile_options.def"
};

/* Text with the table cell's '|' escaped. */
static void cell(struct doc_text *t, const char *s)
{
    for (; *s; s++)
        doc_text_str(t, *s == '|' ? "\\|" : (char[]){*s, '\0'});
}

/* "-o, --output FILE", "--sample=cpu|none", a help-only line's text itself */
static void flag(struct doc_text *t, const struct option_doc *o)
{
    char text[160], short_flag[8] = "";
    const char *usage = o->usage ? o->usage : "";
    if (o->short_flag)
        snprintf(short_flag, sizeof short_flag, "-%c, ", o->short_flag);
    if (!o->long_flag)
        snprintf(text, sizeof text, "%s", usage);
    else
        snprintf(text, sizeof text, "%s--%s%s%s", short_flag, o->long_flag,
                 *usage && *usage != '=' && *usage != '[' ? " " : "", usage);
    doc_text_str(t, "`");
    cell(t, text);
    doc_text_str(t, "`");
}

static void put_options(struct doc_text *t)
{
    doc_text_str(t, "| option | meaning |\n|---|---|\n");
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        if (!options[i].doc)
            continue;
        doc_text_str(t, "| ");
        flag(t, &options[i]);
        doc_text_str(t, " | ");
        doc_text_str(t, options[i].doc);
        doc_text_str(t, " |\n");
    }
}

static void put_environment(struct doc_text *t)
{
    doc_text_str(t, "| variable | set by | meaning |\n|---|---|---|\n");
    for (int id = 0; id < TRACE_ENV_COUNT; id++) {
        const struct trace_env_var *v = &trace_env_vars[id];
        doc_text_str(t, "| `");
        doc_text_str(t, v->name);
        doc_text_str(t, "` | ");
        doc_text_str(t, v->set_by);
        for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
            if ((int)options[i].variable == id) {
                doc_text_str(t, ", with `--");
                doc_text_str(t, options[i].long_flag);
                doc_text_str(t, "`");
            }
        doc_text_str(t, " | ");
        doc_text_str(t, v->meaning);
        doc_text_str(t, " |\n");
    }
}

static int put_table(struct doc_text *t, const char *line)
{
    if (strstr(line, "src/launcher/profile_options.def"))
        put_options(t);
    else if (strstr(line, "src/trace/environment.def"))
        put_environment(t);
    else
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct doc_tables tables = {
        .usage = "options_doc README.md|docs/architecture.md",
        .begin = "<!-- generated from src/",
        .end = "<!-- end generated -->",
        .source = "src/launcher/profile_options.def and src/trace/environment.def",
        .target = "options-doc",
        .put = put_table,
    };
    return doc_tables_main(argc, argv, &tables);
}
