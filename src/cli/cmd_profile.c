/* lantern profile: runs a command under Lantern. This file parses the options; the capture
 * (session folder, the agent's environment, fork/exec and signals, samplers, launcher.lrt) is
 * src/launcher/ (launcher.h), then the raw files are imported into the report database. */
#include "cli/cli.h"
#include "cli/cli_options.h"
#include "cli/profile_windows.h"
#include "launcher/launcher.h"
#include "output/fit.h"
#include "trace/gpu_metrics.h"
#include "trace/list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct profile_options {
    struct launcher_options launch; /* what the launcher does (src/launcher/launcher.h) */
    long capture_repeat;            /* --capture-range-end=repeat[:N]: N, -1 none, 0 all */
    int stats, keep_raw;
    int gpu_metrics;                /* --gpu-metrics given */
    const char *gpu_metrics_option; /* a --gpu-metrics-* option given (for its error) */
    char trace[256];                /* the -t list with gpu_metrics added */
    const char *sample;             /* --sample: cpu or none (NULL: -t decides) */
    char sampled_trace[256];        /* the -t list with cpu added or taken out */
};

/* The metric names --gpu-metrics accepts, comma-separated (src/trace/gpu_metrics.def). */
static const char *gpu_metric_columns(void)
{
    static char list[512];
    size_t len = 0;
    if (list[0])
        return list;
    for (int i = 0; i < GPU_METRIC_COUNT; i++)
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s",
                                i ? "," : "", gpu_metrics[i].column);
    return list;
}

static void help_head(FILE *out)
{
    fprintf(out, "Usage: lantern profile [options] [--] COMMAND [ARGS...]\n\n"
                 "Runs COMMAND under Lantern and writes a report database.\n\n");
}

static void help_tail(FILE *out)
{
    fprintf(out,
            "\nSignals sent to lantern (kill: INT, TERM, HUP) are forwarded to COMMAND; a Ctrl-C\n"
            "reaches COMMAND directly. lantern exits with COMMAND's status (128+N if killed by\n"
            "signal N), even when its own import fails: then FILE.raw/ is kept, and stderr says\n"
            "how to import it.\n"
            "Environment: LANTERN_AGENT overrides the agent library's path.\n");
}

/* ---- the computed help texts --------------------------------------------------------------- */

static const char *trace_help(void)
{
    static char text[1024];
    const struct launcher_trace_names *n = launcher_trace_names();
    snprintf(text, sizeof text,
             "what to trace, comma-separated: %s (default\n"
             "%s where an NVIDIA GPU is present, else %s; and %s\n"
             "where it works)",
             n->known, n->default_gpu, n->default_no_gpu, n->sampled);
    return text;
}

static const char *gpu_metrics_help(void)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "sample GPU hardware metrics (-t gpu_metrics): SM\n"
             "activity, warp occupancy, Tensor Cores, DRAM, PCIe, NVLink;\n"
             "LIST picks some: %s",
             gpu_metric_columns());
    return text;
}

static const char *wait_timeout_help(void)
{
    static char text[128];
    snprintf(text, sizeof text, "wait at most SEC seconds for them (default %g)",
             LAUNCHER_WAIT_TIMEOUT_S);
    return text;
}

/* ---- the setters of the rows that need more than cli_options.h's ---------------------------- */

#define PROFILE_SETTER(name)                                                                       \
    static int name(const char *cmd, const struct cli_option *row, void *options, const char *value)

PROFILE_SETTER(set_trace)
{
    struct profile_options *p = options;
    (void)cmd, (void)row;
    p->launch.trace = value;
    p->launch.trace_given = 1;
    return 0;
}

/* the rate's leading number: "100x" is 100, as strtod reads it */
PROFILE_SETTER(set_nvml_rate)
{
    struct profile_options *p = options;
    p->launch.nvml_rate = strtod(value, NULL);
    if (!(p->launch.nvml_rate > 0 && p->launch.nvml_rate <= 10000))
        return cli_usage_error(cmd, "%s", row->error);
    return 0;
}

