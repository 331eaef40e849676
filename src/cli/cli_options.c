/* The one option parser of the subcommands (cli_options.h): a command's rows become
 * getopt_long's tables, each option found is handed to its row's setter, and the help's option
 * lines are printed from the same rows. */
#include "cli/cli_options.h"
#include "cli/cli.h"
#include "output/fit.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_OPTIONS 64
#define CLI_ROW_IS_END(row) (!(row)->help && !(row)->help_text)
#define CLI_LONG_ONLY 256 /* getopt's code of row i without a short flag: CLI_LONG_ONLY + i */

static void *field_of(void *options, const struct cli_option *row)
{
    return (char *)options + row->offset;
}

int cli_set_flag(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    (void)cmd, (void)value;
    *(int *)field_of(options, row) = 1;
    return 0;
}

int cli_set_string(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    (void)cmd;
    *(const char **)field_of(options, row) = value;
    return 0;
}

int cli_choice_valid(const char *choices, const char *value)
{
    for (const char *c = choices; *c;) {
        size_t n = strcspn(c, "|");
        if (n >= 2 && c[n - 1] == '*' && c[n - 2] == ':') { /* "nvtx:*": nvtx:NAME */
            if (!strncmp(value, c, n - 1) && value[n - 1])
                return 1;
        } else if (strlen(value) == n && !strncmp(value, c, n)) {
            return 1;
        }
        c += n + (c[n] == '|');
    }
    return 0;
}

int cli_set_choice(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    if (!cli_choice_valid(row->choices, value))
        return cli_usage_error(cmd, "%s", row->error);
    *(const char **)field_of(options, row) = value;
    return 0;
}

int cli_set_choice_bool(const char *cmd, const struct cli_option *row, void *options,
                        const char *value)
{
    if (!cli_choice_valid(row->choices, value))
        return cli_usage_error(cmd, "%s", row->error);
    const char *last = strrchr(row->choices, '|');
    *(int *)field_of(options, row) = strcmp(value, last ? last + 1 : row->choices) == 0;
    return 0;
}

int cli_set_real(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    char *end;
    double v = strtod(value, &end);
    *(double *)field_of(options, row) = v;
    if (end == value || *end || !(v >= row->min && v <= row->max))
        return cli_usage_error(cmd, "%s", row->error);
    return 0;
}

int cli_set_unsigned(const char *cmd, const struct cli_option *row, void *options,
                     const char *value)
{
    char *end;
    unsigned long v = strtoul(value, &end, 10);
    if (end == value || *end || v < row->min || v > row->max)
        return cli_usage_error(cmd, "%s", row->error);
    *(unsigned *)field_of(options, row) = (unsigned)v;
    return 0;
}

int cli_set_width(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    char *end;
    long n = strtol(value, &end, 10);
    if (*end || end == value || n < 0 || n > 100000)
        return cli_usage_error(cmd, "width must be a number >= 0, not '%s'", value);
    *(int *)field_of(options, row) = (int)n;
    return 0;
}

int cli_set_help(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    (void)cmd, (void)row, (void)options, (void)value;
    return -1; /* not an error but "help asked": the parser prints it, the command exits 0 */
}

/* getopt_long's two tables from the rows. Returns 0, or -ENOSPC when there are too many rows. */
static int getopt_tables(const struct cli_command *c, struct option *longs, char *shorts)
{
    size_t n = 0, s = 0;
    if (c->stop_at_operand)
        shorts[s++] = '+'; /* the first operand begins the command to run */
    shorts[s++] = ':';     /* a missing value is ':', not '?' */
    for (int i = 0; !CLI_ROW_IS_END(&c->rows[i]); i++) {
        const struct cli_option *row = &c->rows[i];
        if (!row->long_name)
            continue;
        if (n == CLI_MAX_OPTIONS)
            return -ENOSPC;
        static const int has_arg[] = {[CLI_ARG_NONE] = no_argument,
                                      [CLI_ARG_REQUIRED] = required_argument,
                                      [CLI_ARG_OPTIONAL] = optional_argument};
        longs[n++] = (struct option){row->long_name, has_arg[row->arg], NULL,
                                     row->short_name ? row->short_name : CLI_LONG_ONLY + i};
        if (row->short_name) {
            shorts[s++] = row->short_name;
            if (row->arg == CLI_ARG_REQUIRED)
                shorts[s++] = ':';
        }
    }
    longs[n] = (struct option){NULL, 0, NULL, 0};
    shorts[s] = '\0';
    return 0;
}

