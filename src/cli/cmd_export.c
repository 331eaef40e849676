/* lantern export: writes a Lantern database in another tool's format, one of the table of
 * formats (export_formats, src/export/formats.c: chrome, perfetto), which also gives the help's
 * list and the errors' names; the output goes through cli_output (no overwrite without
 * --force, a temporary file renamed into place). */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "export/export.h"
#include "output/fit.h"
#include "output/table.h"

#include <errno.h>
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

struct export_args {
    const char *format, *output;
    int force;
};

static void help_head(FILE *out)
{
    char list[256];
    fprintf(out,
            "Usage: lantern export FILE --format %s [-o OUT] [-f]\n\n"
            "Exports a Lantern database.\n\n",
            format_list(list, sizeof list, "|", 0));
}

/* --format's text: one line per format of the table. */
static const char *format_help(void)
{
    static char text[2048];
    size_t used = (size_t)snprintf(text, sizeof text, "one of:");
    for (size_t i = 0; i < export_format_count && used < sizeof text; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "\n  %-9s %s",
                                 export_formats[i].name, export_formats[i].help);
    return text;
}

/* -o's text: the formats' extensions. */
static const char *output_help(void)
{
    static char text[512];
    char list[256];
    snprintf(text, sizeof text,
             "the file to write (default: FILE with the format's extension\n"
             "(%s) instead of .db; - for stdout)",
             format_list(list, sizeof list, ", ", 1));
    return text;
}

static const struct cli_option export_rows[] = {
    {.long_name = "format",
     .arg = CLI_ARG_REQUIRED,
     .usage = "FMT",
     .set = cli_set_string,
     .offset = offsetof(struct export_args, format),
     .help_text = format_help},
    {.short_name = 'o',
     .long_name = "output",
     .arg = CLI_ARG_REQUIRED,
     .usage = "OUT",
     .set = cli_set_string,
     .offset = offsetof(struct export_args, output),
     .help_text = output_help},
    CLI_FLAG('f', "force", struct export_args, force, "replace OUT if it exists"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

const struct cli_command cli_export_command = {
    .name = "export",
    .rows = export_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
};

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
    struct export_args a = {0};
    int first = 0, rc = cli_options_parse(&cli_export_command, argc, argv, &a, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    const char *format_name = a.format, *output = a.output;
    int force = a.force;
    char names[256];
    format_list(names, sizeof names, ", ", 0);
    /* `-f chrome`, as -f meant before it meant --force in every command (as in nsys) */
    for (int i = first; force && !format_name && first == argc - 2 && i < argc; i++)
        if (export_format_find(argv[i]))
            return cli_usage_error("export", "'-f' means --force; give the format as --format %s",
                                   argv[i]);
    if (first != argc - 1)
        return cli_usage_error("export", "expected one database FILE");
    if (!format_name)
        return cli_usage_error("export", "missing --format (%s)", names);
    const struct export_format *format = export_format_find(format_name);
    if (!format)
        return cli_usage_error("export", "unknown format '%s' (%s)", format_name, names);
    const char *db_path = argv[first];
    char *fallback = output ? NULL : default_output(db_path, format->extension);
    if (!output && !(output = fallback))
        return cli_error("out of memory");
    sqlite3 *db;
    rc = cli_open_db(db_path, &db);
    if (rc == CLI_EXIT_OK) {
        rc = write_export(db, format, output, force);
        sqlite3_close(db);
    }
    free(fallback);
    return rc;
}
