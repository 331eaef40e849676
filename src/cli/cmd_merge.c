/* lantern merge: several report databases (one per rank, process or host) into one, with
 * every process, thread, GPU and event, times on the first input's clock (src/db/merge.c). */
#include "cli/cli.h"
#include "db/merge.h"

#include <getopt.h>
#include <stdio.h>

static void print_help(void)
{
    printf("Usage: lantern merge A.db B.db ... -o ALL.db [--force]\n\n"
           "Writes one database with every input's processes, threads, GPUs, strings, NVTX\n"
           "ranges, CUDA and NVML rows, as if one session had recorded them all. Strings and\n"
           "NVTX domains are shared by value, GPUs by uuid; times of inputs from other hosts\n"
           "move onto the first input's clock by each host's wall-clock offset (error: the\n"
           "hosts' NTP offset). meta merged_inputs lists the inputs and their shifts.\n\n"
           "  -o, --output OUT    the merged database (required)\n"
           "  -f, --force         replace OUT if it exists\n"
           "  -h, --help          show this help\n");
}

int cmd_merge(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int c, force = 0;
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
            return cli_usage_error("merge", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("merge", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!output)
        return cli_usage_error("merge", "missing -o OUT");
    if (optind >= argc)
        return cli_usage_error("merge", "expected one or more databases to merge");
    /* each input is checked as every command checks a database (a Lantern one, this schema) */
    for (int i = optind; i < argc; i++) {
        sqlite3 *db = NULL;
        if (cli_open_db(argv[i], &db) != CLI_EXIT_OK)
            return CLI_EXIT_ERROR;
        sqlite3_close(db);
    }
    char err[1024];
    if (merge_databases((const char *const *)argv + optind, (size_t)(argc - optind), output, force,
                        err, sizeof err) < 0)
        return cli_error("%s", err);
    return CLI_EXIT_OK;
}
