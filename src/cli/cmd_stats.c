/* lantern stats: prints a report from the table of reports (src/stats/stats.c) after
 * the session header, as an aligned table, CSV or JSON. */
#include "cli/cli.h"
#include "output/fit.h"
#include "output/json.h"
#include "stats/stats.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void print_help(FILE *out)
{
    fprintf(
        out,
        "Usage: lantern stats FILE [--report NAME] [--format table|csv|json] [-w N] [-o OUT]\n\n"
        "Prints a report of a Lantern database, after a header describing the session.\n\n"
        "  -r, --report NAME   the report (default nvtx_sum)\n"
        "      --format FMT    table (human units), csv or json (exact nanoseconds)\n"
        "  -w, --width N       fit a table in N characters: names cut ('~'), then numbers\n"
        "                      left out from the right (named below it); default: the\n"
        "                      terminal's width, else $COLUMNS, else no limit; 0: no limit\n"
        "  -o, --output OUT    write to OUT instead of standard output (no width limit)\n"
        "  -f, --force         replace OUT if it exists\n"
        "      --sort COL      cuda_gpu_trace: rows by start (default) or duration\n"
        "      --filter-nvtx RANGE  cpu_sample_sum: only samples taken on a thread\n"
        "                      while it was inside an NVTX range named RANGE\n"
        "  -h, --help          show this help\n\nReports:\n");
    for (const struct stats_entry *r = stats_table; r->name; r++)
        fprintf(out, "  %-22s %s\n", r->name, r->help);
}

/* JSON: {"report": NAME, "session": {...}, "rows": [...], "note": why the rows are empty or
 * null}. Table: the header, then the table. CSV: the header on stderr, so the CSV itself stays
 * machine-readable; the note goes to stderr (cli_print_stats). */
static int print_stats(struct stats_ctx *ctx, const struct stats_entry *r)
{
    if (ctx->format == TABLE_FORMAT_JSON) {
        fprintf(ctx->out, "{\"report\": \"%s\", \"session\": ", r->name);
        if (stats_header(ctx, ctx->out) < 0)
            return -1;
        fputs(", \"rows\": ", ctx->out);
    } else if (stats_header(ctx, ctx->format == TABLE_FORMAT_CSV ? stderr : ctx->out) < 0) {
        return -1;
    }
    if (r->run(ctx) < 0)
        return -1;
    if (ctx->format == TABLE_FORMAT_JSON) {
        fputs(", \"note\": ", ctx->out);
        json_write_cstring(ctx->out, ctx->note[0] ? ctx->note : NULL);
        fputs("}\n", ctx->out);
    }
    return fflush(ctx->out) == 0 ? 0 : -1;
}

int cli_print_stats(const char *db_path, const struct stats_entry *r, enum table_format format,
                    const char *sort, const char *filter_nvtx, int width, FILE *out)
{
    struct stats_ctx ctx = {.format = format, .sort = sort, .filter_nvtx = filter_nvtx};
    if (cli_open_db(db_path, &ctx.db) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    struct cli_fit fit; /* the header's long lines wrapped, the tables fitted */
    ctx.width = format == TABLE_FORMAT_TABLE ? width : 0;
    ctx.terminal = isatty(fileno(out));
    ctx.out = cli_fit_begin(&fit, out, ctx.width);
    int rc = print_stats(&ctx, r);
    if (cli_fit_end(&fit) < 0)
        rc = -1;
    int err = errno;
    sqlite3_close(ctx.db);
    errno = err; /* a write error's, for the caller */
    if (rc == 0 && ctx.note[0])
        fprintf(stderr, "lantern: %s\n", ctx.note); /* stderr: CSV and JSON stay clean */
    if (rc < 0 && ferror(out))
        return CLI_EXIT_ERROR; /* the output's failure, not the database's: the caller names it */
    if (rc < 0)
        return cli_error("%s: %s", db_path, ctx.error[0] ? ctx.error : strerror(errno));
    return CLI_EXIT_OK;
}

int cmd_stats(int argc, char **argv)
{
    static const struct option options[] = {
        {"report", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'F'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {"sort", required_argument, NULL, 'S'},
        {"force", no_argument, NULL, 'f'},
        {"width", required_argument, NULL, 'w'},
        {"filter-nvtx", required_argument, NULL, 'N'},
        {NULL, 0, NULL, 0},
    };
    const char *report = "nvtx_sum", *format = "table", *output = NULL, *sort = NULL,
               *filter_nvtx = NULL;
    int c, force = 0, width = -1; /* -1: not given */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":r:o:w:fh", options, NULL)) != -1) {
        switch (c) {
        case 'w':
            if (cli_parse_width("stats", optarg, &width) != CLI_EXIT_OK)
                return CLI_EXIT_USAGE;
            break;
        case 'r':
            report = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'S':
            sort = optarg; /* for the reports that offer more than one order */
            break;
        case 'N':
            filter_nvtx = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            output_print_wrapped(print_help, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("stats", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("stats", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("stats", "expected one database FILE");
    const struct stats_entry *r = stats_find(report);
    if (!r)
        return cli_usage_error("stats", "unknown report '%s'", report);
    enum table_format parsed;
    if (table_parse_format(format, &parsed) < 0)
        return cli_usage_error("stats", "unknown format '%s' (table, csv or json)", format);
    struct cli_output out;
    if (cli_output_open(&out, output, force) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (width < 0) /* a file gets every name whole */
        width = out.file == stdout ? output_width(STDOUT_FILENO) : 0;
    int rc = cli_print_stats(argv[optind], r, parsed, sort, filter_nvtx, width, out.file);
    if (rc != CLI_EXIT_OK && ferror(out.file))
        out.error = errno;
    if (cli_output_close(&out, rc == CLI_EXIT_OK) != CLI_EXIT_OK && rc == CLI_EXIT_OK)
        rc = CLI_EXIT_ERROR;
    return rc;
}