static const struct cli_option *row_of(const struct cli_command *c, int code)
{
    for (int i = 0; !CLI_ROW_IS_END(&c->rows[i]); i++)
        if (c->rows[i].long_name &&
            (c->rows[i].short_name ? c->rows[i].short_name == code : CLI_LONG_ONLY + i == code))
            return &c->rows[i];
    return NULL;
}

int cli_options_parse(const struct cli_command *c, int argc, char **argv, void *options, int *first)
{
    struct option longs[CLI_MAX_OPTIONS + 1];
    char shorts[3 * CLI_MAX_OPTIONS + 3];
    if (getopt_tables(c, longs, shorts) < 0)
        return cli_error("%s: too many options", c->name);
    int code;
    opterr = 0;
    optind = 0; /* a fresh scan (GNU: 0 reinitializes) */
    while ((code = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const struct cli_option *row = code == ':' || code == '?' ? NULL : row_of(c, code);
        if (code == ':')
            return cli_usage_error(c->name, "option '%s' needs a value", argv[optind - 1]);
        if (!row)
            return cli_usage_error(c->name, "unknown option '%s'", argv[optind - 1]);
        int rc = row->set(c->name, row, options, optarg);
        if (rc == -1) /* -h */
            cli_options_print_help(c);
        if (rc)
            return rc;
    }
    *first = optind;
    return 0;
}

/* One row's lines: "  -o, --output FILE" then its text from c->column (two blanks after a
 * longer left column), the text's further lines indented to the column. */
static void help_row(const struct cli_command *c, const struct cli_option *row, FILE *out)
{
    char left[160], flag[8] = "";
    const char *usage = row->usage ? row->usage : "";
    if (row->short_name)
        snprintf(flag, sizeof flag, "-%c, ", row->short_name);
    else if (c->short_slot)
        snprintf(flag, sizeof flag, "    ");
    if (row->long_name)
        snprintf(left, sizeof left, "  %s--%s%s%s", flag, row->long_name,
                 *usage && *usage != '=' && *usage != '[' ? " " : "", usage);
    else
        snprintf(left, sizeof left, "  %s%s", c->short_slot ? "    " : "", usage);
    int len = (int)strlen(left);
    fprintf(out, "%s%*s", left, len < c->column ? c->column - len : 2, "");
    const char *text = row->help_text ? row->help_text() : row->help;
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(out, "%.*s\n", (int)n, line);
        line += n + (line[n] == '\n');
        if (*line)
            fprintf(out, "%*s", c->column, "");
    }
}

void cli_options_help(const struct cli_command *c, FILE *out)
{
    c->help_head(out);
    for (int i = 0; !CLI_ROW_IS_END(&c->rows[i]); i++)
        help_row(c, &c->rows[i], out);
    if (c->help_tail)
        c->help_tail(out);
}

static const struct cli_command *help_shown; /* output_print_wrapped takes no context */

static void print_shown_help(FILE *out)
{
    cli_options_help(help_shown, out);
}

void cli_options_print_help(const struct cli_command *c)
{
    help_shown = c;
    output_print_wrapped(print_shown_help, stdout);
}

/* ---- the rows the subcommands share ------------------------------------------------------ */

int cli_parse_output_options(const struct cli_command *c, int argc, char **argv,
                             const char **output, int *force, int *first)
{
    struct cli_output_args args = {0};
    int rc = cli_options_parse(c, argc, argv, &args, first);
    *output = args.output;
    *force = args.force;
    return rc;
}

int cli_parse_output_command(const struct cli_command *c, const char *what, int argc, char **argv,
                             const char **output, int *force, const char **arg)
{
    int first = 0, rc = cli_parse_output_options(c, argc, argv, output, force, &first);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (first != argc - 1)
        return cli_usage_error(c->name, "expected %s", what);
    *arg = argv[first];
    return CLI_EXIT_OK;
}
