/* lantern kernels: one row per GPU kernel (and memcpy/memset) with the layer and PyTorch op
 * that launched it, shapes, FLOPs, bytes, Tensor Core use and achieved rates. The report
 * itself is src/model/kernels.c; this file parses the options (PyProf's prof.py flags). */
#include "cli/cli.h"
#include "model/kernels.h"
#include "model/session_losses.h"
#include "output/fit.h"
#include "output/table.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_help(FILE *out)
{
    fprintf(
        out,
        "Usage: lantern kernels FILE [-c COLS] [-w WIDTH] [--csv | --format FMT] [--no-memops]\n"
        "                       [--hints]\n\n"
        "One row per GPU kernel, memcpy and memset of a Lantern database, in GPU start order,\n"
        "with the NVTX layer and the PyTorch op (torch.autograd.profiler.emit_nvtx markers)\n"
        "that launched it. \"na\" marks an unknown value; a trailing '*' a figure computed\n"
        "with an assumed dtype (the kernel name gives none). docs/kernels.md has the formulas.\n\n"
        "  -c, --columns COLS  comma-separated columns, in order (default:\n"
        "                      %s;\n"
        "                      with GPU metrics recorded:\n"
        "                      %s)\n"
        "  -w, --width N       fit text lines in N characters, cutting text columns ('~');\n"
        "                      default: the terminal's width, else $COLUMNS, else no limit;\n"
        "                      0: no limit (full names, as in CSV and JSON)\n"
        "      --csv           CSV instead of space-separated columns\n"
        "      --format FMT    text (default), csv or json\n"
        "      --no-memops     kernels only\n"
        "      --hints         only rows with an optimisation hint, with the hints column\n"
        "  -h, --help          show this help and the columns\n\nColumns:\n",
        kernels_default_columns, kernels_default_columns_measured);
    kernels_columns_help(out);
}

static int parse_format(const char *text, enum kernels_format *format)
{
    static const char *const names[] = {"text", "csv", "json"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(text, names[i]) == 0) {
            *format = (enum kernels_format)i;
            return 0;
        }
    }
    return -EINVAL;
}

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
    static const struct option options[] = {
        {"columns", required_argument, NULL, 'c'}, {"width", required_argument, NULL, 'w'},
        {"csv", no_argument, NULL, 'C'},           {"format", required_argument, NULL, 'F'},
        {"no-memops", no_argument, NULL, 'M'},     {"hints", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    struct kernels_options opt = {.width = -1}; /* -1: not given */
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:w:h", options, NULL)) != -1) {
        switch (c) {
        case 'c':
            opt.columns = optarg;
            break;
        case 'w':
            if (cli_parse_width("kernels", optarg, &opt.width) != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
            break;
        case 'C':
            opt.format = KERNELS_FORMAT_CSV;
            break;
        case 'F':
            if (parse_format(optarg, &opt.format) < 0)
                return cli_usage_error("kernels", "unknown format '%s' (text, csv or json)",
                                       optarg);
            break;
        case 'M':
            opt.no_memops = 1;
            break;
        case 'H':
            opt.hints_only = 1;
            break;
        case 'h':
            output_print_wrapped(print_help, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("kernels", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("kernels", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("kernels", "expected one database FILE");
    if (opt.width < 0)
        opt.width = output_width(STDOUT_FILENO);
    opt.drop_columns = isatty(STDOUT_FILENO);
    const char *bad;
    if (kernels_columns_check(opt.columns, &bad) < 0)
        return cli_usage_error("kernels", "unknown column '%s' (see lantern kernels -h)", bad);
    return write_kernels(argv[optind], &opt);
}
