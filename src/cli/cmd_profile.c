/* lantern profile: runs a command under Lantern. This file parses the options; the capture
 * (session folder, the agent's environment, fork/exec and signals, samplers, launcher.lrt) is
 * src/launcher/ (launcher.h), then the raw files are imported into the report database. */
#include "cli/cli.h"
#include "cli/profile_windows.h"
#include "launcher/launcher.h"
#include "output/fit.h"
#include "trace/gpu_metrics.h"
#include "trace/list.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct profile_options {
    struct launcher_options launch; /* what the launcher does (src/launcher/launcher.h) */
    long capture_repeat;            /* --capture-range-end=repeat[:N]: N, -1 none, 0 all */
    int stats, keep_raw;
    int gpu_metrics;                 /* --gpu-metrics given */
    const char *gpu_metrics_options; /* a --gpu-metrics-* option given (for its error) */
    char trace[256];                 /* the -t list with gpu_metrics added */
    const char *sample;              /* --sample: cpu or none (NULL: -t decides) */
    char sampled_trace[256];         /* the -t list with cpu added or taken out */
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

static void print_help(FILE *out)
{
    const struct launcher_trace_names *n = launcher_trace_names();
    fprintf(out,
            "Usage: lantern profile [options] [--] COMMAND [ARGS...]\n\n"
            "Runs COMMAND under Lantern and writes a report database.\n\n"
            "  -o, --output FILE   the database to write (default: the first free lantern-N.db\n"
            "                      in the current folder); raw files go to FILE.raw/ meanwhile;\n"
            "                      FILE may hold %%r the rank (RANK, OMPI_COMM_WORLD_RANK, ...),\n"
            "                      %%h the host, %%p lantern's pid, %%q{VAR} the variable VAR,\n"
            "                      %%n the first free number, %%%% a percent sign\n"
            "  -t, --trace LIST    what to trace, comma-separated: %s (default\n"
            "                      %s where an NVIDIA GPU is present, else %s; and %s\n"
            "                      where it works)\n"
            "      --nvml-rate HZ  GPU power samples per second (default 100)\n"
            "      --gpu-metrics[=LIST]  sample GPU hardware metrics (-t gpu_metrics): SM\n"
            "                      activity, warp occupancy, Tensor Cores, DRAM, PCIe, NVLink;\n"
            "                      LIST picks some: %s\n"
            "      --gpu-metrics-frequency HZ  PM sampling's samples per second (default 5000;\n"
            "                      above ~8000 CUPTI's decoding falls behind and samples are\n"
            "                      lost); GPM samples at its driver's 100 ms refresh\n"
            "      --gpu-metrics-devices LIST  GPUs to sample: CUDA indices or UUIDs (default:\n"
            "                      every GPU the program can see)\n"
            "      --gpu-metrics-source auto|pm|gpm  CUPTI PM sampling, else NVML GPM (auto,\n"
            "                      the default), or only one of them\n"
            "      --sample=cpu|none  sample every thread's CPU stack (-t cpu; off by default\n"
            "                      for now: it costs launch-bound PyTorch loops over 2 %%)\n"
            "      --sampling-frequency HZ  CPU samples per second of CPU time per thread\n"
            "                      (default 1000, at most 10000)\n"
            "      --osrt-threshold NS  with -t osrt: record OS runtime calls (blocking libc\n"
            "                      calls, through LD_PRELOAD) lasting at least NS ns (default\n"
            "                      1000); shorter ones are only counted\n"
            "      --capture-range=cudaProfilerApi|nvtx:NAME  keep CUDA activity only between\n"
            "                      cudaProfilerStart/Stop (CUPTI paused outside them), or while\n"
            "                      an NVTX range NAME is open\n"
            "      --delay SEC     keep CUDA activity only from SEC seconds after the start\n"
            "      --duration SEC  ... and for SEC seconds\n"
            "      --cuda-memory-usage=true  record device allocations and frees, for memory in\n"
            "                      use over time (off by default, as in nsys: it costs time)\n"
            "      --cuda-api=all  record every CUDA API call (default: GPU work, copies, syncs,\n"
            "                      allocations, streams, events, graphs; not queries)\n"
            "      --cuda-api=none record no CUDA API call: GPU work only, the cheapest for\n"
            "                      launch-bound programs, but kernels are then not attributed\n"
            "                      to NVTX ranges or launching calls\n"
            "      --python-backtrace  with -t cuda: record who launched each kernel (Python\n"
            "                      file:line:function, library frames folded; native code:\n"
            "                      the caller's symbol), shown by 'lantern kernels -c trace';\n"
            "                      off by default: it adds about 5 us per kernel launch\n"
            "                      (H200, PyTorch; cost measured in docs/benchmarks.md)\n"
            "      --python-functions LIST  record each call of these Python functions as an\n"
            "                      NVTX range (domain python), without changing the program:\n"
            "                      comma-separated module.qualname patterns, '*' any text\n"
            "                      ('mypkg.*,pandas.DataFrame.groupby')\n"
            "      --wait=all|primary  after COMMAND ends, wait for the processes it started\n"
            "                      that still run (daemons, traced or not yet: all, the\n"
            "                      default), or not (primary); those still running are named,\n"
            "                      their events so far imported, and FILE.raw/ kept\n"
            "      --wait-timeout SEC  wait at most SEC seconds for them (default %g)\n"
            "      --stats         print the NVTX range summary (nvtx_sum) after the run\n"
            "      --start-paused  record nothing until 'lantern start' (or SIGUSR1 to lantern);\n"
            "                      'lantern stop' (SIGUSR2) ends the window: each window is its\n"
            "                      own database, FILE's %%n numbering them (docs/long-runs.md)\n"
            "      --single-file   every start-stop window into the one database FILE, at the end\n"
            "      --capture-range-end=stop|repeat[:N]  with --capture-range=nvtx:NAME, repeat:\n"
            "                      each instance of the range NAME (up to N) its own database,\n"
            "                      numbered as the windows are\n"
            "      --ring SEC      flight recorder: keep only the last SEC seconds, written as a\n"
            "                      database (FILE, then %%n numbering them) at 'lantern dump'\n"
            "                      (SIGUSR1 to lantern), at --ring-trigger, and at the program's\n"
            "                      end, crash or SIGTERM (docs/long-runs.md)\n"
            "      --ring-trigger nvtx:NAME  with --ring: an NVTX mark NAME dumps the ring too\n"
            "      --keep-raw      keep the raw session folder FILE.raw/ (see 'lantern import')\n"
            "  -f, --force         replace FILE, and the raw files of an old FILE.raw/ (never\n"
            "                      those of a run still going on)\n"
            "  -h, --help          show this help\n\n"
            "Signals sent to lantern (kill: INT, TERM, HUP) are forwarded to COMMAND; a Ctrl-C\n"
            "reaches COMMAND directly. lantern exits with COMMAND's status (128+N if killed by\n"
            "signal N), even when its own import fails: then FILE.raw/ is kept, and stderr says\n"
            "how to import it.\n"
            "Environment: LANTERN_AGENT overrides the agent library's path.\n",
            n->known, n->default_gpu, n->default_no_gpu, n->sampled, gpu_metric_columns(),
            LAUNCHER_WAIT_TIMEOUT_S);
}

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