/* --delay, --duration: seconds >= 0 (an empty text is 0) */
PROFILE_SETTER(set_seconds)
{
    char *end;
    double v = strtod(value, &end);
    if (*end || !(v >= 0))
        return cli_usage_error(cmd, "%s", row->error);
    *(double *)((char *)options + row->offset) = v;
    return 0;
}

PROFILE_SETTER(set_patterns)
{
    if (!value[strspn(value, ", ")])
        return cli_usage_error(cmd, "%s", row->error);
    return cli_set_string(cmd, row, options, value);
}

/* --osrt-threshold, --osrt-backtrace-*: up to 15 digits, handed to the agent as written */
PROFILE_SETTER(set_digits)
{
    if (!*value || value[strspn(value, "0123456789")] || strlen(value) > 15)
        return cli_usage_error(cmd, "%s", row->error);
    return cli_set_string(cmd, row, options, value);
}

PROFILE_SETTER(set_gpu_metrics)
{
    struct profile_options *p = options;
    const char *bad;
    (void)row;
    p->launch.gpu_metrics = gpu_metrics_parse(value ? value : "all", &bad);
    if (!p->launch.gpu_metrics)
        return cli_usage_error(cmd, "--gpu-metrics: unknown metric '%.*s' (known: %s)",
                               (int)strcspn(bad, ","), bad, gpu_metric_columns());
    p->gpu_metrics = 1;
    return 0;
}

/* The --gpu-metrics-* settings: checked as the generic kinds, and remembered for the error
 * when --gpu-metrics is not given. */
static int gpu_metrics_setting(const struct cli_option *row, void *options, int rc)
{
    if (rc == 0)
        ((struct profile_options *)options)->gpu_metrics_option = row->long_name;
    return rc;
}

PROFILE_SETTER(set_gpu_metrics_real)
{
    return gpu_metrics_setting(row, options, cli_set_real(cmd, row, options, value));
}

PROFILE_SETTER(set_gpu_metrics_choice)
{
    return gpu_metrics_setting(row, options, cli_set_choice(cmd, row, options, value));
}

PROFILE_SETTER(set_gpu_metrics_devices)
{
    return gpu_metrics_setting(
        row, options, cli_set_string(cmd, row, options, strcmp(value, "all") ? value : NULL));
}

/* stop, repeat (every instance) or repeat:N */
PROFILE_SETTER(set_capture_end)
{
    struct profile_options *p = options;
    char *end = NULL;
    if (!strcmp(value, "stop"))
        p->capture_repeat = -1;
    else if (!strcmp(value, "repeat"))
        p->capture_repeat = 0;
    else if (strncmp(value, "repeat:", 7) ||
             (p->capture_repeat = strtol(value + 7, &end, 10)) <= 0 || *end)
        return cli_usage_error(cmd, "%s", row->error);
    return 0;
}

/* ---- the rows: src/launcher/profile_options.def ------------------------------------------- */

#define LAUNCH(member) offsetof(struct profile_options, launch.member)
#define PROFILE(member) offsetof(struct profile_options, member)
#define NO_FIELD 0
#define STRING .set = cli_set_string
#define FLAG .set = cli_set_flag
#define HELP .set = cli_set_help
#define LINE .set = NULL
#define CHOICE(words, message) .set = cli_set_choice, .choices = words, .error = message
#define CHOICE_BOOL(words, message) .set = cli_set_choice_bool, .choices = words, .error = message
#define REAL(low, high, message) .set = cli_set_real, .min = low, .max = high, .error = message
#define UNSIGNED(low, high, message)                                                               \
    .set = cli_set_unsigned, .min = low, .max = high, .error = message
#define CALL(setter, message) .set = setter, .error = message
#define CALL_REAL(setter, low, high, message)                                                      \
    .set = setter, .min = low, .max = high, .error = message
#define CALL_CHOICE(setter, words, message) .set = setter, .choices = words, .error = message
#define TEXT(text) .help = text
#define TEXT_FN(fn) .help_text = fn
#define PROFILE_OPTION(source, short_flag, long_flag, argument, value_name, check, field, env,     \
                       help_text, doc)                                                             \
    {.short_name = short_flag,                                                                     \
     .long_name = long_flag,                                                                       \
     .arg = CLI_ARG_##argument,                                                                    \
     .usage = value_name,                                                                          \
     check,                                                                                        \
     .offset = field,                                                                              \
     help_text},

