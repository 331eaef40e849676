/* lantern stats: prints a report from the table of reports (src/stats/stats.c) after
 * the session header, as an aligned table, CSV or JSON. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "output/fit.h"
#include "output/json.h"
#include "stats/stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct stats_args {
    const char *report, *format, *output, *sort, *filter_nvtx;
    int force, width; /* width -1: not given */
};

static void help_head(FILE *out)
{
    fprintf(
        out,
        "Usage: lantern stats FILE [--report NAME] [--format table|csv|json] [-w N] [-o OUT]\n\n"
        "Prints a report of a Lantern database, after a header describing the session.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out, "\nReports:\n");
    for (const struct stats_entry *r = stats_table; r->name; r++)
        fprintf(out, "  %-22s %s\n", r->name, r->help);
}

static const struct cli_option stats_rows[] = {
    CLI_STRING('r', "report", "NAME", struct stats_args, report, "the report (default nvtx_sum)"),
    CLI_STRING(0, "format", "FMT", struct stats_args, format,
               "table (human units), csv or json (exact nanoseconds)"),
    CLI_WIDTH(struct stats_args, width,
              "fit a table in N characters: names cut ('~'), then numbers\n"
              "left out from the right (named below it); default: the\n"
              "terminal's width, else $COLUMNS, else no limit; 0: no limit"),
    CLI_STRING('o', "output", "OUT", struct stats_args, output,
               "write to OUT instead of standard output (no width limit)"),
    CLI_FLAG('f', "force", struct stats_args, force, "replace OUT if it exists"),
    /* for the reports that offer more than one order */
    CLI_STRING(0, "sort", "COL", struct stats_args, sort,
               "cuda_gpu_trace: rows by start (default) or duration"),
    CLI_STRING(0, "filter-nvtx", "RANGE", struct stats_args, filter_nvtx,
               "cpu_sample_sum, python_gil_sum, thread_state_sum:\n"
               "only samples taken (GIL waits', states' time) on a\n"
               "thread while it was inside an NVTX range named RANGE"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

const struct cli_command cli_stats_command = {
    .name = "stats",
    .rows = stats_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

/* JSON: {"report": NAME, "session": {...}, "rows": [...], "note": why the rows are empty or
 * null}. Table: the header, then the table. CSV: the header on stderr, so the CSV itself stays
 * machine-readable; the note goes to stderr (cli_print_stats). */
static int print_stats(struct stats_ctx *ctx, const struct stats_entry *r)
{
    if (ctx->format == TABLE_FORMAT_JSON) {
        fprintf(ctx->out, "{\"report\": \"%s\", \"session\": ", r->name);
        int rc = stats_header(ctx, ctx->out);
        if (rc < 0)
            return rc;
        fputs(", \"rows\": ", ctx->out);
    } else {
        int rc = stats_header(ctx, ctx->format == TABLE_FORMAT_CSV ? stderr : ctx->out);
        if (rc < 0)
            return rc;
    }
    int rc = r->run(ctx);
    if (rc < 0)
        return rc;
    if (ctx->format == TABLE_FORMAT_JSON) {
        fputs(", \"note\": ", ctx->out);
        json_write_cstring(ctx->out, ctx->note[0] ? ctx->note : NULL);
        fputs("}\n", ctx->out);
    }
    return fflush(ctx->out) == 0 ? 0 : -EIO;
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
        rc = -EIO;
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
    struct stats_args a = {.report = "nvtx_sum", .format = "table", .width = -1};
    int first = 0, rc = cli_options_parse(&cli_stats_command, argc, argv, &a, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (first != argc - 1)
        return cli_usage_error("stats", "expected one database FILE");
    const struct stats_entry *r = stats_find(a.report);
    if (!r)
        return cli_usage_error("stats", "unknown report '%s'", a.report);
    enum table_format parsed;
    if (table_parse_format(a.format, &parsed) < 0)
        return cli_usage_error("stats", "unknown format '%s' (table, csv or json)", a.format);
    struct cli_output out;
    if (cli_output_open(&out, a.output, a.force) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (a.width < 0) /* a file gets every name whole */
        a.width = out.file == stdout ? output_width(STDOUT_FILENO) : 0;
    rc = cli_print_stats(argv[first], r, parsed, a.sort, a.filter_nvtx, a.width, out.file);
    if (rc != CLI_EXIT_OK && ferror(out.file))
        out.error = errno;
    if (cli_output_close(&out, rc == CLI_EXIT_OK) != CLI_EXIT_OK && rc == CLI_EXIT_OK)
        rc = CLI_EXIT_ERROR;
    return rc;
}
