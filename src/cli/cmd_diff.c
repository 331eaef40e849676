/* lantern diff: compares the profiles of a base and a new version (BASE.db NEW.db, or several
 * runs of each with --base A1.db A2.db ... --new B1.db B2.db ...) and says what got slower or
 * faster, how sure it is, and whether the runs are comparable (src/diff/diff.h,
 * docs/diff.md). Exit 3 with --fail-on-regression when a significant slowdown beyond the
 * threshold is found: a gate for CI. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "diff/diff.h"
#include "output/fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help_head(FILE *out)
{
    fprintf(out,
            "Usage: lantern diff BASE.db NEW.db [options]\n"
            "   or: lantern diff --base A1.db A2.db ... --new B1.db B2.db ... [options]\n\n"
            "Compares NVTX ranges, kernels (also per range), copies, CUDA API calls, energy\n"
            "per range, GPU metrics per kernel and whole-run figures, matched by name, and\n"
            "says which got slower or faster: the change of the median with a 95 %% confidence\n"
            "interval, a test, and a verdict (slower, faster, higher, lower, new, gone, same,\n"
            "untested). With one run per side the instances are compared (Mann-Whitney U);\n"
            "with 2 or more runs on each side the runs' medians (bootstrap over runs):\n"
            "profile 3 or more per side for an honest answer. Checks that the runs are\n"
            "comparable (GPU, clocks, throttling, command) come first. docs/diff.md explains\n"
            "the statistics.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out, "\nExit status: 0 compared (even with regressions, unless --fail-on-regression),\n"
                 "1 bad input (not a Lantern database), 2 usage error, 3 a regression with\n"
                 "--fail-on-regression.\n");
}

struct diff_args {
    const char **files[2]; /* base, new */
    int count[2];
    int lists; /* --base or --new given */
    const char *output, *html;
    int force, all, fail_on_regression, width;
    enum table_format format;
    struct diff_options options;
};

/* --base and --new take every argument after them up to the next option; they are taken out
 * of argv here, so that the parser sees the rest. Returns the new argc, or -ENOMEM. */
static int take_lists(int argc, char **argv, struct diff_args *a)
{
    int kept = 1, options_end = 0;
    for (int i = 1; i < argc; i++) {
        int side = !strcmp(argv[i], "--base") ? 0 : !strcmp(argv[i], "--new") ? 1 : -1;
        options_end |= !strcmp(argv[i], "--"); /* what follows is files, for the parser too */
        if (side < 0 || options_end) {
            argv[kept++] = argv[i];
            continue;
        }
        a->lists = 1;
        while (i + 1 < argc && (argv[i + 1][0] != '-' || !argv[i + 1][1])) {
            const char **grown =
                realloc(a->files[side], (size_t)(a->count[side] + 1) * sizeof *grown);
            if (!grown)
                return -ENOMEM;
            a->files[side] = grown;
            a->files[side][a->count[side]++] = argv[++i];
        }
    }
    return kept;
}

