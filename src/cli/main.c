/* The lantern command: one table maps each subcommand to its cmd_<name>() in cmd_<name>.c
 * (adding a subcommand is a file and a row). Also --help and --version. */
#include "cli/cli.h"
#include "launcher/samplers.h"

#include <stdio.h>
#include <string.h>

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static const struct subcommand subcommands[] = {
    {"profile", cmd_profile, "Run a command under Lantern and write a report database"},
    {"start", cmd_start, "Start a window of a running 'lantern profile' session"},
    {"stop", cmd_stop, "End the window of a running session and write its database"},
    {"dump", cmd_dump, "Write the ring of a running 'lantern profile --ring' session"},
    {"stats", cmd_stats, "Print a report (default nvtx_sum) from a report database"},
    {"export", cmd_export, "Export a report database (chrome: Perfetto / chrome://tracing JSON)"},
    {"merge", cmd_merge, "Merge report databases (one per rank or host) into one"},
    {"import", cmd_import, "Import a kept raw session folder into a report database"},
    {"kernels", cmd_kernels, "Per-kernel table: layer, op, shapes, FLOPs, bytes, Tensor Cores"},
    {"energy", cmd_energy, "Run a command and print its time and energy per GPU and CPU"},
    {"analyze", cmd_analyze, "Expert rules: what to fix, with evidence and estimated cost"},
    {"report", cmd_report, "Write one self-contained HTML page about a report database"},
    {"upgrade", cmd_upgrade, "Upgrade a database written by an older Lantern to this schema"},
    {"diff", cmd_diff, "Compare runs: what got slower or faster, with confidence intervals"},
    {NULL, NULL, NULL},
};

static void print_usage(FILE *out)
{
    fprintf(out, "Usage: lantern <command> [options]\n\n"
                 "Lantern traces NVTX ranges, CUDA activity and GPU power of a program.\n\n"
                 "Commands:\n");
    for (const struct subcommand *c = subcommands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->help);
    fprintf(out, "\nOptions:\n"
                 "  -h, --help     show this help\n"
                 "  --version      show the version\n\n"
                 "'lantern <command> --help' describes each command.\n"
                 "Example: lantern profile --stats -- ./my_app arg1\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("lantern: missing command\n\n", stderr);
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, GPU_METRICS_CHILD_COMMAND)) /* the launcher's own, not for users */
        return gpu_metrics_child_main(argc - 1, argv + 1);
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        printf("lantern %s\n", LANTERN_VERSION);
        return CLI_EXIT_OK;
    }
    for (const struct subcommand *c = subcommands; c->name; c++)
        if (!strcmp(name, c->name))
            return c->run(argc - 1, argv + 1);
    fprintf(stderr, "lantern: unknown command '%s'\n\n", name);
    print_usage(stderr);
    return CLI_EXIT_USAGE;
}
