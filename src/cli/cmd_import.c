/* lantern import: turns a kept raw session folder (`profile --keep-raw`, or the folder left
 * behind when the launcher itself was killed) into a report database. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>

static void print_help(void)
{
    printf("Usage: lantern import SESSION_DIR -o OUT.db [--force]\n\n"
           "Imports the raw trace files (*.lrt) of a session folder into a report database.\n\n"
           "  -o, --output FILE   the database to write (required)\n"
           "  -f, --force         replace FILE if it exists\n"
           "  -h, --help          show this help\n");
}

int cmd_import(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int force = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:fh", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            print_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("import", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("import", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("import", "expected one SESSION_DIR");
    if (!output)
        return cli_usage_error("import", "missing -o OUT.db");
    int rc = cli_import(argv[optind], output, force);
    if (rc == CLI_EXIT_OK)
        fprintf(stderr, "lantern: report written to %s\n", output);
    return rc;
}
