/* lantern report: writes the self-contained HTML page of a database (src/html). The
 * page goes to a temporary file beside the output and is renamed into place, so a reader
 * never sees half a page; an existing file is kept unless --force. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "html/html.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help_head(FILE *out)
{
    fprintf(out,
            "Usage: lantern report FILE [-o OUT.html] [--force]\n\n"
            "Writes one self-contained HTML page (no network needed to open it): the session,\n"
            "a timeline overview per GPU, where the time went, the `lantern analyze` findings\n"
            "most costly first with their evidence, and energy per range and kernel.\n\n");
}

static const struct cli_option report_rows[] = {
    CLI_OUTPUT_ROWS("OUT", "the page (default: FILE with .html instead of .db)",
                    "replace OUT if it exists"),
};

const struct cli_command cli_report_command = {
    .name = "report",
    .rows = report_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
};

/* x.db -> x.html; anything else gets .html appended. */
static char *default_output(const char *db_path)
{
    size_t len = strlen(db_path);
    char *out;
    if (len > 3 && !strcmp(db_path + len - 3, ".db"))
        return asprintf(&out, "%.*s.html", (int)(len - 3), db_path) < 0 ? NULL : out;
    return asprintf(&out, "%s.html", db_path) < 0 ? NULL : out;
}

/* Writes the page through cli_output (a temporary file beside output, renamed into place). */
static int write_page(sqlite3 *db, const char *output, int force)
{
    char error[256] = "";
    struct cli_output out;
    if (cli_output_open(&out, output, force) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    int rc = html_report_write(db, out.file, error, sizeof error);
    if (rc < 0 && ferror(out.file))
        out.error = errno; /* a write error: cli_output_close names the output */
    if (rc < 0 && !ferror(out.file)) {
        cli_output_close(&out, 0);
        return cli_error("cannot write '%s': %s", output, error);
    }
    if (cli_output_close(&out, rc == 0) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    fprintf(stderr, "lantern: report written to %s\n", output);
    return CLI_EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
    const char *output, *db_path;
    int force;
    int rc = cli_parse_output_command(&cli_report_command, "one database FILE", argc, argv, &output,
                                      &force, &db_path);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    char *fallback = output ? NULL : default_output(db_path);
    if (!output && !(output = fallback))
        return cli_error("out of memory");
    struct stat st;
    if (!force && lstat(output, &st) == 0) {
        rc = cli_error("'%s' exists (use --force to replace it)", output);
    } else {
        sqlite3 *db;
        rc = cli_open_db(db_path, &db);
        if (rc == CLI_EXIT_OK) {
            rc = write_page(db, output, force);
            sqlite3_close(db);
        }
    }
    free(fallback);
    return rc;
}
