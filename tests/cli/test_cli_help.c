/* Every subcommand of the table (src/cli/commands.c) against its option rows: its --help lists
 * exactly its rows, in order (each option line is a row's flags and the first line of its
 * text; no option line is not a row's), every one has -h/--help, and a short flag means one
 * thing in every command (-f is --force wherever it is; -r is the one nsys habit of two:
 * stats --report, analyze --rule). */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static int is_end(const struct cli_option *row)
{
    return !row->help && !row->help_text;
}

/* The row's left column as the help prints it: "  -o, --output FILE", "      --stats". */
static void left_column(const struct cli_command *c, const struct cli_option *row, char *out,
                        size_t size)
{
    const char *usage = row->usage ? row->usage : "";
    const char *slot = c->short_slot ? "    " : "";
    char flag[8];
    snprintf(flag, sizeof flag, "-%c, ", row->short_name);
    if (!row->long_name)
        snprintf(out, size, "  %s%s", slot, usage);
    else
        snprintf(out, size, "  %s--%s%s%s", row->short_name ? flag : slot, row->long_name,
                 *usage && *usage != '=' && *usage != '[' ? " " : "", usage);
}

/* Whether a help line is an option line: a flag, or a row's help-only line. */
static int is_option_line(const struct cli_command *c, const char *line)
{
    if (!strncmp(line, "  -", 3) || !strncmp(line, "      --", 8))
        return 1;
    for (const struct cli_option *row = c->rows; !is_end(row); row++) {
        char left[160];
        left_column(c, row, left, sizeof left);
        if (!row->long_name && !strncmp(line, left, strlen(left)))
            return 1;
    }
    return 0;
}

static void every_help_lists_exactly_its_rows(void)
{
    for (const struct cli_subcommand *s = cli_subcommands; s->name; s++) {
        const struct cli_command *c = s->options;
        ASSERT(c != NULL);
        ASSERT_STR_EQ(c->name, s->name);
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        ASSERT(out != NULL);
        cli_options_help(c, out);
        ASSERT_EQ(fclose(out), 0);
        const struct cli_option *row = c->rows;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (!is_option_line(c, line))
                continue;
            if (is_end(row))
                fprintf(stderr, "%s: option line '%s' is no row's\n", s->name, line);
            ASSERT(!is_end(row));
            char want[512], left[160];
            const char *help = row->help_text ? row->help_text() : row->help;
            left_column(c, row, left, sizeof left);
            int pad = (int)strlen(left) < c->column ? c->column - (int)strlen(left) : 2;
            snprintf(want, sizeof want, "%s%*s%.*s", left, pad, "", (int)strcspn(help, "\n"), help);
            ASSERT_STR_EQ(line, want);
            row++;
        }
        ASSERT(is_end(row)); /* every row was listed */
        free(text);
    }
}

static void every_command_has_help(void)
{
    for (const struct cli_subcommand *s = cli_subcommands; s->name; s++) {
        int found = 0;
        for (const struct cli_option *row = s->options->rows; !is_end(row); row++)
            found |= row->short_name == 'h' && row->long_name && !strcmp(row->long_name, "help") &&
                     row->set == cli_set_help;
        ASSERT(found);
    }
}

static void a_short_flag_means_one_thing_everywhere(void)
{
    const char *meaning[128] = {0};
    for (const struct cli_subcommand *s = cli_subcommands; s->name; s++)
        for (const struct cli_option *row = s->options->rows; !is_end(row); row++) {
            if (!row->short_name || row->short_name == 'r')
                continue;
            const char **seen = &meaning[(unsigned char)row->short_name];
            if (*seen && strcmp(*seen, row->long_name))
                fprintf(stderr, "-%c is --%s in %s, --%s elsewhere\n", row->short_name,
                        row->long_name, s->name, *seen);
            ASSERT(!*seen || !strcmp(*seen, row->long_name));
            *seen = row->long_name;
        }
    ASSERT_STR_EQ(meaning['f'], "force");
    ASSERT_STR_EQ(meaning['o'], "output");
    ASSERT_STR_EQ(meaning['w'], "width");
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"every_help_lists_exactly_its_rows", every_help_lists_exactly_its_rows},
        {"every_command_has_help", every_command_has_help},
        {"a_short_flag_means_one_thing_everywhere", a_short_flag_means_one_thing_everywhere},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
