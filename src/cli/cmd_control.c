/* lantern start / lantern stop: start and end a window of a running `lantern profile` session
 * from another shell (docs/long-runs.md). Both find the session (a pid, a session folder, or
 * the one running: launcher_control_find), send its launcher the trigger (SIGUSR1, SIGUSR2:
 * the kernel lets only the same user do so) and wait, reading the session's control file,
 * until it took effect: a start until the agents record, a stop until the window's database
 * is written. One file for the two subcommands: they differ by one signal and what they wait
 * for. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "launcher/launcher.h"
#include "trace/control.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct control_args {
    const char *session;
    double timeout_s;
};

static void start_head(FILE *out)
{
    fprintf(out, "Usage: lantern start [PID | --session DIR] [--timeout SEC]\n\n"
                 "Starts a window of a running 'lantern profile' session: its programs record\n"
                 "from now until 'lantern stop'.\n\n");
}

static void stop_head(FILE *out)
{
    fprintf(out, "Usage: lantern stop [PID | --session DIR] [--timeout SEC]\n\n"
                 "Ends the window of a running 'lantern profile' session that records, and\n"
                 "waits until its database is written (-o FILE, %%n numbering the windows).\n\n");
}

static void dump_head(FILE *out)
{
    fprintf(out, "Usage: lantern dump [PID | --session DIR] [--timeout SEC]\n\n"
                 "Writes the ring of a running 'lantern profile --ring SEC' session, its last SEC\n"
                 "seconds, into its next database (-o FILE, %%n numbering the dumps), and waits\n"
                 "until it is written.\n\n");
}

static void start_tail(FILE *out)
{
    fprintf(out, "\nThe same as 'kill -USR1' to lantern. docs/long-runs.md\n");
}

static void stop_tail(FILE *out)
{
    fprintf(out, "\nThe same as 'kill -USR2' to lantern. docs/long-runs.md\n");
}

/* The rows of the three, which differ by --timeout's default and words. */
#define CONTROL_ROWS(timeout_help)                                                                 \
    CLI_LINE("PID", "lantern's pid, or that of a program it traces (default: the one\n"            \
                    "'lantern profile' session of yours that runs)"),                              \
        CLI_STRING(0, "session", "DIR", struct control_args, session,                              \
                   "the session folder (FILE.raw), or the database FILE"),                         \
        {.long_name = "timeout",                                                                   \
         .arg = CLI_ARG_REQUIRED,                                                                  \
         .usage = "SEC",                                                                           \
         .set = cli_set_real,                                                                      \
         .offset = offsetof(struct control_args, timeout_s),                                       \
         .help = timeout_help,                                                                     \
         .min = 0,                                                                                 \
         .max = 1e6,                                                                               \
         .error = "--timeout needs seconds (0 to 1000000)"},                                       \
        CLI_HELP_ROW, CLI_ROWS_END

static const struct cli_option start_rows[] = {
    CONTROL_ROWS("how long to wait for it to take effect (default 5)")};
static const struct cli_option stop_rows[] = {
    CONTROL_ROWS("how long to wait for it to take effect (default 600)")};
static const struct cli_option dump_rows[] = {
    CONTROL_ROWS("how long to wait for it (default 600)")};

const struct cli_command cli_start_command = {
    .name = "start",
    .rows = start_rows,
    .column = 20,
    .help_head = start_head,
    .help_tail = start_tail,
};
const struct cli_command cli_stop_command = {
    .name = "stop",
    .rows = stop_rows,
    .column = 20,
    .help_head = stop_head,
    .help_tail = stop_tail,
};
const struct cli_command cli_dump_command = {
    .name = "dump",
    .rows = dump_rows,
    .column = 20,
    .help_head = dump_head,
    .help_tail = start_tail, /* dump is SIGUSR1 too */
};

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* lantern dump: SIGUSR1 to the launcher of a --ring session, then the wait for its database. */
static int ring_dump_now(const struct trace_control *ctl, const char *dir, int launcher_pid,
                         double timeout_s)
{
    if (!ctl->ring_ns)
        return cli_error("'%s' is not a --ring session ('lantern stop' writes a window)", dir);
    uint64_t written = __atomic_load_n(&ctl->dumps_written, __ATOMIC_ACQUIRE);
    uint64_t failed = __atomic_load_n(&ctl->dumps_failed, __ATOMIC_ACQUIRE);
    if (kill(launcher_pid, SIGUSR1) < 0)
        return errno == EPERM
                   ? cli_error("session '%s' belongs to another user", dir)
                   : cli_error("cannot signal lantern (pid %d): %s", launcher_pid, strerror(errno));
    for (long waited = 0; __atomic_load_n(&ctl->dumps_written, __ATOMIC_ACQUIRE) <= written;
         waited += 5) {
        if (__atomic_load_n(&ctl->ended, __ATOMIC_ACQUIRE))
            return cli_error("the program of '%s' ended first: its ring is written as lantern "
                             "ends",
                             dir);
        if (waited >= (long)(timeout_s * 1000))
            return cli_error("'%s' did not write its ring within %g s (--timeout); lantern (pid "
                             "%d) does as soon as it can",
                             dir, timeout_s, launcher_pid);
        sleep_ms(5);
    }
    if (__atomic_load_n(&ctl->dumps_failed, __ATOMIC_ACQUIRE) > failed)
        return cli_error("the ring of '%s' could not be written (lantern said why)", dir);
    fprintf(stderr, "lantern: dump %llu written to %s\n",
            (unsigned long long)__atomic_load_n(&ctl->dumps_written, __ATOMIC_ACQUIRE),
            ctl->last_dump);
    return CLI_EXIT_OK;
}

