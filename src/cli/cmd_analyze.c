/* lantern analyze: runs the expert rules of src/analyze (the table in rules.c) over a
 * database and prints their findings after the session header, as text, CSV or JSON. */
#include "analyze/analyze.h"
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void print_help(void)
{
    printf("Usage: lantern analyze FILE [--rule NAME,...] [--format table|csv|json]\n\n"
           "Looks for what costs time or energy in a Lantern database: each rule prints its\n"
           "findings with the rows that show them (evidence), the time that could be saved\n"
           "(share of the run) and what to do. docs/analyze.md describes every rule.\n\n"
           "  -r, --rule LIST     only these rules (comma-separated)\n"
           "      --format FMT    table (human units), csv (one line per evidence row) or json\n"
           "  -h, --help          show this help\n\nRules:\n");
    for (const struct analyze_rule *r = analyze_rules; r->name; r++)
        printf("  %-16s %s\n", r->name, r->looks_for);
}

static int print_analysis(const char *path, const char *rules, enum table_format format, FILE *out)
{
    struct report_ctx ctx = {.out = out, .format = format};
    if (cli_open_db(path, &ctx.db) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    struct analyze_run run;
    const char *bad = NULL;
    char error[256] = "";
    int rc = analyze_run(ctx.db, rules, 0, &run, &bad, error, sizeof error);
    if (rc == -EINVAL) {
        sqlite3_close(ctx.db);
        return cli_usage_error("analyze", "unknown rule '%.*s'", (int)strcspn(bad, ","), bad);
    }
    if (rc == 0) {
        if (format == TABLE_FORMAT_JSON) {
            fputs("{\"session\": ", out);
            rc = report_session_header(&ctx, out);
            fputs(", \"analysis\": ", out);
        } else {
            rc = report_session_header(&ctx, format == TABLE_FORMAT_CSV ? stderr : out);
        }
        if (rc == 0)
            rc = analyze_write(&run, format, out);
        if (format == TABLE_FORMAT_JSON)
            fputs("}\n", out);
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
    static const struct option options[] = {
        {"rule", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *rules = NULL, *format = "table";
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":r:h", options, NULL)) != -1) {
        switch (c) {
        case 'r':
            rules = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'h':
            print_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("analyze", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("analyze", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("analyze", "expected one database FILE");
    enum table_format parsed;
    if (table_parse_format(format, &parsed) < 0)
        return cli_usage_error("analyze", "unknown format '%s' (table, csv or json)", format);
    int rc = print_analysis(argv[optind], rules, parsed, stdout);
    if (fflush(stdout) != 0 && rc == CLI_EXIT_OK)
        rc = cli_error("cannot write the analysis: %s", strerror(errno));
    return rc;
}
