/* The table of lantern's subcommands: each row maps a name to its cmd_<name>() and its option
 * rows in cmd_<name>.c (adding a subcommand is a file and a row), and the top-level help that
 * lists them. main.c dispatches through it. */
#include "cli/cli.h"

#include <stdio.h>

const struct cli_subcommand cli_subcommands[] = {
    {"profile", cmd_profile, &cli_profile_command,
     "Run a command under Lantern and write a report database"},
    {"start", cmd_start, &cli_start_command,
     "Start a window of a running 'lantern profile' session"},
    {"stop", cmd_stop, &cli_stop_command,
     "End the window of a running session and write its database"},
    {"dump", cmd_dump, &cli_dump_command,
     "Write the ring of a running 'lantern profile --ring' session"},
    {"stats", cmd_stats, &cli_stats_command,
     "Print a report (default nvtx_sum) from a report database"},
    {"export", cmd_export, &cli_export_command,
     "Export a report database (chrome: Perfetto / chrome://tracing JSON)"},
    {"merge", cmd_merge, &cli_merge_command,
     "Merge report databases (one per rank or host) into one"},
    {"import", cmd_import, &cli_import_command,
     "Import a kept raw session folder into a report database"},
    {"kernels", cmd_kernels, &cli_kernels_command,
     "Per-kernel table: layer, op, shapes, FLOPs, bytes, Tensor Cores"},
    {"energy", cmd_energy, &cli_energy_command,
     "Run a command and print its time and energy per GPU and CPU"},
    {"analyze", cmd_analyze, &cli_analyze_command,
     "Expert rules: what to fix, with evidence and estimated cost"},
    {"report", cmd_report, &cli_report_command,
     "Write one self-contained HTML page about a report database"},
    {"upgrade", cmd_upgrade, &cli_upgrade_command,
     "Upgrade a database written by an older Lantern to this schema"},
    {"diff", cmd_diff, &cli_diff_command,
     "Compare runs: what got slower or faster, with confidence intervals"},
    {NULL, NULL, NULL, NULL},
};

void cli_print_usage(FILE *out)
{
    fprintf(out, "Usage: lantern <command> [options]\n\n"
                 "Lantern traces NVTX ranges, CUDA activity and GPU power of a program.\n\n"
                 "Commands:\n");
    for (const struct cli_subcommand *c = cli_subcommands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->help);
    fprintf(out, "\nOptions:\n"
                 "  -h, --help     show this help\n"
                 "  --version      show the version\n\n"
                 "'lantern <command> --help' describes each command.\n"
                 "Example: lantern profile --stats -- ./my_app arg1\n");
}
