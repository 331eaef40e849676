/* lantern diff: compares the profiles of a base and a new version (BASE.db NEW.db, or several
 * runs of each with --base A1.db A2.db ... --new B1.db B2.db ...) and says what got slower or
 * faster, how sure it is, and whether the runs are comparable (src/diff/diff.h,
 * docs/diff.md). Exit 3 with --fail-on-regression when a significant slowdown beyond the
 * threshold is found: a gate for CI. */
#include "cli/cli.h"
#include "diff/diff.h"
#include "output/fit.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_help(FILE *out)
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
            "the statistics.\n\n"

            "      --base FILE...      the base runs (the first positional FILE otherwise)\n"
            "      --new FILE...       the new runs (the second positional FILE otherwise)\n"
            "      --threshold PCT     a change of the median below PCT %% is 'same'\n"
            "                          (default 5)\n"
            "      --alpha Q           the false-discovery rate over all rows (default 0.05)\n"
            "      --format FMT        table (default), csv (every field; checks on stderr)\n"
            "                          or json\n"
            "  -o, --output OUT        write the table, CSV or JSON to OUT\n"
            "      --html OUT.html     also write a self-contained HTML page\n"
            "  -f, --force             replace OUT and OUT.html if they exist\n"
            "  -w, --width N           fit the text in N columns, cutting names with '~'\n"
            "                          (default: the terminal's, else $COLUMNS, else no\n"
            "                          limit: full names in a pipe; 0: no limit)\n"
            "      --all               every row in the table (default: changes, NVTX ranges\n"
            "                          and whole-run figures)\n"
            "      --fail-on-regression  exit 3 when a row is slower (significant, beyond the\n"
            "                          threshold): a gate for CI\n"
            "  -h, --help              show this help\n\n"
            "Exit status: 0 compared (even with regressions, unless --fail-on-regression),\n"
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
 * of argv here, so that getopt sees the rest. Returns the new argc, or -1 (out of memory). */
static int take_lists(int argc, char **argv, struct diff_args *a)
{
    int kept = 1, options_end = 0;
    for (int i = 1; i < argc; i++) {
        int side = !strcmp(argv[i], "--base") ? 0 : !strcmp(argv[i], "--new") ? 1 : -1;
        options_end |= !strcmp(argv[i], "--"); /* what follows is files, for getopt too */
        if (side < 0 || options_end) {
            argv[kept++] = argv[i];
            continue;
        }
        a->lists = 1;
        while (i + 1 < argc && (argv[i + 1][0] != '-' || !argv[i + 1][1])) {
            const char **grown =
                realloc(a->files[side], (size_t)(a->count[side] + 1) * sizeof *grown);
            if (!grown)
                return -1;
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
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct diff_args *a)
{
    static const struct option options[] = {
        {"threshold", required_argument, NULL, 'T'},
        {"alpha", required_argument, NULL, 'A'},
        {"format", required_argument, NULL, 'F'},
        {"output", required_argument, NULL, 'o'},
        {"html", required_argument, NULL, 'H'},
        {"force", no_argument, NULL, 'f'},
        {"width", required_argument, NULL, 'w'},
        {"all", no_argument, NULL, 'a'},
        {"fail-on-regression", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:fw:h", options, NULL)) != -1) {
        switch (c) {
        case 'T':
            if (parse_number(optarg, &a->options.threshold_percent) < 0 ||
                a->options.threshold_percent < 0)
                return cli_usage_error("diff", "--threshold must be a percentage >= 0, not '%s'",
                                       optarg);
            break;
        case 'A':
            if (parse_number(optarg, &a->options.alpha) < 0 || a->options.alpha <= 0 ||
                a->options.alpha >= 1)
                return cli_usage_error("diff", "--alpha must be between 0 and 1, not '%s'", optarg);
            break;
        case 'F':
            if (table_parse_format(optarg, &a->format) < 0)
                return cli_usage_error("diff", "unknown format '%s' (table, csv or json)", optarg);
            break;
        case 'o':
            a->output = optarg;
            break;
        case 'H':
            a->html = optarg;
            break;
        case 'f':
            a->force = 1;
            break;
        case 'w':
            if (cli_parse_width("diff", optarg, &a->width) != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
            break;
        case 'a':
            a->all = 1;
            break;
        case 'R':
            a->fail_on_regression = 1;
            break;
        case 'h':
            output_print_wrapped(print_help, stdout);
            return -1;
        case ':':
            return cli_usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("diff", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int positional = argc - optind;
    if (a->lists && positional)
        return cli_usage_error("diff",
                               "give the runs either as BASE.db NEW.db or with --base and "
                               "--new, not both ('%s')",
                               argv[optind]);
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
            a->files[side][0] = argv[optind + side];
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
