/* What the lantern subcommands share: their entry points (the table is in main.c), the
 * one-line error convention, opening a Lantern database, and running the importer. Exit
 * codes: 0 ok, 1 runtime error (bad file, failed import), 2 usage error; `lantern diff
 * --fail-on-regression` adds 3, a regression found. */
#ifndef LANTERN_CLI_H
#define LANTERN_CLI_H

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>

#include "stats/stats.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_REGRESSION 3

int cmd_profile(int argc, char **argv);
int cmd_start(int argc, char **argv); /* cmd_control.c */
int cmd_stop(int argc, char **argv);  /* cmd_control.c */
int cmd_dump(int argc, char **argv);  /* cmd_control.c */
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_energy(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_upgrade(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* The subcommands (commands.c): name, entry point, option rows (cli_options.h, beside its
 * cmd_<name>()) and the line of the top-level help; ended by a row of NULLs. */
struct cli_subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const struct cli_command *options;
    const char *help;
};
extern const struct cli_subcommand cli_subcommands[];
/* lantern --help: the subcommands and the top-level options. */
void cli_print_usage(FILE *out);

/* Each subcommand's option rows, beside its cmd_<name>(). */
struct cli_command;
extern const struct cli_command cli_profile_command, cli_start_command, cli_stop_command,
    cli_dump_command, cli_stats_command, cli_export_command, cli_import_command,
    cli_kernels_command, cli_energy_command, cli_analyze_command, cli_report_command,
    cli_merge_command, cli_upgrade_command, cli_diff_command;

/* Prints "lantern: <message>" on stderr and returns CLI_EXIT_ERROR. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "lantern: <message>" and "Try 'lantern <cmd> --help'." and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens a Lantern database read-only; one of an older schema through an upgraded copy (src/db/
 * upgrade.h), with one line on stderr saying so. On failure prints the one-line reason
 * ("cannot open 'x.db': not a Lantern database") and returns CLI_EXIT_ERROR. */
int cli_open_db(const char *path, sqlite3 **db);
/* The schema version of a Lantern database: CLI_EXIT_OK with *version (1 .. this one), or
 * CLI_EXIT_ERROR with the reason printed (not one, a newer one). */
int cli_schema_version(const char *path, int *version);
/* rename(2) that replaces an existing name only when asked to (a file system without
 * RENAME_NOREPLACE: link and unlink). 0, or -errno (errno still set). */
int cli_rename_output(const char *from, const char *to, int replace);

/* Text for the terminal (output/fit.h): between cli_fit_begin and cli_fit_end what is written to
 * the stream begin returns is held, then written to out with its long lines wrapped to width
 * (tables were fitted as they were written). With width 0 it is out itself, nothing held. */
struct cli_fit {
    FILE *out, *held;
    char *text;
    size_t len;
    int width;
};
FILE *cli_fit_begin(struct cli_fit *f, FILE *out, int width);
/* Returns 0, or -errno if the held text could not be completed (then nothing was written). */
int cli_fit_end(struct cli_fit *f);

/* The signals that end lantern (SIGINT, SIGTERM, SIGHUP) held during a long write (import,
 * merge), which polls cli_signal_pending (non-zero: one is pending; ctx unused) and stops
 * cleanly; restoring *old with sigprocmask then delivers it. */
void cli_hold_signals(sigset_t *old);
int cli_signal_pending(void *ctx);

/* Imports a session folder into db_path (replacing it when force), printing the importer's
 * warnings and, for long imports, its progress. Returns CLI_EXIT_OK or CLI_EXIT_ERROR. */
int cli_import(const char *session_dir, const char *db_path, int force);
/* The same, keeping only what began inside the windows (lantern profile's start/stop);
 * count 0: everything. */
struct import_window;
int cli_import_windows(const char *session_dir, const char *db_path, int force,
                       const struct import_window *windows, size_t count);

/* An output file (export -o, stats -o) written the way every Lantern output is: an existing
 * file is refused unless force, and the data go to a temporary file in the same folder
 * (FILE.XXXXXX, created without following links) renamed onto FILE when complete, so a failed
 * or interrupted write never leaves a truncated FILE. "-" or NULL is standard output. */
struct cli_output {
    FILE *file;
    const char *path; /* NULL: standard output */
    char *temp;
    int force;
    int error; /* errno of a write that failed, as the writer saw it (stdio forgets it) */
};
/* Returns CLI_EXIT_OK, or CLI_EXIT_ERROR with the reason printed. */
int cli_output_open(struct cli_output *o, const char *path, int force);
/* Completes the file (ok: rename it into place) or discards it; a write error is printed
 * naming the output. Returns CLI_EXIT_OK or CLI_EXIT_ERROR. */
int cli_output_close(struct cli_output *o, int ok);

/* Prints report r of the report table (src/stats/stats.c) from a database file, in format,
 * with sort (stats_ctx.sort, NULL: the report's default) and filter_nvtx (stats_ctx's, NULL:
 * none), a text table fitted into width columns (0: no limit). Returns a CLI_EXIT_* code
 * (errors already printed, except a write error on out, which the caller names: see
 * cli_output). */
int cli_print_stats(const char *db_path, const struct stats_entry *r, enum table_format format,
                    const char *sort, const char *filter_nvtx, int width, FILE *out);

#endif
