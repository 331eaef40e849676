/* lantern kernels: one row per GPU kernel (and memcpy/memset) with the layer and PyTorch op
 * that launched it, shapes, FLOPs, bytes, Tensor Core use and achieved rates. The report
 * itself is src/model/kernels.c; this file parses the options (PyProf's prof.py flags). */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "model/kernels.h"
#include "model/session_losses.h"
#include "output/fit.h"
#include "output/table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help_head(FILE *out)
{
    fprintf(
        out,
        "Usage: lantern kernels FILE [-c COLS] [-w WIDTH] [--csv | --format FMT] [--no-memops]\n"
        "                       [--hints]\n\n"
        "One row per GPU kernel, memcpy and memset of a Lantern database, in GPU start order,\n"
        "with the NVTX layer and the PyTorch op (torch.autograd.profiler.emit_nvtx markers)\n"
        "that launched it. \"na\" marks an unknown value; a trailing '*' a figure computed\n"
        "with an assumed dtype (the kernel name gives none). docs/kernels.md has the "
        "formulas.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out, "\nColumns:\n");
    kernels_columns_help(out);
}

/* -c's text: the default columns, from the report's table. */
static const char *columns_help(void)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "comma-separated columns, in order (default:\n"
             "%s;\n"
             "with GPU metrics recorded:\n"
             "%s)",
             kernels_default_columns, kernels_default_columns_measured);
    return text;
}

static int set_csv(const char *cmd, const struct cli_option *row, void *options, const char *value)
{
    (void)cmd, (void)row, (void)value;
    ((struct kernels_options *)options)->format = KERNELS_FORMAT_CSV;
    return 0;
}

static int set_format(const char *cmd, const struct cli_option *row, void *options,
                      const char *value)
{
    static const char *const names[] = {"text", "csv", "json"};
    (void)row;
    for (int i = 0; i < 3; i++) {
        if (strcmp(value, names[i]) == 0) {
            ((struct kernels_options *)options)->format = (enum kernels_format)i;
            return 0;
        }
    }
    return cli_usage_error(cmd, "unknown format '%s' (text, csv or json)", value);
}

static const struct cli_option kernels_rows[] = {
    {.short_name = 'c',
     .long_name = "columns",
     .arg = CLI_ARG_REQUIRED,
     .usage = "COLS",
     .set = cli_set_string,
     .offset = offsetof(struct kernels_options, columns),
     .help_text = columns_help},
    CLI_WIDTH(struct kernels_options, width,
              "fit text lines in N characters, cutting text columns ('~');\n"
              "default: the terminal's width, else $COLUMNS, else no limit;\n"
              "0: no limit (full names, as in CSV and JSON)"),
    CLI_CALL(0, "csv", CLI_ARG_NONE, NULL, set_csv, "CSV instead of space-separated columns"),
    CLI_CALL(0, "format", CLI_ARG_REQUIRED, "FMT", set_format, "text (default), csv or json"),
    CLI_FLAG(0, "no-memops", struct kernels_options, no_memops, "kernels only"),
    CLI_FLAG(0, "hints", struct kernels_options, hints_only,
             "only rows with an optimisation hint, with the hints column"),
    {.short_name = 'h',
     .long_name = "help",
     .set = cli_set_help,
     .help = "show this help and the columns"},
    CLI_ROWS_END,
};

const struct cli_command cli_kernels_command = {
    .name = "kernels",
    .rows = kernels_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

static int write_kernels(const char *path, const struct kernels_options *opt)
{
    sqlite3 *db;
    if (cli_open_db(path, &db) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    char why[256];
    int no_cuda = stats_why_no_cuda(db, why, sizeof why);
    int rc = kernels_write(db, opt, stdout);
    /* no session header here: what the session lost goes to stderr, the rows stay clean */
    char *losses = rc >= 0 ? session_losses_line(db) : NULL;
    sqlite3_close(db);
    if (rc >= 0 && no_cuda)
        fprintf(stderr, "lantern: %s\n", why);
    char *shown = losses && strcmp(losses, "none") ? table_escape_controls(losses) : NULL;
    if (shown)
        fprintf(stderr, "lantern: lost events: %s\n", shown);
    free(shown);
    free(losses);
    if (fflush(stdout) != 0 && rc >= 0)
        rc = -EIO;
    if (rc == -EIO)
        return cli_error("cannot read '%s': " KERNELS_NO_TABLES, path);
    if (rc < 0)
        return cli_error("%s: %s", path, strerror(-rc));
    if (rc > 0)
        fprintf(stderr,
                "lantern: %d column%s left out to fit %d characters (-w 0: all; -c to "
                "choose)\n",
                rc, rc == 1 ? "" : "s", opt->width);
    return CLI_EXIT_OK;
}

int cmd_kernels(int argc, char **argv)
{
    struct kernels_options opt = {.width = -1}; /* -1: not given */
    int first = 0, rc = cli_options_parse(&cli_kernels_command, argc, argv, &opt, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (first != argc - 1)
        return cli_usage_error("kernels", "expected one database FILE");
    if (opt.width < 0)
        opt.width = output_width(STDOUT_FILENO);
    opt.drop_columns = isatty(STDOUT_FILENO);
    const char *bad;
    if (kernels_columns_check(opt.columns, &bad) < 0)
        return cli_usage_error("kernels", "unknown column '%s' (see lantern kernels -h)", bad);
    return write_kernels(argv[first], &opt);
}
