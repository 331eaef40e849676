/* lantern export: writes a Lantern database in another tool's format, one of the table of
 * formats (export_formats, src/export/formats.c: chrome, perfetto), which also gives the help's
 * list and the errors' names; the output goes through cli_output (no overwrite without
 * --force, a temporary file renamed into place). */
#include "cli/cli.h"
#include "export/export.h"
#include "output/fit.h"
#include "output/table.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The formats' names (or extensions) joined by sep: "chrome|perfetto", ".json, .perfetto-trace". */
static const char *format_list(char *buf, size_t size, const char *sep, int extensions)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < export_format_count && used < size; i++) {
        const struct export_format *f = &export_formats[i];
        int n = snprintf(buf + used, size - used, "%s%s", i ? sep : "",
                         extensions ? f->extension : f->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

static void print_help(FILE *out)
{
    char list[256];
    fprintf(out,
            "Usage: lantern export FILE --format %s [-o OUT] [-f]\n\n"
            "Exports a Lantern database.\n\n"
            "      --format FMT    one of:\n",
            format_list(list, sizeof list, "|", 0));
    for (size_t i = 0; i < export_format_count; i++)
        fprintf(out, "                        %-9s %s\n", export_formats[i].name,
                export_formats[i].help);
    fprintf(out,
            "  -o, --output OUT    the file to write (default: FILE with the format's extension\n"
            "                      (%s) instead of .db; - for stdout)\n"
            "  -f, --force         replace OUT if it exists\n"
            "  -h, --help          show this help\n",
            format_list(list, sizeof list, ", ", 1));
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
    struct export_stats stats = {0};
    struct cli_output out;
    if (cli_output_open(&out, output, force) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    int rc = format->write(db, out.file, &stats, error, sizeof error);
    if (rc == 0 && stats.left_out)
        fprintf(stderr,
                "lantern: warning: %llu start/end ranges left out (more than 4096 open at once "
                "in one domain)\n",
                stats.left_out);
    if (rc == 0 && stats.gpu_metrics_bucket_ns) {
        char width[32];
        table_format_duration(width, sizeof width, (double)stats.gpu_metrics_bucket_ns);
        fprintf(stderr,
                "lantern: GPU metrics drawn as means over %s where a GPU has more samples than a "
                "counter track holds (the track names say so; docs/export.md)\n",
                width);
    }
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
        {"format", required_argument, NULL, 'F'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format_name = NULL, *output = NULL;
    int c, force = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:fh", options, NULL)) != -1) {
        switch (c) {
        case 'F':
            format_name = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            output_print_wrapped(print_help, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("export", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("export", "unknown option '%s'", argv[optind - 1]);
        }
    }
    char names[256];
    format_list(names, sizeof names, ", ", 0);
    /* `-f chrome`, as -f meant before it meant --force in every command (as in nsys) */
    for (int i = optind; force && !format_name && optind == argc - 2 && i < argc; i++)
        if (export_format_find(argv[i]))
            return cli_usage_error("export", "'-f' means --force; give the format as --format %s",
                                   argv[i]);
    if (optind != argc - 1)
        return cli_usage_error("export", "expected one database FILE");
    if (!format_name)
        return cli_usage_error("export", "missing --format (%s)", names);
    const struct export_format *format = export_format_find(format_name);
    if (!format)
        return cli_usage_error("export", "unknown format '%s' (%s)", format_name, names);
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
