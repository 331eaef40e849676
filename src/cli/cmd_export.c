/* lantern export: writes a Lantern database in another tool's format: chrome (the Chrome
 * trace-event JSON that Perfetto and chrome://tracing open) or perfetto (Perfetto's protobuf
 * trace). A table of formats; the output goes through cli_output (no overwrite without
 * --force, a temporary file renamed into place). */
#include "cli/cli.h"
#include "export/export.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_chrome_format(sqlite3 *db, FILE *out, char *error, size_t error_size)
{
    return export_chrome(db, out, error, error_size);
}

static int write_perfetto_format(sqlite3 *db, FILE *out, char *error, size_t error_size)
{
    struct export_stats stats = {0};
    int rc = export_perfetto(db, out, &stats, error, error_size);
    if (rc == 0 && stats.left_out)
        fprintf(stderr,
                "lantern: warning: %llu start/end ranges left out (more than 4096 open at once "
                "in one domain)\n",
                stats.left_out);
    return rc;
}

static const struct export_format {
    const char *name, *extension, *help;
    int (*write)(sqlite3 *db, FILE *out, char *error, size_t error_size);
} formats[] = {
    {"chrome", ".json", "trace-event JSON for https://ui.perfetto.dev and chrome://tracing",
     write_chrome_format},
    {"perfetto", ".perfetto-trace",
     "Perfetto's protobuf trace (TrackEvent): smaller, opened natively by ui.perfetto.dev and "
     "trace_processor",
     write_perfetto_format},
};
#define FORMATS (sizeof formats / sizeof formats[0])

static void print_help(void)
{
    printf("Usage: lantern export FILE --format chrome|perfetto [-o OUT] [--force]\n\n"
           "Exports a Lantern database.\n\n"
           "  -f, --format FMT    one of:\n");
    for (size_t i = 0; i < FORMATS; i++)
        printf("                        %-9s %s\n", formats[i].name, formats[i].help);
    printf("  -o, --output OUT    the file to write (default: FILE with the format's extension\n"
           "                      (.json, .perfetto-trace) instead of .db; - for stdout)\n"
           "      --force         replace OUT if it exists\n"
           "  -h, --help          show this help\n");
}

/* x.db -> x<extension>; anything else gets the extension appended. */
static char *default_output(const char *db_path, const char *extension)
{
    size_t len = strlen(db_path);
    char *out;
    if (len > 3 && !strcmp(db_path + len - 3, ".db"))
        return asprintf(&out, "%.*s%s", (int)(len - 3), db_path, extension) < 0 ? NULL : out;
    return asprintf(&out, "%s%s", db_path, extension) < 0 ? NULL : out;
}

static int write_export(sqlite3 *db, const struct export_format *format, const char *output,
                        int force)
{
    char error[256] = "";
    struct cli_output out;
    if (cli_output_open(&out, output, force) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    int rc = format->write(db, out.file, error, sizeof error);
    if (rc < 0 && ferror(out.file))
        out.error = errno;
    if (rc < 0 && !ferror(out.file)) { /* a write error is named by cli_output_close */
        cli_output_close(&out, 0);
        return cli_error("cannot export to '%s': %s", output, error);
    }
    if (cli_output_close(&out, rc == 0) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (strcmp(output, "-"))
        fprintf(stderr, "lantern: trace written to %s\n", output);
    return CLI_EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format_name = NULL, *output = NULL;
    int c, force = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:h", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            format_name = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'F':
            force = 1;
            break;
        case 'h':
            print_help();
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("export", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("export", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("export", "expected one database FILE");
    if (!format_name)
        return cli_usage_error("export", "missing --format (chrome, perfetto)");
    const struct export_format *format = NULL;
    for (size_t i = 0; i < FORMATS; i++)
        if (!strcmp(format_name, formats[i].name))
            format = &formats[i];
    if (!format)
        return cli_usage_error("export", "unknown format '%s' (chrome, perfetto)", format_name);
    const char *db_path = argv[optind];
    char *fallback = output ? NULL : default_output(db_path, format->extension);
    if (!output && !(output = fallback))
        return cli_error("out of memory");
    sqlite3 *db;
    int rc = cli_open_db(db_path, &db);
    if (rc == CLI_EXIT_OK) {
        rc = write_export(db, format, output, force);
        sqlite3_close(db);
    }
    free(fallback);
    return rc;
}
