/* lantern energy: runs a command and prints its time and energy per GPU (and per CPU package
 * and its DRAM where RAPL is readable), measured with the public API of lantern.h: one energy
 * window around the whole command. The command's output is left alone; the summary goes to
 * stderr, like time(1). */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "lantern.h"
#include "output/fit.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

struct energy_options {
    const char *gpus, *cpus;
    unsigned int flags;
    char **command;
};

static void help_head(FILE *out)
{
    fprintf(out, "Usage: lantern energy [options] [--] COMMAND [ARGS...]\n\n"
                 "Runs COMMAND and prints its time and energy: per GPU from the energy counter\n"
                 "interpolated with power samples, per CPU package and DRAM from RAPL.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out, "\nlantern exits with COMMAND's status (128+N if killed by signal N).\n");
}

static int set_power_only(const char *cmd, const struct cli_option *row, void *options,
                          const char *value)
{
    (void)cmd, (void)row, (void)value;
    ((struct energy_options *)options)->flags |= LANTERN_POWER_ONLY;
    return 0;
}

static const struct cli_option energy_rows[] = {
    CLI_STRING(0, "gpus", "LIST", struct energy_options, gpus,
               "CUDA indices or UUIDs, comma-separated (default: all visible)"),
    CLI_STRING(0, "cpus", "LIST", struct energy_options, cpus,
               "CPU packages, or 'none' (default: all with readable RAPL)"),
    CLI_CALL(0, "power-only", CLI_ARG_NONE, NULL, set_power_only,
             "integrate power instead of reading the energy counter (the\n"
             "method for GPUs older than Volta)"),
    CLI_HELP_ROW,
    CLI_ROWS_END,
};

const struct cli_command cli_energy_command = {
    .name = "energy",
    .rows = energy_rows,
    .stop_at_operand = 1,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

static int parse_options(int argc, char **argv, struct energy_options *o)
{
    int first = 0, rc = cli_options_parse(&cli_energy_command, argc, argv, o, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return cli_usage_error("energy", "missing the command to run");
    o->command = argv + first;
    return 0;
}

/* Runs the command to its end; Ctrl-C reaches it directly (same process group) and the
 * summary is still printed. Returns its exit status (128+N if killed), or -errno (it could
 * not start). */
static int run_to_end(char **command)
{
    pid_t pid;
    int err = posix_spawnp(&pid, command[0], NULL, NULL, command, environ);
    if (err) {
        cli_error("cannot run '%s': %s", command[0], strerror(err));
        return -err;
    }
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* Each GPU's energy; returns how many were measured. */
static int print_gpus(const lantern_measurement *r, double *total)
{
    int measured = 0;
    for (int i = 0; i < lantern_measurement_gpu_count(r); i++) {
        double j, error;
        int index = lantern_measurement_gpu_index(r, i);
        if (lantern_measurement_gpu_energy(r, i, &j, &error) != LANTERN_OK) {
            fprintf(stderr, "GPU %d:          no samples\n", index);
            continue;
        }
        double seconds = lantern_measurement_time(r);
        unsigned int flags = lantern_measurement_gpu_flags(r, i);
        fprintf(stderr,
                "GPU %d:          %.3f J (± %.3f J), %.1f W average, %d counter updates%s\n", index,
                j, error, seconds > 0 ? j / seconds : 0, lantern_measurement_gpu_updates(r, i),
                flags & LANTERN_ENERGY_POWER_ONLY ? ", power integrated" : "");
        *total += j;
        measured++;
    }
    return measured;
}

/* Each CPU package's and DRAM's energy; returns how many were measured. */
static int print_cpus(const lantern_measurement *r, double *total)
{
    int measured = 0;
    for (int i = 0; i < lantern_measurement_cpu_count(r); i++) {
        double j;
        int index = lantern_measurement_cpu_index(r, i);
        if (lantern_measurement_cpu_energy(r, i, &j) == LANTERN_OK) {
            fprintf(stderr, "CPU package %d:  %.3f J\n", index, j);
            *total += j;
            measured++;
        } else {
            fprintf(stderr, "CPU package %d:  not readable (RAPL needs root on Linux >= 5.10)\n",
                    index);
        }
        if (lantern_measurement_dram_energy(r, i, &j) == LANTERN_OK) {
            fprintf(stderr, "DRAM %d:         %.3f J\n", index, j);
            *total += j;
            measured++;
        }
    }
    return measured;
}

int cmd_energy(int argc, char **argv)
{
    struct energy_options o = {0};
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    lantern_monitor *m;
    rc = lantern_monitor_open(o.gpus, o.cpus, o.flags | LANTERN_NO_NVTX, &m);
    if (rc != LANTERN_OK)
        return cli_error("cannot measure: %s",
                         *lantern_errdetail() ? lantern_errdetail() : lantern_strerror(rc));
    if (*lantern_monitor_disabled_reason(m))
        fprintf(stderr, "lantern: GPU energy not measured: %s\n",
                lantern_monitor_disabled_reason(m));
    lantern_measurement *r = NULL;
    lantern_window_push(m);
    int status = run_to_end(o.command);
    lantern_window_pop(m, &r);
    if (status >= 0 && r) {
        double total = 0;
        fprintf(stderr, "Time:           %.3f s\n", lantern_measurement_time(r));
        int measured = print_gpus(r, &total);
        measured += print_cpus(r, &total);
        if (measured)
            fprintf(stderr, "Total:          %.3f J\n", total);
        else /* never "0 J": nothing was there to read */
            fputs("Energy:         not measured (no GPU energy, no readable RAPL package)\n",
                  stderr);
    }
    lantern_measurement_free(r);
    lantern_monitor_close(m);
    return status < 0 ? 127 : status;
}