static int parse_number(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

static int set_threshold(const char *cmd, const struct cli_option *row, void *options,
                         const char *value)
{
    (void)row;
    double *threshold = &((struct diff_args *)options)->options.threshold_percent;
    if (parse_number(value, threshold) < 0 || *threshold < 0)
        return cli_usage_error(cmd, "--threshold must be a percentage >= 0, not '%s'", value);
    return 0;
}

static int set_alpha(const char *cmd, const struct cli_option *row, void *options,
                     const char *value)
{
    (void)row;
    double *alpha = &((struct diff_args *)options)->options.alpha;
    if (parse_number(value, alpha) < 0 || *alpha <= 0 || *alpha >= 1)
        return cli_usage_error(cmd, "--alpha must be between 0 and 1, not '%s'", value);
    return 0;
}

static int set_format(const char *cmd, const struct cli_option *row, void *options,
                      const char *value)
{
    (void)row;
    if (table_parse_format(value, &((struct diff_args *)options)->format) < 0)
        return cli_usage_error(cmd, "unknown format '%s' (table, csv or json)", value);
    return 0;
}

/* --base and --new are taken out of argv by take_lists before the parser sees the rest: their
 * rows are the help's lines only. */
static const struct cli_option diff_rows[] = {
    CLI_LINE("--base FILE...", "the base runs (the first positional FILE otherwise)"),
    CLI_LINE("--new FILE...", "the new runs (the second positional FILE otherwise)"),
    CLI_CALL(0, "threshold", CLI_ARG_REQUIRED, "PCT", set_threshold,
             "a change of the median below PCT % is 'same'\n"
             "(default 5)"),
    CLI_CALL(0, "alpha", CLI_ARG_REQUIRED, "Q", set_alpha,
             "the false-discovery rate over all rows (default 0.05)"),
    CLI_CALL(0, "format", CLI_ARG_REQUIRED, "FMT", set_format,
             "table (default), csv (every field; checks on stderr)\n"
             "or json"),
    CLI_STRING('o', "output", "OUT", struct diff_args, output,
               "write the table, CSV or JSON to OUT"),
    CLI_STRING(0, "html", "OUT.html", struct diff_args, html,
               "also write a self-contained HTML page"),
    CLI_FLAG('f', "force", struct diff_args, force, "replace OUT and OUT.html if they exist"),
    CLI_WIDTH(struct diff_args, width,
              "fit the text in N columns, cutting names with '~'\n"
              "(default: the terminal's, else $COLUMNS, else no\n"
              "limit: full names in a pipe; 0: no limit)"),
    CLI_FLAG(0, "all", struct diff_args, all,
             "every row in the table (default: changes, NVTX ranges\n"
             "and whole-run figures)"),
    CLI_FLAG(0, "fail-on-regression", struct diff_args, fail_on_regression,
             "exit 3 when a row is slower (significant, beyond the\n"
             "threshold): a gate for CI"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

const struct cli_command cli_diff_command = {
    .name = "diff",
    .rows = diff_rows,
    .column = 26,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

static int parse_args(int argc, char **argv, struct diff_args *a)
{
    int first = 0, rc = cli_options_parse(&cli_diff_command, argc, argv, a, &first);
    if (rc)
        return rc;
    int positional = argc - first;
    if (a->lists && positional)
        return cli_usage_error("diff",
                               "give the runs either as BASE.db NEW.db or with --base and "
                               "--new, not both ('%s')",
                               argv[first]);
    if (!a->lists && positional != 2)
        return cli_usage_error("diff", "expected two databases, BASE.db NEW.db (or --base ... "
                                       "--new ...)");
    if (a->lists && (!a->count[0] || !a->count[1]))
        return cli_usage_error("diff", "--base and --new each need at least one database");
    if (!a->lists) {
        for (int side = 0; side < 2; side++) {
            a->files[side] = malloc(sizeof *a->files[side]);
            if (!a->files[side])
                return cli_error("out of memory");
            a->files[side][0] = argv[first + side];
            a->count[side] = 1;
        }
    }
    return CLI_EXIT_OK;
}

/* Opens and loads every run of both sides into runs[side][i]; CLI_EXIT_OK or the error's code
 * (printed). dbs[side][i] is set for each opened database. */
static int load_runs(struct diff_args *a, sqlite3 **dbs[2], struct diff_run **runs[2])
{
    char error[512];
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < a->count[side]; i++) {
            const char *path = a->files[side][i];
            if (cli_open_db(path, &dbs[side][i]) != CLI_EXIT_OK)
                return CLI_EXIT_ERROR;
            if (diff_run_load(dbs[side][i], path, &runs[side][i], error, sizeof error) < 0)
                return cli_error("%s: %s", path, error);
        }
    return CLI_EXIT_OK;
}

/* The result on out (and the page on html when asked); a failed write is kept in the
 * output's error, for cli_output_close to name. Text fits the terminal (output/fit.h): the
 * table fitted as it is written, the lines around it wrapped; a file gets everything whole.
 * Returns CLI_EXIT_OK, or CLI_EXIT_ERROR (printed) when the text could not be held. */
static int write_result(const struct diff_args *a, const struct diff_result *res,
                        struct cli_output *out, struct cli_output *html)
{
    int width = a->width >= 0 ? a->width : out->path ? 0 : output_width(STDOUT_FILENO);
    if (a->format != TABLE_FORMAT_TABLE)
        width = 0;
    if (a->format == TABLE_FORMAT_CSV) /* the CSV stays machine-readable */
        diff_write_checks(res, stderr);
    struct cli_fit fit;
    if (diff_write(res, a->format, width, a->all, cli_fit_begin(&fit, out->file, width)) < 0)
        out->error = errno;
    if (cli_fit_end(&fit) < 0)
        return cli_error("cannot write the comparison: out of memory");
    if (html->file && diff_write_html(res, html->file) < 0)
        html->error = errno;
    return CLI_EXIT_OK;
}

static int run_diff(struct diff_args *a, struct cli_output *out, struct cli_output *html)
{
    sqlite3 **dbs[2] = {calloc((size_t)a->count[0], sizeof(sqlite3 *)),
                        calloc((size_t)a->count[1], sizeof(sqlite3 *))};
    struct diff_run **runs[2] = {calloc((size_t)a->count[0], sizeof(struct diff_run *)),
                                 calloc((size_t)a->count[1], sizeof(struct diff_run *))};
    struct diff_result res = {0};
    char error[512];
    int rc = dbs[0] && dbs[1] && runs[0] && runs[1] ? load_runs(a, dbs, runs)
                                                    : cli_error("out of memory");
    if (rc == CLI_EXIT_OK) {
        if (diff_compare(runs[0], a->count[0], runs[1], a->count[1], &a->options, &res, error,
                         sizeof error) < 0)
            rc = cli_error("cannot compare: %s", error);
        else
            rc = write_result(a, &res, out, html);
    }
    if (rc == CLI_EXIT_OK && a->fail_on_regression && diff_regressions(&res))
        rc = CLI_EXIT_REGRESSION;
    diff_result_release(&res);
    for (int side = 0; side < 2; side++) {
        for (int i = 0; i < a->count[side]; i++) {
            if (runs[side])
                diff_run_free(runs[side][i]);
            if (dbs[side])
                sqlite3_close(dbs[side][i]);
        }
        free(runs[side]);
        free(dbs[side]);
    }
    return rc;
}

int cmd_diff(int argc, char **argv)
{
    struct diff_args a = {.width = -1, .options = {.threshold_percent = 5, .alpha = 0.05}};
    struct cli_output out = {0}, html = {0};
    int rest = take_lists(argc, argv, &a), rc;
    if (rest < 0)
        rc = cli_error("out of memory");
    else
        rc = parse_args(rest, argv, &a);
    if (rc != CLI_EXIT_OK) /* -1: --help printed */
        goto done;
    /* the outputs are checked before the work: an existing file needs --force */
    if (cli_output_open(&out, a.output, a.force) != CLI_EXIT_OK ||
        (a.html && cli_output_open(&html, a.html, a.force) != CLI_EXIT_OK)) {
        rc = CLI_EXIT_ERROR;
        goto done;
    }
    rc = run_diff(&a, &out, &html);
    int ok = rc == CLI_EXIT_OK || rc == CLI_EXIT_REGRESSION;
    if (html.file && cli_output_close(&html, ok) != CLI_EXIT_OK && ok)
        rc = CLI_EXIT_ERROR;
    if (cli_output_close(&out, ok) != CLI_EXIT_OK && ok)
        rc = CLI_EXIT_ERROR;
done:
    if (out.file)
        cli_output_close(&out, 0);
    free(a.files[0]);
    free(a.files[1]);
    return rc < 0 ? CLI_EXIT_OK : rc;
}
