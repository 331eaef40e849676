/* lantern report: writes the self-contained HTML page of a database (src/report/html). The
 * page goes to a temporary file beside the output and is renamed into place, so a reader
 * never sees half a page; an existing file is kept unless --force. */
#include "cli/cli.h"
#include "report/html/html.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_help(void)
{
    printf("Usage: lantern report FILE [-o OUT.html] [--force]\n\n"
           "Writes one self-contained HTML page (no network needed to open it): the session,\n"
           "a timeline overview per GPU, where the time went, the `lantern analyze` findings\n"
           "most costly first with their evidence, and energy per range and kernel.\n\n"
           "  -o, --output OUT    the page (default: FILE with .html instead of .db)\n"
           "  -f, --force         replace OUT if it exists\n"
           "  -h, --help          show this help\n");
}

/* x.db -> x.html; anything else gets .html appended. */
static char *default_output(const char *db_path)
{
    size_t len = strlen(db_path);
    char *out;
    if (len > 3 && !strcmp(db_path + len - 3, ".db"))
        return asprintf(&out, "%.*s.html", (int)(len - 3), db_path) < 0 ? NULL : out;
    return asprintf(&out, "%s.html", db_path) < 0 ? NULL : out;
}

/* Writes the page into a new temporary file next to output, then moves it into place:
 * rename() with --force (a symlink at output is replaced, never followed), else link(),
 * which fails rather than replace a file that appeared meanwhile. */
static int write_page(sqlite3 *db, const char *output, int force)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.XXXXXX", output) < 0)
        return cli_error("out of memory");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = cli_error("cannot write '%s': %s", output, strerror(errno));
        free(tmp);
        return rc;
    }
    mode_t mask = umask(0); /* mkstemp makes 0600; a page is as readable as any new file */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *out = fdopen(fd, "w");
    char error[256] = "";
    int rc = out ? html_report_write(db, out, error, sizeof error) : -1;
    if (!out) {
        snprintf(error, sizeof error, "%s", strerror(errno));
        close(fd);
    } else if ((fflush(out) != 0 || fsync(fileno(out)) != 0 || fclose(out) != 0) && rc == 0) {
        snprintf(error, sizeof error, "%s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && force && rename(tmp, output) < 0) {
        snprintf(error, sizeof error, "%s", strerror(errno));
        rc = -1;
    } else if (rc == 0 && !force) {
        if (link(tmp, output) < 0) {
            snprintf(error, sizeof error, "%s",
                     errno == EEXIST ? "it exists (use --force to "
                                       "replace it)"
                                     : strerror(errno));
            rc = -1;
        }
    }
    if (rc < 0 || !force)
        unlink(tmp);
    free(tmp);
    if (rc < 0)
        return cli_error("cannot write '%s': %s", output, error);
    fprintf(stderr, "lantern: report written to %s\n", output);
    return CLI_EXIT_OK;
}

int cmd_report(int argc, char **argv)
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
            return cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("report", "expected one database FILE");
    const char *db_path = argv[optind];
    char *fallback = output ? NULL : default_output(db_path);
    if (!output && !(output = fallback))
        return cli_error("out of memory");
    struct stat st;
    int rc;
    if (!force && lstat(output, &st) == 0) {
        rc = cli_error("'%s' exists (use --force to replace it)", output);
    } else {
        sqlite3 *db;
        rc = cli_open_db(db_path, &db);
        if (rc == CLI_EXIT_OK) {
            rc = write_page(db, output, force);
            sqlite3_close(db);
        }
    }
    free(fallback);
    return rc;
}
