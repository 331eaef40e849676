/* lantern merge: several report databases (one per rank, process or host) into one, with
 * every process, thread, GPU and event, times on the first input's clock (src/db/merge.c). */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "db/import.h"
#include "db/merge.h"

#include <stdio.h>

static void help_head(FILE *out)
{
    fprintf(out,
            "Usage: lantern merge A.db B.db ... -o ALL.db [--force]\n\n"
            "Writes one database with every input's processes, threads, GPUs, strings, NVTX\n"
            "ranges, CUDA and NVML rows, as if one session had recorded them all. Strings and\n"
            "NVTX domains are shared by value, GPUs by uuid; times of inputs from other hosts\n"
            "move onto the first input's clock by each host's wall-clock offset (error: the\n"
            "hosts' NTP offset). meta merged_inputs lists the inputs and their shifts.\n\n");
}

static const struct cli_option merge_rows[] = {
    CLI_OUTPUT_ROWS("OUT", "the merged database (required)",
                    "replace OUT if it exists; merge a database with its copy\n"
                    "(the same session, whose every event would count twice)"),
};

const struct cli_command cli_merge_command = {
    .name = "merge",
    .rows = merge_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
};

int cmd_merge(int argc, char **argv)
{
    const char *output = NULL;
    int force = 0, first = 0;
    int rc = cli_parse_output_options(&cli_merge_command, argc, argv, &output, &force, &first);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (!output)
        return cli_usage_error("merge", "missing -o OUT");
    if (first >= argc)
        return cli_usage_error("merge", "expected one or more databases to merge");
    /* each input is checked as every command checks a database (a Lantern one), and must be
     * of this schema: merge reads the files themselves */
    for (int i = first; i < argc; i++) {
        int version = 0;
        if (cli_schema_version(argv[i], &version) != CLI_EXIT_OK)
            return CLI_EXIT_ERROR;
        if (version < IMPORT_SCHEMA_VERSION)
            return cli_error("cannot merge '%s': schema version %d (an older Lantern): upgrade it "
                             "first with 'lantern upgrade %s'",
                             argv[i], version, argv[i]);
    }
    char err[1024];
    struct merge_options opt = {.force = force, .cancel = cli_signal_pending};
    sigset_t old;
    cli_hold_signals(&old);
    rc = merge_databases((const char *const *)argv + first, (size_t)(argc - first), output, &opt,
                         err, sizeof err) < 0
             ? cli_error("%s", err)
             : CLI_EXIT_OK;
    fflush(stderr);
    sigprocmask(SIG_SETMASK, &old, NULL); /* a pending signal ends lantern here */
    return rc;
}