static const struct cli_option profile_rows[] = {
#include "launcher/profile_options.def"
    CLI_ROWS_END,
};

const struct cli_command cli_profile_command = {
    .name = "profile",
    .rows = profile_rows,
    .stop_at_operand = 1,
    .column = 22,
    .short_slot = 1,
    .help_head = help_head,
    .help_tail = help_tail,
};

/* ---- options ------------------------------------------------------------------------- */

/* list without the item name, into out. */
static void list_without(const char *list, const char *name, char *out, size_t size)
{
    size_t len = 0, name_len = strlen(name);
    out[0] = '\0';
    for (const char *item = list; *item;) {
        size_t n = strcspn(item, ",");
        if ((n != name_len || strncmp(item, name, n)) && len + n + 2 < size) {
            len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? "," : "", (int)n, item);
        }
        item += n + (item[n] == ',');
    }
}

/* The options that go together: each error names the pair. */
static int check_combinations(const struct profile_options *p)
{
    const struct launcher_options *o = &p->launch;
    if (p->capture_repeat >= 0 && !o->capture_range)
        return cli_usage_error("profile", "--capture-range-end=repeat needs "
                                          "--capture-range=nvtx:NAME or cudaProfilerApi");
    if (p->capture_repeat >= 0 && o->start_paused)
        return cli_usage_error("profile", "--capture-range-end=repeat and --start-paused: "
                                          "choose one");
    if (o->ring_trigger && !(o->ring_s > 0))
        return cli_usage_error("profile", "--ring-trigger needs --ring SEC");
    if (o->ring_s > 0 && (o->start_paused || o->single_file || p->capture_repeat >= 0))
        return cli_usage_error("profile", "--ring records all the time and writes a database per "
                                          "dump: not with --start-paused, --single-file or "
                                          "--capture-range-end=repeat");
    return 0;
}

/* The -t list, with --gpu-metrics's gpu_metrics and --sample's cpu added or taken out, and the
 * options that need a source in it. */
static int settle_trace(struct profile_options *p)
{
    struct launcher_options *o = &p->launch;
    if (!o->trace)
        o->trace = launcher_default_trace();
    if (!launcher_trace_valid(o->trace))
        return cli_usage_error("profile", "unknown trace source in '%s' (known: %s)", o->trace,
                               launcher_trace_names()->known);
    /* --gpu-metrics is -t's gpu_metrics, with its settings */
    if (p->gpu_metrics && !trace_list_has(o->trace, "gpu_metrics")) {
        snprintf(p->trace, sizeof p->trace, "%s%sgpu_metrics", o->trace, *o->trace ? "," : "");
        o->trace = p->trace;
    }
    /* --sample is -t's cpu, as nsys's -s is beside its -t */
    if (p->sample && !strcmp(p->sample, "cpu") && !trace_list_has(o->trace, "cpu")) {
        snprintf(p->sampled_trace, sizeof p->sampled_trace, "%s%scpu", o->trace,
                 *o->trace ? "," : "");
        o->trace = p->sampled_trace;
    } else if (p->sample && !strcmp(p->sample, "none")) {
        list_without(o->trace, "cpu", p->sampled_trace, sizeof p->sampled_trace);
        o->trace = p->sampled_trace;
    }
    if (o->sampling_hz && !trace_list_has(o->trace, "cpu"))
        return cli_usage_error("profile", "--sampling-frequency needs CPU sampling (-t cpu)");
    if (o->osrt_threshold && !trace_list_has(o->trace, "osrt"))
        return cli_usage_error("profile", "--osrt-threshold needs -t osrt");
    if ((o->osrt_backtrace_ns || o->osrt_backtrace_depth) && !trace_list_has(o->trace, "osrt"))
        return cli_usage_error("profile", "--osrt-backtrace-%s needs -t osrt",
                               o->osrt_backtrace_ns ? "threshold" : "depth");
    if (o->osrt_backtrace_depth && strtoul(o->osrt_backtrace_depth, NULL, 10) > 64)
        return cli_usage_error("profile", "--osrt-backtrace-depth needs a number of frames (0 to 64)");
    if (p->gpu_metrics_option && !trace_list_has(o->trace, "gpu_metrics"))
        return cli_usage_error("profile", "--%s needs --gpu-metrics", p->gpu_metrics_option);
    if (o->python_backtrace && !trace_list_has(o->trace, "cuda"))
        return cli_usage_error("profile", "--python-backtrace needs -t cuda");
    if (o->python_backtrace && o->cuda_api && strcmp(o->cuda_api, "none") == 0)
        return cli_usage_error("profile", "--python-backtrace needs the launch calls: not "
                                          "with --cuda-api=none");
    return 0;
}