static int control(int argc, char **argv, const struct cli_command *command)
{
    const char *name = command->name, *pid = NULL;
    int start = !strcmp(name, "start"), dump = !strcmp(name, "dump");
    struct control_args a = {.timeout_s = start ? 5 : 600};
    int first = 0, rc = cli_options_parse(command, argc, argv, &a, &first);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (first < argc)
        pid = argv[first++];
    if (first < argc || (pid && a.session))
        return cli_usage_error(name, "give one PID or --session DIR");
    const char *session = a.session;
    double timeout_s = a.timeout_s;

    char dir[4096], error[1024], path[4200];
    int launcher_pid;
    if (launcher_control_find(pid, session, dir, sizeof dir, &launcher_pid, error, sizeof error) <
        0)
        return cli_error("%s", error);
    snprintf(path, sizeof path, "%s/" TRACE_CONTROL_FILE, dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    void *map = fd < 0 ? MAP_FAILED : mmap(NULL, TRACE_CONTROL_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED)
        return cli_error("cannot read '%s': %s", path, strerror(errno));
    const struct trace_control *ctl = map;
    rc = CLI_EXIT_OK;
    if (dump || ctl->ring_ns) {
        rc = dump ? ring_dump_now(ctl, dir, launcher_pid, timeout_s)
                  : cli_error("'%s' is a --ring session: 'lantern dump' writes its last %g s", dir,
                              (double)ctl->ring_ns / 1e9);
        goto out;
    }
    uint32_t recording = __atomic_load_n(&ctl->recording, __ATOMIC_ACQUIRE);
    uint64_t written = __atomic_load_n(&ctl->written, __ATOMIC_ACQUIRE);
    uint64_t failed = __atomic_load_n(&ctl->failed, __ATOMIC_ACQUIRE);
    if (recording == (uint32_t)start) {
        fprintf(stderr, "lantern: '%s' is %s (window %llu)\n", dir,
                start ? "already recording" : "not recording", (unsigned long long)ctl->window);
        goto out;
    }
    if (kill(launcher_pid, start ? SIGUSR1 : SIGUSR2) < 0) {
        rc = errno == EPERM
                 ? cli_error("session '%s' belongs to another user", dir)
                 : cli_error("cannot signal lantern (pid %d): %s", launcher_pid, strerror(errno));
        goto out;
    }
    long waited = 0, limit = (long)(timeout_s * 1000);
    for (;; waited += 5) {
        int ended = __atomic_load_n(&ctl->ended, __ATOMIC_ACQUIRE);
        int done = start ? __atomic_load_n(&ctl->recording, __ATOMIC_ACQUIRE) == 1
                         : __atomic_load_n(&ctl->written, __ATOMIC_ACQUIRE) > written;
        if (done)
            break;
        if (ended) {
            rc = cli_error("the program of '%s' ended first: its last window is written as "
                           "lantern ends",
                           dir);
            goto out;
        }
        if (waited >= limit) {
            rc = cli_error("'%s' did not %s within %g s (--timeout); lantern (pid %d) takes it "
                           "as soon as it can",
                           dir, start ? "start recording" : "write its window", timeout_s,
                           launcher_pid);
            goto out;
        }
        sleep_ms(5);
    }
    if (start)
        fprintf(stderr, "lantern: recording window %llu of '%s'\n", (unsigned long long)ctl->window,
                dir);
    else if (ctl->single_file)
        fprintf(stderr,
                "lantern: window %llu ended; '%s' writes every window at its end "
                "(--single-file)\n",
                (unsigned long long)ctl->window, dir);
    else if (__atomic_load_n(&ctl->failed, __ATOMIC_ACQUIRE) > failed)
        rc = cli_error("window %llu of '%s' could not be written (lantern said why)",
                       (unsigned long long)ctl->window, dir);
    else
        fprintf(stderr, "lantern: window %llu written to %s\n", (unsigned long long)ctl->window,
                ctl->last_output);
out:
    munmap(map, TRACE_CONTROL_BYTES);
    return rc;
}

int cmd_start(int argc, char **argv)
{
    return control(argc, argv, &cli_start_command);
}

int cmd_stop(int argc, char **argv)
{
    return control(argc, argv, &cli_stop_command);
}

int cmd_dump(int argc, char **argv)
{
    return control(argc, argv, &cli_dump_command);
}
