/* The lantern command: dispatches to a subcommand of commands.c's table, and answers --help
 * and --version itself. */
#include "cli/cli.h"
#include "launcher/samplers.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("lantern: missing command\n\n", stderr);
        cli_print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, GPU_METRICS_CHILD_COMMAND)) /* the launcher's own, not for users */
        return gpu_metrics_child_main(argc - 1, argv + 1);
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        cli_print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        printf("lantern %s\n", LANTERN_VERSION);
        return CLI_EXIT_OK;
    }
    for (const struct cli_subcommand *c = cli_subcommands; c->name; c++)
        if (!strcmp(name, c->name))
            return c->run(argc - 1, argv + 1);
    fprintf(stderr, "lantern: unknown command '%s'\n\n", name);
    cli_print_usage(stderr);
    return CLI_EXIT_USAGE;
}