static int parse_options(int argc, char **argv, struct profile_options *p)
{
    struct launcher_options *o = &p->launch;
    enum {
        OPT_STATS = 256,
        OPT_KEEP_RAW,
        OPT_NVML_RATE,
        OPT_CAPTURE,
        OPT_DELAY,
        OPT_DURATION,
        OPT_CUDA_API,
        OPT_CUDA_MEMORY_USAGE,
        OPT_PYTHON_BACKTRACE,
        OPT_PYTHON_FUNCTIONS,
        OPT_WAIT,
        OPT_WAIT_TIMEOUT,
        OPT_GPU_METRICS,
        OPT_GPU_METRICS_FREQUENCY,
        OPT_GPU_METRICS_DEVICES,
        OPT_GPU_METRICS_SOURCE,
        OPT_SAMPLE,
        OPT_SAMPLING_FREQUENCY,
        OPT_START_PAUSED,
        OPT_CAPTURE_END,
        OPT_SINGLE_FILE,
        OPT_OSRT_THRESHOLD,
        OPT_RING,
        OPT_RING_TRIGGER
    };
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"trace", required_argument, NULL, 't'},
        {"stats", no_argument, NULL, OPT_STATS},
        {"keep-raw", no_argument, NULL, OPT_KEEP_RAW},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"nvml-rate", required_argument, NULL, OPT_NVML_RATE},
        {"capture-range", required_argument, NULL, OPT_CAPTURE},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"cuda-api", required_argument, NULL, OPT_CUDA_API},
        {"cuda-memory-usage", required_argument, NULL, OPT_CUDA_MEMORY_USAGE},
        {"python-backtrace", no_argument, NULL, OPT_PYTHON_BACKTRACE},
        {"python-functions", required_argument, NULL, OPT_PYTHON_FUNCTIONS},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"wait-timeout", required_argument, NULL, OPT_WAIT_TIMEOUT},
        {"gpu-metrics", optional_argument, NULL, OPT_GPU_METRICS},
        {"gpu-metrics-frequency", required_argument, NULL, OPT_GPU_METRICS_FREQUENCY},
        {"gpu-metrics-devices", required_argument, NULL, OPT_GPU_METRICS_DEVICES},
        {"gpu-metrics-source", required_argument, NULL, OPT_GPU_METRICS_SOURCE},
        {"sample", required_argument, NULL, OPT_SAMPLE},
        {"sampling-frequency", required_argument, NULL, OPT_SAMPLING_FREQUENCY},
        {"start-paused", no_argument, NULL, OPT_START_PAUSED},
        {"capture-range-end", required_argument, NULL, OPT_CAPTURE_END},
        {"single-file", no_argument, NULL, OPT_SINGLE_FILE},
        {"osrt-threshold", required_argument, NULL, OPT_OSRT_THRESHOLD},
        {"ring", required_argument, NULL, OPT_RING},
        {"ring-trigger", required_argument, NULL, OPT_RING_TRIGGER},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    /* '+': stop at the first non-option, which begins the profiled command */
    while ((c = getopt_long(argc, argv, "+:o:t:fh", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->output = optarg;
            break;
        case 't':
            o->trace = optarg;
            o->trace_given = 1;
            break;
        case OPT_NVML_RATE:
            o->nvml_rate = strtod(optarg, NULL);
            if (!(o->nvml_rate > 0 && o->nvml_rate <= 10000))
                return cli_usage_error("profile",
                                       "--nvml-rate needs a rate in Hz (0 < HZ <= 10000)");
            break;
        case OPT_CAPTURE:
            o->capture_range = optarg;
            if (strcmp(optarg, "none") && strcmp(optarg, "cudaProfilerApi") &&
                (strncmp(optarg, "nvtx:", 5) || !optarg[5]))
                return cli_usage_error("profile",
                                       "--capture-range is none, cudaProfilerApi or nvtx:NAME");
            break;
        case OPT_DELAY:
        case OPT_DURATION: {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || !(v >= 0))
                return cli_usage_error("profile", "%s needs seconds (>= 0)",
                                       c == OPT_DELAY ? "--delay" : "--duration");
            *(c == OPT_DELAY ? &o->delay_s : &o->duration_s) = v;
            break;
        }
        case OPT_CUDA_API:
            o->cuda_api = optarg;
            if (strcmp(optarg, "default") && strcmp(optarg, "all") && strcmp(optarg, "none"))
                return cli_usage_error("profile", "--cuda-api is default, all or none");
            break;
        case OPT_CUDA_MEMORY_USAGE:
            if (strcmp(optarg, "true") && strcmp(optarg, "false"))
                return cli_usage_error("profile", "--cuda-memory-usage is true or false");
            o->cuda_memory_usage = strcmp(optarg, "true") == 0;
            break;
        case OPT_PYTHON_BACKTRACE:
            o->python_backtrace = 1;
            break;
        case OPT_PYTHON_FUNCTIONS:
            if (!optarg[strspn(optarg, ", ")])
                return cli_usage_error("profile", "--python-functions needs function names");
            o->py_functions = optarg;
            break;
        case OPT_WAIT:
            if (strcmp(optarg, "all") && strcmp(optarg, "primary"))
                return cli_usage_error("profile", "--wait is all or primary");
            o->wait_primary = strcmp(optarg, "primary") == 0;
            break;
        case OPT_WAIT_TIMEOUT: {
            char *end;
            o->wait_timeout_s = strtod(optarg, &end);
            if (end == optarg || *end || !(o->wait_timeout_s >= 0 && o->wait_timeout_s <= 1e6))
                return cli_usage_error("profile", "--wait-timeout needs seconds (0 to 1000000)");
            break;
        }
        case OPT_GPU_METRICS: {
            const char *bad;
            o->gpu_metrics = gpu_metrics_parse(optarg ? optarg : "all", &bad);
            if (!o->gpu_metrics)
                return cli_usage_error("profile",
                                       "--gpu-metrics: unknown metric '%.*s' (known: %s)",
                                       (int)strcspn(bad, ","), bad, gpu_metric_columns());
            p->gpu_metrics = 1;
            break;
        }
        case OPT_GPU_METRICS_FREQUENCY: {
            char *end;
            o->gpu_metrics_hz = strtod(optarg, &end);
            if (end == optarg || *end || !(o->gpu_metrics_hz >= 10 && o->gpu_metrics_hz <= 200000))
                return cli_usage_error("profile", "--gpu-metrics-frequency needs a rate in Hz "
                                                  "(10 to 200000)");
            p->gpu_metrics_options = "--gpu-metrics-frequency";
            break;
        }
        case OPT_GPU_METRICS_DEVICES:
            o->gpu_metrics_devices = strcmp(optarg, "all") ? optarg : NULL;
            p->gpu_metrics_options = "--gpu-metrics-devices";
            break;
        case OPT_GPU_METRICS_SOURCE:
            if (strcmp(optarg, "auto") && strcmp(optarg, "pm") && strcmp(optarg, "gpm"))
                return cli_usage_error("profile", "--gpu-metrics-source is auto, pm or gpm");
            o->gpu_metrics_source = optarg;
            p->gpu_metrics_options = "--gpu-metrics-source";
            break;
        case OPT_SAMPLE:
            if (strcmp(optarg, "cpu") && strcmp(optarg, "none"))
                return cli_usage_error("profile", "--sample is cpu or none");
            p->sample = optarg;
            break;
        case OPT_SAMPLING_FREQUENCY: {
            char *end;
            unsigned long hz = strtoul(optarg, &end, 10);
            if (end == optarg || *end || hz < 1 || hz > 10000)
                return cli_usage_error("profile",
                                       "--sampling-frequency needs a rate in Hz (1 to 10000)");
            o->sampling_hz = (unsigned)hz;
            break;
        }
        case OPT_OSRT_THRESHOLD:
            if (!*optarg || optarg[strspn(optarg, "0123456789")] || strlen(optarg) > 15)
                return cli_usage_error("profile", "--osrt-threshold needs nanoseconds (0 to "
                                                  "999999999999999)");
            o->osrt_threshold = optarg;
            break;
        case OPT_STATS:
            p->stats = 1;
            break;
        case OPT_CAPTURE_END: {
            char *end = NULL;
            if (!strcmp(optarg, "stop"))
                p->capture_repeat = -1;
            else if (!strcmp(optarg, "repeat"))
                p->capture_repeat = 0;
            else if (!strncmp(optarg, "repeat:", 7) &&
                     (p->capture_repeat = strtol(optarg + 7, &end, 10)) > 0 && !*end)
                break;
            else
                return cli_usage_error("profile", "--capture-range-end is stop, repeat or "
                                                  "repeat:N (N >= 1)");
            break;
        }
        case OPT_START_PAUSED:
            o->start_paused = 1;
            break;
        case OPT_SINGLE_FILE:
            o->single_file = 1;
            break;
        case OPT_RING: {
            char *end;
            o->ring_s = strtod(optarg, &end);
            if (*end || end == optarg || !(o->ring_s >= 0.5 && o->ring_s <= 1e6))
                return cli_usage_error("profile", "--ring needs seconds (0.5 to 1000000)");
            break;
        }
        case OPT_RING_TRIGGER:
            if (strncmp(optarg, "nvtx:", 5) != 0 || !optarg[5])
                return cli_usage_error("profile", "--ring-trigger is nvtx:NAME");
            o->ring_trigger = optarg;
            break;
        case OPT_KEEP_RAW:
            p->keep_raw = 1;
            break;
        case 'f':
            o->force = 1;
            break;
        case 'h':
            output_print_wrapped(print_help, stdout);
            return -1;
        case ':':
            return cli_usage_error("profile", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("profile", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (p->capture_repeat >= 0 && (!o->capture_range || strncmp(o->capture_range, "nvtx:", 5)))
        return cli_usage_error("profile", "--capture-range-end=repeat needs "
                                          "--capture-range=nvtx:NAME (cudaProfilerApi: not yet)");
    if (p->capture_repeat >= 0 && o->start_paused)
        return cli_usage_error("profile", "--capture-range-end=repeat and --start-paused: "
                                          "choose one");
    if (o->ring_trigger && !(o->ring_s > 0))
        return cli_usage_error("profile", "--ring-trigger needs --ring SEC");
    if (o->ring_s > 0 && (o->start_paused || o->single_file || p->capture_repeat >= 0))
        return cli_usage_error("profile", "--ring records all the time and writes a database per "
                                          "dump: not with --start-paused, --single-file or "
                                          "--capture-range-end=repeat");
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
    if (p->gpu_metrics_options && !trace_list_has(o->trace, "gpu_metrics"))
        return cli_usage_error("profile", "%s needs --gpu-metrics", p->gpu_metrics_options);
    if (o->python_backtrace && !trace_list_has(o->trace, "cuda"))
        return cli_usage_error("profile", "--python-backtrace needs -t cuda");
    if (o->python_backtrace && o->cuda_api && strcmp(o->cuda_api, "none") == 0)
        return cli_usage_error("profile", "--python-backtrace needs the launch calls: not "
                                          "with --cuda-api=none");
    if (optind >= argc)
        return cli_usage_error("profile", "missing the command to run");
    o->command = argv + optind;
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
    cli_error("%zu %sprocess%s still running (%s): %s; %s events so far are imported, and "
              "'%s' is kept, which %s may still write: once %s ended, 'lantern import %s -o %s "
              "--force' imports everything",
              l->still_writing, l->untraced_running ? "" : "traced ",
              l->still_writing == 1 ? "" : "es", waited, l->running,
              l->still_writing == 1 ? "its" : "their", l->raw_dir,
              l->still_writing == 1 ? "it" : "they", l->still_writing == 1 ? "it has" : "they have",
              l->raw_dir, o->output);
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
        rc = rc == -1 ? cli_usage_error("profile", "%s", error)
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
    if (o->ring_s > 0) { /* --ring: the dumps are the databases (the end's among them) */
        if (!p.keep_raw && !l.still_writing && launcher_remove_session(l.raw_dir) < 0)
            cli_error("cannot remove '%s': %s", l.raw_dir, strerror(errno));
        goto out;
    }
    if (launcher_windowed(&l) || p.capture_repeat >= 0) {
        char last[4096] = "";
        if ((p.capture_repeat >= 0
                 ? profile_capture_repeat(&windows, o->capture_range, p.capture_repeat, last,
                                          sizeof last)
                 : profile_windows_finish(&windows, &l, last, sizeof last)) != CLI_EXIT_OK) {
            cli_error("the raw files are kept in '%s'", l.raw_dir);
            goto out;
        }
        if (!p.keep_raw && !l.still_writing && launcher_remove_session(l.raw_dir) < 0)
            cli_error("cannot remove '%s': %s", l.raw_dir, strerror(errno));
        if (p.stats && last[0])
            cli_print_stats(last, stats_find("nvtx_sum"), TABLE_FORMAT_TABLE, NULL, NULL,
                            output_width(STDOUT_FILENO), stdout);
        goto out;
    }
    if (cli_import(l.raw_dir, o->output, o->force) != CLI_EXIT_OK) {
        cli_error("the raw files are kept in '%s': import them with 'lantern import %s -o %s'",
                  l.raw_dir, l.raw_dir, o->output);
        goto out;
    }
    /* a process that ran untraced said why when it ran */
    int untraced = launcher_untraced_processes(l.raw_dir);
    /* nothing a process still running may write is removed */
    if (!p.keep_raw && !l.still_writing && launcher_remove_session(l.raw_dir) < 0)
        cli_error("cannot remove '%s': %s", l.raw_dir, strerror(errno));
    if (!p.stats && !untraced) /* --stats says it after the table */
        say_why_nothing(o->output);
    fprintf(stderr, "lantern: report written to %s\n", o->output);
    if (p.stats && cli_print_stats(o->output, stats_find("nvtx_sum"), TABLE_FORMAT_TABLE, NULL,
                                   NULL, output_width(STDOUT_FILENO), stdout) != CLI_EXIT_OK) {
        if (ferror(stdout))
            cli_error("cannot write the report to the standard output");
        if (!status)
            rc = CLI_EXIT_ERROR;
    }
out:
    launcher_release(&l);
    free(name);
    free(error);
    return rc;
}
