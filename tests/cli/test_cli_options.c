/* The subcommands' option parser (src/cli/cli_options.h) on a made-up command: short and long
 * flags, a value attached, after '=' or in the next argument, bundled short flags, `--`,
 * operands before options (permuted, as GNU getopt does), unambiguous --long prefixes, unknown
 * options and missing values (their one line and exit 2), the checks of the generic setters,
 * and the help printed from the rows. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct args {
    const char *output, *mode, *level;
    int force, details, width;
    double ratio;
    unsigned count;
};

static void head(FILE *out)
{
    fputs("Usage: lantern t [options] FILE\n\n", out);
}

static void tail(FILE *out)
{
    fputs("\nThe end.\n", out);
}

static const struct cli_option rows[] = {
    CLI_STRING('o', "output", "FILE", struct args, output, "the file to write\nsecond line"),
    CLI_FLAG('f', "force", struct args, force, "replace FILE"),
    CLI_FLAG('d', "details", struct args, details, "more"),
    CLI_WIDTH(struct args, width, "fit in N columns"),
    {.long_name = "ratio",
     .arg = CLI_ARG_REQUIRED,
     .usage = "R",
     .set = cli_set_real,
     .offset = offsetof(struct args, ratio),
     .help = "a ratio",
     .min = 0,
     .max = 1,
     .error = "--ratio needs a number from 0 to 1"},
    {.long_name = "count",
     .arg = CLI_ARG_REQUIRED,
     .usage = "N",
     .set = cli_set_unsigned,
     .offset = offsetof(struct args, count),
     .help = "a count",
     .min = 1,
     .max = 9,
     .error = "--count needs 1 to 9"},
    {.long_name = "mode",
     .arg = CLI_ARG_REQUIRED,
     .usage = "=a|b|x:NAME",
     .set = cli_set_choice,
     .offset = offsetof(struct args, mode),
     .help = "a mode",
     .choices = "a|b|x:*",
     .error = "--mode is a, b or x:NAME"},
    {.long_name = "level",
     .arg = CLI_ARG_OPTIONAL,
     .usage = "[=N]",
     .set = cli_set_string,
     .offset = offsetof(struct args, level),
     .help = "a level"},
    CLI_LINE("--level-of-a-very-long-name", "a line of the help only"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

static const struct cli_command command = {
    .name = "t",
    .rows = rows,
    .column = 22,
    .short_slot = 1,
    .help_head = head,
    .help_tail = tail,
};
static const struct cli_command to_run = {
    .name = "t",
    .rows = rows,
    .stop_at_operand = 1,
    .column = 22,
    .short_slot = 1,
    .help_head = head,
};

static char said[4096]; /* what the last parse wrote on stderr, or stdout for help */

/* Parses the NULL-terminated words after "t" by c into *a; returns the parser's answer, with
 * *first, and what it wrote in said. */
static int parse(const struct cli_command *c, struct args *a, int *first, ...)
{
    static char *argv[32];
    va_list ap;
    int argc = 0;
    argv[argc++] = "t";
    va_start(ap, first);
    for (char *w; (w = va_arg(ap, char *));)
        argv[argc++] = w;
    va_end(ap);
    argv[argc] = NULL;
    memset(a, 0, sizeof *a);
    fflush(stdout);
    fflush(stderr);
    FILE *capture = tmpfile();
    ASSERT(capture != NULL);
    int saved_err = dup(2), saved_out = dup(1);
    dup2(fileno(capture), 2);
    dup2(fileno(capture), 1);
    int rc = cli_options_parse(c, argc, argv, a, first);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_err, 2);
    dup2(saved_out, 1);
    close(saved_err);
    close(saved_out);
    rewind(capture);
    size_t n = fread(said, 1, sizeof said - 1, capture);
    said[n] = '\0';
    fclose(capture);
    return rc;
}

static void short_and_long_values_in_every_spelling(void)
{
    struct args a;
    int first;
    const char *spellings[][3] = {{"-o", "x.db", NULL},       {"-ox.db", NULL, NULL},
                                  {"--output", "x.db", NULL}, {"--output=x.db", NULL, NULL},
                                  {"--out=x.db", NULL, NULL}, {"--o", "x.db", NULL}};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        ASSERT_EQ(parse(&command, &a, &first, spellings[i][0],
                        spellings[i][1] ? spellings[i][1] : "FILE", spellings[i][1] ? "FILE" : NULL,
                        NULL),
                  0);
        ASSERT_STR_EQ(a.output, "x.db");
        ASSERT_STR_EQ(said, "");
    }
}

static void bundled_short_flags(void)
{
    struct args a;
    int first;
    ASSERT_EQ(parse(&command, &a, &first, "-fd", "FILE", NULL), 0);
    ASSERT(a.force && a.details && !a.output);
    ASSERT_EQ(parse(&command, &a, &first, "-fdo", "x.db", "FILE", NULL), 0);
    ASSERT(a.force && a.details);
    ASSERT_STR_EQ(a.output, "x.db");
    ASSERT_EQ(parse(&command, &a, &first, "-fox.db", NULL), 0);
    ASSERT(a.force);
    ASSERT_STR_EQ(a.output, "x.db");
    ASSERT_EQ(parse(&command, &a, &first, "-w12", NULL), 0);
    ASSERT_EQ(a.width, 12);
}