static int parse_options(int argc, char **argv, struct profile_options *p)
{
    int first = 0, rc = cli_options_parse(&cli_profile_command, argc, argv, p, &first);
    if (rc || (rc = check_combinations(p)) || (rc = settle_trace(p)))
        return rc;
    if (first >= argc)
        return cli_usage_error("profile", "missing the command to run");
    p->launch.command = argv + first;
    return 0;
}

/* The one line naming the processes still running after the wait (--wait): traced ones still
 * writing, and the command's other descendants; their events so far are imported, and the raw
 * folder they may still write is kept. */
/* An empty session says why nothing was recorded, and what to try. */
static void say_why_nothing(const char *db_path)
{
    sqlite3 *db;
    char why[1024];
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        stats_why_nothing(db, why, sizeof why))
        cli_error("%s", why);
    sqlite3_close(db);
}

static void say_still_writing(const struct launcher *l)
{
    const struct launcher_options *o = l->o;
    char waited[64];
    if (o->wait_primary)
        snprintf(waited, sizeof waited, "not waited for: --wait=primary");
    else if (l->wait_interrupted) /* and the import stops on the signal: nothing imported */
        snprintf(waited, sizeof waited, "the wait stopped by a signal");
    else
        snprintf(waited, sizeof waited, "after waiting %g s: --wait-timeout", o->wait_timeout_s);
    if (!l->running) {
        cli_error("%s; the raw files are kept in '%s': import them with 'lantern import %s -o %s "
                  "--force'",
                  launcher_error(l), l->raw_dir, l->raw_dir, o->output);
        return;
    }
    /* "traced" unless one of them is a descendant with no raw file being written (it may
     * load the agent later) */
    const char *imported = l->wait_interrupted       ? ""
                           : l->still_writing == 1 ? "its events so far are imported, and "
                                                   : "their events so far are imported, and ";
    cli_error("%zu %sprocess%s still running (%s): %s; %s'%s' is kept, which %s may still "
              "write: once %s ended, 'lantern import %s -o %s --force' imports everything",
              l->still_writing, l->untraced_running ? "" : "traced ",
              l->still_writing == 1 ? "" : "es", waited, l->running, imported, l->raw_dir,
              l->still_writing == 1 ? "it" : "they", l->still_writing == 1 ? "it has" : "they have",
              l->raw_dir, o->output);
}

/* After the run: its databases as it asked (the ring's dumps, the windows, or one of the whole
 * run), the raw folder removed unless kept or still written, and --stats's table. Returns
 * lantern's exit status: the program's, unless --stats could not be written after it ran well. */
