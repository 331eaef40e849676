/* lantern import: turns a kept raw session folder (`profile --keep-raw`, the folder kept because
 * a traced process was still running after `profile --wait`, or the folder left behind when the
 * launcher itself was killed) into a report database. */
#include "cli/cli.h"
#include "cli/cli_options.h"

#include <stdio.h>

static void help_head(FILE *out)
{
    fprintf(out, "Usage: lantern import SESSION_DIR -o OUT.db [--force]\n\n"
                 "Imports the raw trace files (*.lrt) of a session folder into a report database:\n"
                 "one kept with 'profile --keep-raw', or kept because a traced process was still\n"
                 "running (then again with --force once it has ended, for all its events).\n\n");
}

static const struct cli_option import_rows[] = {
    CLI_OUTPUT_ROWS("FILE", "the database to write (required)", "replace FILE if it exists"),
};

const struct cli_command cli_import_command = {
    .name = "import",
    .rows = import_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
};

int cmd_import(int argc, char **argv)
{
    const char *output, *session_dir;
    int force;
    int rc = cli_parse_output_command(&cli_import_command, "one SESSION_DIR", argc, argv, &output,
                                      &force, &session_dir);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (!output)
        return cli_usage_error("import", "missing -o OUT.db");
    rc = cli_import(session_dir, output, force);
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "lantern: report written to %s\n", output);
    return rc;
}
