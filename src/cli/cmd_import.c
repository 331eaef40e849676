/* lantern import: turns a kept raw session folder (`profile --keep-raw`, the folder kept because
 * a traced process was still running after `profile --wait`, or the folder left behind when the
 * launcher itself was killed) into a report database. */
#include "cli/cli.h"

#include <stdio.h>

static void print_help(FILE *out)
{
    fprintf(out, "Usage: lantern import SESSION_DIR -o OUT.db [--force]\n\n"
                 "Imports the raw trace files (*.lrt) of a session folder into a report database:\n"
                 "one kept with 'profile --keep-raw', or kept because a traced process was still\n"
                 "running (then again with --force once it has ended, for all its events).\n\n"
                 "  -o, --output FILE   the database to write (required)\n"
                 "  -f, --force         replace FILE if it exists\n"
                 "  -h, --help          show this help\n");
}

int cmd_import(int argc, char **argv)
{
    const char *output, *session_dir;
    int force;
    int rc = cli_parse_output_command("import", "one SESSION_DIR", print_help, argc, argv, &output,
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