static int write_outputs(const struct profile_options *p, struct launcher *l,
                         struct profile_windows *windows, int status)
{
    const struct launcher_options *o = &p->launch;
    int rc = status;
    if (o->ring_s > 0) { /* --ring: the dumps are the databases (the end's among them) */
        if (!p->keep_raw && !l->still_writing && launcher_remove_session(l->raw_dir) < 0)
            cli_error("cannot remove '%s': %s", l->raw_dir, strerror(errno));
        return rc;
    }
    if (launcher_windowed(l) || p->capture_repeat >= 0) {
        char last[4096] = "";
        if ((p->capture_repeat >= 0
                 ? profile_capture_repeat(windows, o->capture_range, p->capture_repeat, last,
                                          sizeof last)
                 : profile_windows_finish(windows, l, last, sizeof last)) != CLI_EXIT_OK) {
            cli_error("the raw files are kept in '%s'", l->raw_dir);
            return rc;
        }
        if (!p->keep_raw && !l->still_writing && launcher_remove_session(l->raw_dir) < 0)
            cli_error("cannot remove '%s': %s", l->raw_dir, strerror(errno));
        if (p->stats && last[0])
            cli_print_stats(last, stats_find("nvtx_sum"), TABLE_FORMAT_TABLE, NULL, NULL,
                             output_width(STDOUT_FILENO), stdout);
        return rc;
    }
    if (cli_import(l->raw_dir, o->output, o->force) != CLI_EXIT_OK) {
        cli_error("the raw files are kept in '%s': import them with 'lantern import %s -o %s'",
                  l->raw_dir, l->raw_dir, o->output);
        return rc;
    }
    /* a process that ran untraced said why when it ran */
    int untraced = launcher_untraced_processes(l->raw_dir);
    /* nothing a process still running may write is removed */
    if (!p->keep_raw && !l->still_writing && launcher_remove_session(l->raw_dir) < 0)
        cli_error("cannot remove '%s': %s", l->raw_dir, strerror(errno));
    if (!p->stats && !untraced) /* --stats says it after the table */
        say_why_nothing(o->output);
    fprintf(stderr, "lantern: report written to %s\n", o->output);
    if (p->stats && cli_print_stats(o->output, stats_find("nvtx_sum"), TABLE_FORMAT_TABLE, NULL,
                                     NULL, output_width(STDOUT_FILENO), stdout) != CLI_EXIT_OK) {
        if (ferror(stdout))
            cli_error("cannot write the report to the standard output");
        if (!status)
            rc = CLI_EXIT_ERROR;
    }
    return rc;
}

int cmd_profile(int argc, char **argv)
{
    struct profile_options p = {.launch.wait_timeout_s = LAUNCHER_WAIT_TIMEOUT_S,
                                .capture_repeat = -1};
    const struct launcher_options *o = &p.launch;
    struct launcher l;
    char *name = NULL, *error = NULL;
    int rc = parse_options(argc, argv, &p), status;
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    launcher_init(&l, o);
    /* -o's patterns are expanded before anything is written: the expanded name is the one
     * checked, replaced with --force, given FILE.raw/ and said at the end. */
    if (o->output && (rc = launcher_output_name(o->output, &name, &error)) < 0) {
        rc = rc == -EINVAL ? cli_usage_error("profile", "%s", error)
                           : cli_error("%s", error ? error : "out of memory");
        goto out;
    }
    rc = CLI_EXIT_ERROR;
    if (!o->output && !(name = launcher_default_output())) {
        cli_error("no free lantern-N.db name in the current folder");
        goto out;
    }
    struct profile_windows windows = {.pattern = o->output ? o->output : "lantern-%n.db",
                                      .output = name,
                                      .force = o->force,
                                      .single_file = o->single_file};
    p.launch.output = name;
    p.launch.window_ended = profile_window_ended;
    p.launch.window_ctx = &windows;
    p.launch.dumped = profile_ring_dumped;
    if (launcher_open(&l) < 0) {
        cli_error("%s", launcher_error(&l));
        goto out;
    }
    windows.raw_dir = l.raw_dir;
    /* The launcher's samplers (NVML: -t nvml, or by default where NVML works) start here and
     * stop after the command; one that cannot start records why in the raw file, and the run
     * goes on (said only when -t asked for it). */
    if (launcher_start_samplers(&l) < 0)
        cli_error("%s", launcher_error(&l));
    status = launcher_run(&l);
    if (status < 0) {
        cli_error("%s", launcher_error(&l));
        launcher_remove_session(l.raw_dir);
        rc = 127; /* like a shell: the command could not be run */
        goto out;
    }
    /* Whatever happens to Lantern from here, lantern exits with the program's status; a
     * failure of its own is said on stderr, with the raw folder kept for 'lantern import'. */
    rc = status;
    if (launcher_finish(&l, status) < 0)
        cli_error("%s", launcher_error(&l));
    if (l.still_writing)
        say_still_writing(&l);
    rc = write_outputs(&p, &l, &windows, status);
out:
    launcher_release(&l);
    free(name);
    free(error);
    return rc;
}
