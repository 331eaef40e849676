/* lantern upgrade: a database written by an older Lantern (an older schema) rewritten at this
 * schema (src/db/upgrade.h), in place or into -o OUT, through a temporary file beside it that is
 * renamed into place when complete. Every command reads old databases anyway, through an
 * upgraded copy each time; this does it once. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "db/import.h"
#include "db/upgrade.h"
#include "output/fit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help_head(FILE *out)
{
    fprintf(out,
            "Usage: lantern upgrade FILE [-o OUT] [-f]\n\n"
            "Rewrites a database that an older Lantern wrote (schema version %d to %d) at this\n"
            "Lantern's schema (%d), keeping every row; the columns added since are filled where\n"
            "the rows tell them, else left unknown. Without it, every command reads such a file\n"
            "through an upgraded copy made each time. docs/schema.md, \"Compatibility\".\n\n",
            UPGRADE_OLDEST_SCHEMA, IMPORT_SCHEMA_VERSION - 1, IMPORT_SCHEMA_VERSION);
}

static const struct cli_option upgrade_rows[] = {
    CLI_OUTPUT_ROWS("OUT", "write the upgraded database to OUT (default: FILE itself)",
                    "replace OUT if it exists"),
};

const struct cli_command cli_upgrade_command = {
    .name = "upgrade",
    .rows = upgrade_rows,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
};

/* The upgraded database into a new temporary file beside target, made durable. Returns its
 * name (malloc'd), or NULL with the reason printed. */
static char *upgrade_beside(const char *path, int version, const char *target)
{
    char *temp = NULL, err[512];
    if (asprintf(&temp, "%s.XXXXXX", target) < 0) {
        cli_error("cannot write '%s': out of memory", target);
        return NULL;
    }
    int fd = mkstemp(temp); /* O_EXCL: never an existing file or a link */
    if (fd < 0) {
        cli_error("cannot write '%s': %s", target, strerror(errno));
        free(temp);
        return NULL;
    }
    int ok = upgrade_database(path, version, temp, err, sizeof err) == 0;
    if (!ok)
        cli_error("cannot upgrade '%s': %s", path, err);
    else if (fsync(fd) < 0)
        ok = 0, cli_error("cannot write '%s': %s", target, strerror(errno));
    close(fd);
    if (ok && !cli_signal_pending(NULL))
        return temp;
    unlink(temp);
    free(temp);
    return NULL;
}

int cmd_upgrade(int argc, char **argv)
{
    const char *output, *path;
    int force, version = 0;
    int rc = cli_parse_output_command(&cli_upgrade_command, "one database FILE", argc, argv,
                                      &output, &force, &path);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (cli_schema_version(path, &version) != CLI_EXIT_OK)
        return CLI_EXIT_ERROR;
    if (version == IMPORT_SCHEMA_VERSION) {
        fprintf(stderr, "lantern: '%s' is already of schema version %d: nothing to do\n", path,
                version);
        return CLI_EXIT_OK;
    }
    const char *target = output ? output : path;
    if (output && !force && access(output, F_OK) == 0)
        return cli_error("'%s' exists (use --force to replace it)", output);
    sigset_t old;
    cli_hold_signals(&old); /* an interrupted upgrade leaves no temporary file */
    char *temp = upgrade_beside(path, version, target);
    /* the file given is the one to replace: that is what upgrading in place asks */
    if (temp && cli_rename_output(temp, target, force || !output) < 0) {
        rc = cli_error("cannot write '%s': %s", target,
                       errno == EEXIST ? "it exists (use --force to replace it)" : strerror(errno));
        unlink(temp);
    } else if (temp) {
        fprintf(stderr, "lantern: '%s' upgraded from schema version %d to %d%s%s\n", path, version,
                IMPORT_SCHEMA_VERSION, output ? " into " : "", output ? output : "");
    } else {
        rc = CLI_EXIT_ERROR;
    }
    free(temp);
    fflush(stderr);
    sigprocmask(SIG_SETMASK, &old, NULL); /* a pending signal ends lantern here */
    return rc;
}
