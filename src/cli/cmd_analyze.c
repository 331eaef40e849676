/* lantern analyze: runs the expert rules of src/analyze (the table in rules.c) over a
 * database and prints their findings after the session header: as text, the most costly
 * first, one line each (with --details, each one's advice and evidence, and every rule), as
 * CSV or as JSON. */
#include "analyze/analyze.h"
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "output/fit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct analyze_args {
    const char *rules, *format;
    struct analyze_write_options write;
};

static void help_head(FILE *out)
{
    fprintf(out,
            "Usage: lantern analyze FILE [--rule NAME,...] [--details] [--format table|csv|json]\n"
            "                       [-w N]\n\n"
            "Looks for what costs time or energy in a Lantern database and lists the findings\n"
            "most costly first, one line each: the time each could save (share of the run),\n"
            "its rule and what it saw. docs/analyze.md describes every rule.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out, "\nRules:\n");
    for (const struct analyze_rule *r = analyze_rules; r->name; r++)
        fprintf(out, "  %-16s %s\n", r->name, r->looks_for);
}

static const struct cli_option analyze_rows[] = {
    CLI_STRING('r', "rule", "LIST", struct analyze_args, rules,
               "only these rules (comma-separated)"),
    CLI_FLAG('d', "details", struct analyze_args, write.details,
             "after the list, each finding's advice and the rows that\n"
             "show it (evidence), then every rule's threshold and notes"),
    CLI_STRING(0, "format", "FMT", struct analyze_args, format,
               "table (human units), csv (one line per evidence row) or\n"
               "json (everything)"),
    CLI_WIDTH(struct analyze_args, write.width,
              "fit the text in N characters (tables cut names with '~');\n"
              "default: the terminal's width, else $COLUMNS, else no limit"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

const struct cli_command cli_analyze_command = {
    .name = "analyze",
    .rows = analyze_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

/* The session header and the run, to out (a table: the caller fits it to the terminal). */
static int write_analysis(struct stats_ctx *ctx, const struct analyze_run *run,
                          const struct analyze_write_options *opt)
{
    int rc;
    if (ctx->format == TABLE_FORMAT_JSON) {
        fputs("{\"session\": ", ctx->out);
        rc = stats_header(ctx, ctx->out);
        fputs(", \"analysis\": ", ctx->out);
    } else {
        rc = stats_header(ctx, ctx->format == TABLE_FORMAT_CSV ? stderr : ctx->out);
    }
    if (rc == 0)
        rc = analyze_write(run, ctx->format, opt, ctx->out);
    if (ctx->format == TABLE_FORMAT_JSON)
        fputs("}\n", ctx->out);
    return rc;
}

static int print_analysis(const char *path, const char *rules, enum table_format format,
                          const struct analyze_write_options *opt, FILE *out)
{
    struct stats_ctx ctx = {.format = format};
    if (cli_open_db(path, &ctx.db) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    int rc = analyze_run(ctx.db, rules, 0, &run, &bad, error, sizeof error);
    if (rc == -EINVAL) {
        analyze_run_release(&run);
        sqlite3_close(ctx.db);
        return cli_usage_error("analyze", "unknown rule '%.*s'", (int)strcspn(bad, ","), bad);
    }
    if (rc == 0) {
        struct cli_fit fit;
        ctx.out = cli_fit_begin(&fit, out, format == TABLE_FORMAT_TABLE ? opt->width : 0);
        rc = write_analysis(&ctx, &run, opt);
        if (cli_fit_end(&fit) < 0)
            rc = -EIO;
        if (rc < 0)
            snprintf(error, sizeof error, "cannot write the analysis");
    }
    analyze_run_release(&run);
    sqlite3_close(ctx.db);
    if (rc < 0)
        return cli_error("%s: %s", path, error);
    return CLI_EXIT_OK;
}

int cmd_analyze(int argc, char **argv)
{
    struct analyze_args a = {.format = "table", .write.width = -1}; /* -1: not given */
    struct analyze_write_options *opt = &a.write;
    int first = 0, rc = cli_options_parse(&cli_analyze_command, argc, argv, &a, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (first != argc - 1)
        return cli_usage_error("analyze", "expected one database FILE");
    enum table_format parsed;
    if (table_parse_format(a.format, &parsed) < 0)
        return cli_usage_error("analyze", "unknown format '%s' (table, csv or json)", a.format);
    if (opt->width < 0)
        opt->width = output_width(STDOUT_FILENO);
    opt->terminal = isatty(STDOUT_FILENO);
    rc = print_analysis(argv[first], a.rules, parsed, opt, stdout);
    if (fflush(stdout) != 0 && rc == CLI_EXIT_OK)
        rc = cli_error("cannot write the analysis: %s", strerror(errno));
    return rc;
}
