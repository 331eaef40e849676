/* The subcommands' options as rows, git's parse-options way: each subcommand declares one
 * table of struct cli_option ({short, long, argument, setter, field, help}); one parser reads
 * argv by it (GNU getopt_long underneath, so permutation, unambiguous --long prefixes and
 * `--` work as they always did), and the option lines of its --help are printed from the same
 * rows. Usage errors print "lantern: ..." and "Try 'lantern <cmd> --help'." and exit 2. */
#ifndef LANTERN_CLI_OPTIONS_H
#define LANTERN_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

enum cli_arg {
    CLI_ARG_NONE,     /* a flag */
    CLI_ARG_REQUIRED, /* --name VALUE, --name=VALUE, -n VALUE, -nVALUE */
    CLI_ARG_OPTIONAL, /* --name or --name=VALUE */
};

struct cli_option;
/* Stores value (NULL for a flag or an optional argument not given) into options, the
 * command's struct; returns 0, a usage error's exit code (the error printed: cmd names the
 * command), or -1: print the help and stop (cli_set_help). */
typedef int (*cli_option_set)(const char *cmd, const struct cli_option *row, void *options,
                              const char *value);

struct cli_option {
    char short_name;       /* 'o' for -o; 0: long only */
    const char *long_name; /* "output"; NULL: a line of the help only (a positional, a spelling) */
    enum cli_arg arg;
    const char *usage; /* the help's name of the value: "FILE" (after a blank), "=cpu|none" or
                          "[=LIST]" (joined); a help-only line: its whole left column */
    cli_option_set set;
    size_t offset;    /* the field set stores into, in the command's options struct */
    const char *help; /* the help's text; lines after the first are indented under it */
    const char *(*help_text)(void); /* the text when computed (lists from other tables) */
    /* what the generic setters check (cli_set_real, cli_set_choice, ...) */
    double min, max;
    const char *choices; /* "a|b|nvtx:*": one of the words; "x:*" any x:NAME with NAME not empty */
    const char *error;   /* the usage error when the value fails the check */
};

struct cli_command {
    const char *name;              /* "stats" */
    const struct cli_option *rows; /* ended by a row of zeros */
    int stop_at_operand;           /* the first non-option ends the options (a command to run) */
    int column;                    /* where the help texts start (22) */
    int short_slot;                /* long-only flags indented as if "-x, " preceded them */
    void (*help_head)(FILE *out);  /* the help before the option lines (usage, description) */
    void (*help_tail)(FILE *out);  /* after them (NULL: nothing) */
};

/* Parses argv[1..] by the command's rows into options. Returns 0 with *first the index of the
 * first operand (argv permuted as GNU getopt does: operands last), -1 after printing the help
 * (exit 0), or a usage error's exit code. */
int cli_options_parse(const struct cli_command *c, int argc, char **argv, void *options,
                      int *first);

/* Writes the command's help: head, one line per row (with its continuations), tail. */
void cli_options_help(const struct cli_command *c, FILE *out);

/* Prints the command's help fitted to the terminal (output/fit.h), as -h does. */
void cli_options_print_help(const struct cli_command *c);

/* ---- setters ------------------------------------------------------------------------------ */

int cli_set_flag(const char *cmd, const struct cli_option *row, void *options, const char *value);
int cli_set_string(const char *cmd, const struct cli_option *row, void *options, const char *value);
/* An int field: 1 when the value is the last of row->choices, else 0 ("all|primary"); the
 * value must be one of them. */
int cli_set_choice_bool(const char *cmd, const struct cli_option *row, void *options,
                        const char *value);
/* A string field: the value, one of row->choices. */
int cli_set_choice(const char *cmd, const struct cli_option *row, void *options, const char *value);
/* A double field: a whole number text (strtod) in [row->min, row->max]. */
int cli_set_real(const char *cmd, const struct cli_option *row, void *options, const char *value);
/* An unsigned field: a decimal number (strtoul) in [row->min, row->max]. */
int cli_set_unsigned(const char *cmd, const struct cli_option *row, void *options,
                     const char *value);
/* An int field: -w/--width's N, 0 to 100000. */
int cli_set_width(const char *cmd, const struct cli_option *row, void *options, const char *value);
/* -h: the parser prints the help and returns -1. */
int cli_set_help(const char *cmd, const struct cli_option *row, void *options, const char *value);

/* Whether value is one of choices ("a|b|x:*"). */
int cli_choice_valid(const char *choices, const char *value);

/* Rows of the usual kinds: a string, a flag, -w N, a row with its own setter (offset 0: it gets
 * the whole options struct), a line of the help only, -h. */
#define CLI_STRING(s, l, u, type, field, h)                                                        \
    {                                                                                              \
        .short_name = s, .long_name = l, .arg = CLI_ARG_REQUIRED, .usage = u,                      \
        .set = cli_set_string, .offset = offsetof(type, field), .help = h                          \
    }
#define CLI_FLAG(s, l, type, field, h)                                                             \
    {                                                                                              \
        .short_name = s, .long_name = l, .arg = CLI_ARG_NONE, .set = cli_set_flag,                 \
        .offset = offsetof(type, field), .help = h                                                 \
    }
#define CLI_WIDTH(type, field, h)                                                                  \
    {                                                                                              \
        .short_name = 'w', .long_name = "width", .arg = CLI_ARG_REQUIRED, .usage = "N",            \
        .set = cli_set_width, .offset = offsetof(type, field), .help = h                           \
    }
#define CLI_CALL(s, l, a, u, fn, h)                                                                \
    {                                                                                              \
        .short_name = s, .long_name = l, .arg = a, .usage = u, .set = fn, .help = h                \
    }
#define CLI_LINE(left, h)                                                                          \
    {                                                                                              \
        .usage = left, .help = h                                                                   \
    }
#define CLI_HELP_ROW                                                                               \
    {                                                                                              \
        .short_name = 'h', .long_name = "help", .set = cli_set_help, .help = "show this help"      \
    }
#define CLI_ROWS_END                                                                               \
    {                                                                                              \
        .help = NULL                                                                               \
    }

/* -o/--output, -f/--force and -h of the subcommands that write one file (import, merge, report,
 * upgrade): their fields, and their rows with the help's words for -o and -f. */
struct cli_output_args {
    const char *output; /* NULL: not given */
    int force;
};
#define CLI_OUTPUT_ROWS(output_usage, output_help, force_help)                                     \
    CLI_STRING('o', "output", output_usage, struct cli_output_args, output, output_help),          \
        CLI_FLAG('f', "force", struct cli_output_args, force, force_help), CLI_HELP_ROW,           \
        CLI_ROWS_END

/* Parses the options CLI_OUTPUT_ROWS of a subcommand taking files after them (`merge`): sets
 * *output (NULL when not given), *force and *first (the index in argv of the first file).
 * Returns CLI_EXIT_OK, -1 after printing help (exit 0), or a usage error's code. */
int cli_parse_output_options(const struct cli_command *c, int argc, char **argv,
                             const char **output, int *force, int *first);

/* Parses the options of a subcommand of the form `NAME [-o OUT] [-f|--force] [-h] ARG`
 * (`import`, `report`): sets *output (NULL when not given), *force and *arg. Returns
 * CLI_EXIT_OK, -1 after printing help (exit 0), or a usage error's exit code; `what` names
 * ARG in the error ("one SESSION_DIR"). */
int cli_parse_output_command(const struct cli_command *c, const char *what, int argc, char **argv,
                             const char **output, int *force, const char **arg);

#endif