static void operands_are_permuted_last_and_double_dash_ends_options(void)
{
    struct args a;
    int first;
    char *argv[] = {"t", "FILE", "-f", "--", "-d", NULL};
    memset(&a, 0, sizeof a);
    ASSERT_EQ(cli_options_parse(&command, 5, argv, &a, &first), 0);
    ASSERT(a.force && !a.details);
    ASSERT_EQ(first, 3);
    ASSERT_STR_EQ(argv[3], "FILE");
    ASSERT_STR_EQ(argv[4], "-d");
    /* a command to run: its options are its own */
    char *run[] = {"t", "-f", "prog", "-o", "x", NULL};
    memset(&a, 0, sizeof a);
    ASSERT_EQ(cli_options_parse(&to_run, 5, run, &a, &first), 0);
    ASSERT(a.force && !a.output);
    ASSERT_EQ(first, 2);
}

static void unknown_options_and_missing_values_are_usage_errors(void)
{
    struct args a;
    int first;
    ASSERT_EQ(parse(&command, &a, &first, "--bogus", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: unknown option '--bogus'\nTry 'lantern t --help'.\n");
    ASSERT_EQ(parse(&command, &a, &first, "FILE", "-Z", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: unknown option '-Z'\nTry 'lantern t --help'.\n");
    ASSERT_EQ(parse(&command, &a, &first, "--force=1", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: unknown option '--force=1'\nTry 'lantern t --help'.\n");
    ASSERT_EQ(parse(&command, &a, &first, "-o", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: option '-o' needs a value\nTry 'lantern t --help'.\n");
    ASSERT_EQ(parse(&command, &a, &first, "-fo", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: option '-fo' needs a value\nTry 'lantern t --help'.\n");
    ASSERT_EQ(parse(&command, &a, &first, "--output", NULL), CLI_EXIT_USAGE);
    ASSERT_STR_EQ(said, "lantern: option '--output' needs a value\nTry 'lantern t --help'.\n");
}

static void generic_setters_check_their_values(void)
{
    struct args a;
    int first;
    ASSERT_EQ(parse(&command, &a, &first, "--ratio", "0.25", "--count=3", "--mode=x:y", NULL), 0);
    ASSERT(a.ratio == 0.25 && a.count == 3);
    ASSERT_STR_EQ(a.mode, "x:y");
    const char *bad[][2] = {{"--ratio=2", "--ratio needs a number from 0 to 1"},
                            {"--ratio=", "--ratio needs a number from 0 to 1"},
                            {"--ratio=0.5x", "--ratio needs a number from 0 to 1"},
                            {"--count=0", "--count needs 1 to 9"},
                            {"--count=3x", "--count needs 1 to 9"},
                            {"--mode=c", "--mode is a, b or x:NAME"},
                            {"--mode=x:", "--mode is a, b or x:NAME"},
                            {"--mode=ab", "--mode is a, b or x:NAME"},
                            {"-w-1", "width must be a number >= 0, not '-1'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[256];
        snprintf(want, sizeof want, "lantern: %s\nTry 'lantern t --help'.\n", bad[i][1]);
        ASSERT_EQ(parse(&command, &a, &first, bad[i][0], NULL), CLI_EXIT_USAGE);
        ASSERT_STR_EQ(said, want);
    }
    ASSERT_EQ(parse(&command, &a, &first, "--level", "FILE", NULL), 0);
    ASSERT(a.level == NULL);
    ASSERT_EQ(parse(&command, &a, &first, "--level=4", NULL), 0);
    ASSERT_STR_EQ(a.level, "4");
}

static void help_is_printed_from_the_rows(void)
{
    struct args a;
    int first;
    ASSERT_EQ(parse(&command, &a, &first, "--help", NULL), -1);
    ASSERT_STR_EQ(said, "Usage: lantern t [options] FILE\n\n"
                        "  -o, --output FILE   the file to write\n"
                        "                      second line\n"
                        "  -f, --force         replace FILE\n"
                        "  -d, --details       more\n"
                        "  -w, --width N       fit in N columns\n"
                        "      --ratio R       a ratio\n"
                        "      --count N       a count\n"
                        "      --mode=a|b|x:NAME  a mode\n"
                        "      --level[=N]     a level\n"
                        "      --level-of-a-very-long-name  a line of the help only\n"
                        "  -h, --help          show this help\n"
                        "\nThe end.\n");
}

int main(int argc, char **argv)
{
    setenv("COLUMNS", "100", 1); /* the help's width when stdout is not a terminal */
    static const struct test_case tests[] = {
        {"short_and_long_values_in_every_spelling", short_and_long_values_in_every_spelling},
        {"bundled_short_flags", bundled_short_flags},
        {"operands_are_permuted_last_and_double_dash_ends_options",
         operands_are_permuted_last_and_double_dash_ends_options},
        {"unknown_options_and_missing_values_are_usage_errors",
         unknown_options_and_missing_values_are_usage_errors},
        {"generic_setters_check_their_values", generic_setters_check_their_values},
        {"help_is_printed_from_the_rows", help_is_printed_from_the_rows},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
