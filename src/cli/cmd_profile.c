/* lantern profile: the launcher. Creates the session folder, points the profiled program at
 * the agent through the environment (docs/architecture.md), runs it, forwards the signals
 * sent to the launcher, then imports the raw files into the report database. */
#include "cli/cli.h"
#include "nvml/sampler.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/process.h"
#include "trace/records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct profile_options {
    const char *output;
    const char *trace;
    int stats, keep_raw, force;
    int trace_given;  /* -t given: then NVML is sampled only if listed, and a failure is said */
    double nvml_rate; /* --nvml-rate: power samples per second (0: the sampler's default) */
    const char *capture_range;  /* --capture-range: none, cudaProfilerApi, nvtx:NAME */
    double delay_s, duration_s; /* --delay, --duration: CUDA capture window (0: none) */
    const char *cuda_api;       /* --cuda-api: default (allow-list) or all */
    int cuda_memory_usage;      /* --cuda-memory-usage=true: record allocations and frees */
    int python_backtrace;       /* --python-backtrace: the launching stack of each kernel */
    const char *py_functions;   /* --python-functions: the patterns of functions */
    char **command;             /* NULL-terminated */
};

static void print_help(void)
{
    printf("Usage: lantern profile [options] [--] COMMAND [ARGS...]\n\n"
           "Runs COMMAND under Lantern and writes a report database.\n\n"
           "  -o, --output FILE   the database to write (default: the first free lantern-N.db\n"
           "                      in the current folder); raw files go to FILE.raw/ meanwhile\n"
           "  -t, --trace LIST    what to trace, comma-separated: nvtx, cuda, nvml (default\n"
           "                      cuda,nvtx where an NVIDIA GPU is present, else nvtx; and nvml\n"
           "                      where NVML works)\n"
           "      --nvml-rate HZ  GPU power samples per second (default 100)\n"
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
           "      --stats         print the NVTX range summary (nvtx_sum) after the run\n"
           "      --keep-raw      keep the raw session folder FILE.raw/ (see 'lantern import')\n"
           "  -f, --force         replace FILE, and the raw files of an old FILE.raw/\n"
           "  -h, --help          show this help\n\n"
           "Signals sent to lantern (kill: INT, TERM, HUP) are forwarded to COMMAND; a Ctrl-C\n"
           "reaches COMMAND directly. lantern exits with COMMAND's status (128+N if killed by\n"
           "signal N), even when its own import fails: then FILE.raw/ is kept, and stderr says\n"
           "how to import it.\n"
           "Environment: LANTERN_AGENT overrides the agent library's path.\n");
}

/* ---- options ------------------------------------------------------------------------- */

/* Without -t: CUDA and NVTX like nsys, but CUDA only where the NVIDIA driver's device node
 * exists, so a machine without a GPU gets no warning for a source nobody asked for. */
static const char *default_trace(void)
{
    return access("/dev/nvidiactl", F_OK) == 0 ? "cuda,nvtx" : "nvtx";
}

static int trace_list_valid(const char *list)
{
    static const char *const known[] = {"nvtx", "cuda", "nvml"};
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (len == strlen(known[i]) && !strncmp(p, known[i], len))
                ok = 1;
        if (!ok)
            return 0;
        if (!p[len])
            return 1;
        p += len + 1;
    }
}

static int trace_has(const char *list, const char *what)
{
    size_t n = strlen(what);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, what, n) && (p[n] == ',' || !p[n]))
            return 1;
    return 0;
}

static int parse_options(int argc, char **argv, struct profile_options *o)
{
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
        OPT_PYTHON_FUNCTIONS
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
        case OPT_STATS:
            o->stats = 1;
            break;
        case OPT_KEEP_RAW:
            o->keep_raw = 1;
            break;
        case 'f':
            o->force = 1;
            break;
        case 'h':
            print_help();
            return -1;
        case ':':
            return cli_usage_error("profile", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("profile", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!o->trace)
        o->trace = default_trace();
    if (!trace_list_valid(o->trace))
        return cli_usage_error("profile", "unknown trace source in '%s' (known: nvtx, cuda, nvml)",
                               o->trace);
    if (o->python_backtrace && !trace_has(o->trace, "cuda"))
        return cli_usage_error("profile", "--python-backtrace needs -t cuda");
    if (o->python_backtrace && o->cuda_api && strcmp(o->cuda_api, "none") == 0)
        return cli_usage_error("profile", "--python-backtrace needs the launch calls: not "
                                          "with --cuda-api=none");
    if (optind >= argc)
        return cli_usage_error("profile", "missing the command to run");
    o->command = argv + optind;
    return 0;
}

/* ---- the session folder ----------------------------------------------------------------- */

static int path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The first lantern-N.db of the current folder that exists neither as a file nor as a
 * session folder, so a second run never overwrites the first. */
static char *default_output(void)
{
    for (unsigned n = 1; n < 100000; n++) {
        char *name, *raw;
        if (asprintf(&name, "lantern-%u.db", n) < 0)
            return NULL;
        if (asprintf(&raw, "%s.raw", name) < 0) {
            free(name);
            return NULL;
        }
        int taken = path_exists(name) || path_exists(raw);
        free(raw);
        if (!taken)
            return name;
        free(name);
    }
    return NULL;
}

/* Removes a session folder: the raw files Lantern writes there (regular files named *.lrt),
 * then the folder, which fails if anything else is in it (nothing else is ours). No symbolic
 * link is followed: the folder is opened with O_NOFOLLOW and its files are removed relative
 * to that descriptor. Returns 0, or -1 with errno set (ENOTEMPTY: files that are not ours). */
static int remove_session_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len > 4 && !strcmp(e->d_name + len - 4, ".lrt") &&
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(fd, e->d_name, 0);
    }
    closedir(d);
    return rmdir(dir);
}

/* The agent: $LANTERN_AGENT, else ../lib/liblantern-agent.so beside this executable. */
static char *find_agent(void)
{
    const char *env = getenv("LANTERN_AGENT");
    char exe[PATH_MAX], candidate[PATH_MAX + 64];
    if (env && *env)
        return realpath(env, NULL);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return NULL;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    snprintf(candidate, sizeof candidate, "%s/../lib/liblantern-agent.so", exe);
    return realpath(candidate, NULL);
}

/* ---- the launcher's own raw file ---------------------------------------------------------- */

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* launcher.lrt describes the session: a TRACE_PROCESS record flagged TRACE_FLAG_LAUNCHER
 * (cmdline = the profiled command, plus its trace_list field), and at the end a
 * TRACE_PROCESS_END with its exit_status field (src/trace/records.def). */
static int launcher_write_start(int fd, char **command, const char *trace)
{
    size_t cmd_len = 0;
    for (char **a = command; *a; a++)
        cmd_len += strlen(*a) + 1;
    char *cmdline = malloc(cmd_len + 1);
    size_t cap = cmd_len + PATH_MAX + 256 + strlen(trace) + 256; /* + exe, host, the rest */
    uint8_t *buf = malloc(cap);
    int rc = -1;
    if (!cmdline || !buf)
        goto out;
    size_t pos = 0;
    for (char **a = command; *a; a++) {
        memcpy(cmdline + pos, *a, strlen(*a) + 1);
        pos += strlen(*a) + 1;
    }
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, cap, now);
    uint32_t flags = TRACE_FLAG_LAUNCHER |
                     (access("/dev/nvidiactl", F_OK) == 0 ? 0 : TRACE_FLAG_NO_NVIDIA_DEVICE);
    if (trace_put_process_self(&b, now, cmdline, cmd_len ? cmd_len - 1 : 0, flags, trace) < 0)
        goto out;
    uint8_t header[TRACE_FILE_HEADER_SIZE];
    trace_file_header(header);
    size_t len = trace_chunk_finish(&b);
    if (write(fd, header, sizeof header) == (ssize_t)sizeof header &&
        write(fd, buf, len) == (ssize_t)len)
        rc = 0;
out:
    free(cmdline);
    free(buf);
    return rc;
}

static int launcher_write_end(int fd, int exit_status)
{
    uint8_t buf[128];
    uint64_t now = clock_ns(CLOCK_MONOTONIC);
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, now);
    struct trace_process_end r = {.end = now,
                                  .dropped_total = 0, /* the launcher drops nothing */
                                  .clean = 1,
                                  .exit_status = (uint64_t)exit_status,
                                  .optional_present = 1}; /* exit_status even when 0 */
    if (trace_put_process_end(&b, &r) < 0)
        return -1;
    size_t len = trace_chunk_finish(&b);
    return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* ---- running the command ------------------------------------------------------------------ */

static volatile sig_atomic_t child_pid;

/* A Ctrl-C or terminal hang-up reaches the child directly (same process group), so only
 * signals sent to the launcher itself (kill(2), sigqueue(3)) are forwarded: otherwise the
 * child would get a Ctrl-C twice. */
static void forward_signal(int sig, siginfo_t *info, void *ucontext)
{
    (void)ucontext;
    if ((info->si_code == SI_USER || info->si_code == SI_QUEUE) && child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* Holds (block = 1) or releases the forwarded signals; released, a pending one acts. */
static void hold_forwarded_signals(int block)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&set, forwarded_signals[i]);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

static void install_forwarding(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaction(forwarded_signals[i], &sa, NULL);
}

/* In the child between fork and exec: default dispositions, then exec; an exec failure is
 * reported to the parent through the close-on-exec pipe. */
static void exec_child(char **command, int report_fd, const sigset_t *old_mask)
{
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        signal(forwarded_signals[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execvp(command[0], command);
    int err = errno;
    ssize_t unused = write(report_fd, &err, sizeof err); /* nothing to do if it fails */
    (void)unused;
    _exit(127);
}

/* Why exec failed, with what to type instead where we can tell: a script without its
 * execute bit, or a file of the current folder named without "./" (execvp searches PATH). */
static void explain_exec_failure(const char *program, int err)
{
    struct stat st;
    if ((err == EACCES || err == ENOENT) && stat(program, &st) == 0) {
        const char *dot = strrchr(program, '.');
        const char *interpreter = !dot                  ? NULL
                                  : !strcmp(dot, ".py") ? "python3"
                                  : !strcmp(dot, ".sh") ? "sh"
                                                        : NULL;
        if (S_ISDIR(st.st_mode)) {
            cli_error("cannot run '%s': it is a folder, not a program", program);
            return;
        }
        if (access(program, X_OK) != 0) {
            if (interpreter)
                cli_error("'%s' is not executable; try: lantern profile %s %s", program,
                          interpreter, program);
            else
                cli_error("'%s' is not executable; try: chmod +x %s", program, program);
            return;
        }
        if (!strchr(program, '/')) {
            cli_error("'%s' is not in PATH; to run the file in this folder: lantern profile ./%s",
                      program, program);
            return;
        }
    }
    cli_error("cannot run '%s': %s", program, strerror(err));
}

/* Runs the command; returns its status as a shell reports it (128+N when killed by signal
 * N), or -1 when it could not be started (error printed). Returns with the forwarded signals
 * held (see hold_forwarded_signals). */
static int run_command(char **command)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        cli_error("cannot start '%s': %s", command[0], strerror(errno));
        return -1;
    }
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(&block, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &old); /* no forwarding before child_pid is known */
    install_forwarding();
    pid_t pid = fork();
    if (pid == 0)
        exec_child(command, pipefd[1], &old);
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        cli_error("cannot start '%s': %s", command[0], strerror(errno));
        return -1;
    }
    int err = 0, status = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* From here a signal is for lantern itself: held while the import runs (which stops
     * cleanly when one is pending, saying how to import the raw folder), then acting as usual
     * when cmd_profile releases it. */
    hold_forwarded_signals(1);
    child_pid = 0;
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        signal(forwarded_signals[i], SIG_DFL);
    if (n == (ssize_t)sizeof err) {
        explain_exec_failure(command[0], err);
        return -1;
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---- the subcommand ------------------------------------------------------------------------ */

/* Checks the outputs before the program runs, and creates the session folder; returns a
 * descriptor of the folder (opened without following a link, so the launcher's own file is
 * written into the folder it created), or -1 with the error printed. */
static int prepare_session(const struct profile_options *o, const char *raw_dir)
{
    struct stat st;
    if (lstat(o->output, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            cli_error("'%s' is a folder; -o names the database file to write", o->output);
            return -1;
        }
        if (!o->force) {
            cli_error("'%s' exists (use --force to replace it, or -o another name)", o->output);
            return -1;
        }
    }
    if (lstat(raw_dir, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            cli_error("session folder '%s' is a symbolic link; not following it (remove it, or "
                      "use -o another name)",
                      raw_dir);
            return -1;
        }
        if (!o->force) {
            cli_error(
                "session folder '%s' exists (use --force to replace it, or 'lantern import' it)",
                raw_dir);
            return -1;
        }
        if (remove_session_dir(raw_dir) < 0) {
            cli_error("cannot replace session folder '%s': %s", raw_dir,
                      errno == ENOTEMPTY || errno == EEXIST
                          ? "it holds files that are not Lantern raw traces"
                          : strerror(errno));
            return -1;
        }
    }
    if (mkdir(raw_dir, 0755) < 0) {
        cli_error("cannot create session folder '%s': %s", raw_dir, strerror(errno));
        return -1;
    }
    int fd = open(raw_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        cli_error("cannot open session folder '%s': %s", raw_dir, strerror(errno));
    return fd;
}

/* The CUDA capture range for the agent (src/agent/cupti.c): the mode, and --delay/--duration
 * as a CLOCK_MONOTONIC window counted from now, the program's launch. */
static int set_cuda_capture_environment(const struct profile_options *o)
{
    struct timespec now;
    char from[32], until[32];
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t launch_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    uint64_t from_ns = launch_ns + (uint64_t)(o->delay_s * 1e9);
    snprintf(from, sizeof from, "%llu", (unsigned long long)from_ns);
    snprintf(until, sizeof until, "%llu",
             (unsigned long long)(from_ns + (uint64_t)(o->duration_s * 1e9)));
    if (o->capture_range && setenv("LANTERN_CAPTURE", o->capture_range, 1) < 0)
        return -1;
    if (o->cuda_api && setenv("LANTERN_CUDA_API", o->cuda_api, 1) < 0)
        return -1;
    if (o->cuda_memory_usage && setenv("LANTERN_CUDA_MEMORY", "1", 1) < 0)
        return -1;
    if (o->python_backtrace && setenv("LANTERN_PYTHON_BACKTRACE", "1", 1) < 0)
        return -1;
    if (o->delay_s > 0 && setenv("LANTERN_CAPTURE_FROM_NS", from, 1) < 0)
        return -1;
    if (o->duration_s > 0 && setenv("LANTERN_CAPTURE_UNTIL_NS", until, 1) < 0)
        return -1;
    return 0;
}

/* The Python bootstrap folder beside the agent (lib/lantern-python/, from src/agent/python/)
 * goes first on PYTHONPATH: its sitecustomize.py names threads from threading.Thread.name
 * (lantern_threads.py) and, with --python-functions, records the functions whose patterns
 * it reads from LANTERN_PYTHON_FUNCTIONS (lantern_pyfunctions.py). Without the folder (an
 * agent moved alone) threads keep their OS names, and --python-functions is an error.
 * Returns a CLI_EXIT_* code (error printed). */
static int set_python_environment(const struct profile_options *o, const char *agent)
{
    char lib[PATH_MAX], folder[PATH_MAX + 32], probe[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s", agent); /* realpath: absolute, so it has a '/' */
    *strrchr(lib, '/') = '\0';
    snprintf(folder, sizeof folder, "%s/lantern-python", lib);
    snprintf(probe, sizeof probe, "%s/sitecustomize.py", folder);
    if (access(probe, R_OK) != 0)
        return o->py_functions
                   ? cli_error("--python-functions: cannot read '%s': %s", probe, strerror(errno))
                   : CLI_EXIT_OK;
    const char *old = getenv("PYTHONPATH");
    char *path = NULL;
    if (asprintf(&path, "%s%s%s", folder, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return cli_error("out of memory");
    int rc = setenv("PYTHONPATH", path, 1) < 0 ||
                     (o->py_functions && setenv("LANTERN_PYTHON_FUNCTIONS", o->py_functions, 1) < 0)
                 ? cli_error("cannot set the environment: %s", strerror(errno))
                 : CLI_EXIT_OK;
    free(path);
    return rc;
}

static int set_environment(const struct profile_options *o, const char *agent,
                           const char *session_dir)
{
    if (setenv("NVTX_INJECTION64_PATH", agent, 1) < 0 ||
        setenv("LANTERN_SESSION_DIR", session_dir, 1) < 0 ||
        setenv("LANTERN_TRACE", o->trace, 1) < 0)
        return -1;
    if (trace_has(o->trace, "cuda") && setenv("CUDA_INJECTION64_PATH", agent, 1) < 0)
        return -1;
    return set_cuda_capture_environment(o);
}

int cmd_profile(int argc, char **argv)
{
    struct profile_options o = {.trace = NULL};
    char *default_name = NULL, *raw_dir = NULL, *session_dir = NULL, *agent = NULL;
    int rc = parse_options(argc, argv, &o), fd = -1, dir_fd = -1, status = -1;
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    rc = CLI_EXIT_ERROR;
    if (!o.output && !(o.output = default_name = default_output())) {
        cli_error("no free lantern-N.db name in the current folder");
        goto out;
    }
    if (!(agent = find_agent())) {
        cli_error("cannot find the agent library liblantern-agent.so (set LANTERN_AGENT)");
        goto out;
    }
    if ((rc = set_python_environment(&o, agent)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_ERROR;
    if (asprintf(&raw_dir, "%s.raw", o.output) < 0) {
        raw_dir = NULL;
        goto out;
    }
    if ((dir_fd = prepare_session(&o, raw_dir)) < 0)
        goto out;
    session_dir = realpath(raw_dir, NULL);
    fd = openat(dir_fd, "launcher.lrt", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (!session_dir || fd < 0 || launcher_write_start(fd, o.command, o.trace) < 0 ||
        set_environment(&o, agent, session_dir) < 0) {
        cli_error("cannot write the session folder '%s': %s", raw_dir, strerror(errno));
        goto out;
    }
    /* The NVML sampler (-t nvml, or by default where NVML works) starts here and stops
     * after the command; without NVML the reason goes into the raw file and the run goes on. */
    struct nvml_sampler *sampler = NULL;
    char nvml_why[256];
    if ((!o.trace_given || trace_has(o.trace, "nvml")) &&
        nvml_sampler_start(fd, NULL, o.nvml_rate, &sampler, nvml_why, sizeof nvml_why) != 0 &&
        o.trace_given)
        fprintf(stderr, "lantern: GPU power not sampled: %s\n", nvml_why);
    status = run_command(o.command);
    nvml_sampler_stop(sampler);
    if (status < 0) {
        remove_session_dir(raw_dir);
        rc = 127; /* like a shell: the command could not be run */
        goto out;
    }
    /* Whatever happens to Lantern from here, lantern exits with the program's status; a
     * failure of its own is said on stderr, with the raw folder kept for 'lantern import'. */
    rc = status;
    int end_written = launcher_write_end(fd, status) == 0;
    if (close(fd) < 0)
        end_written = 0;
    fd = -1;
    if (!end_written)
        cli_error("cannot write '%s/launcher.lrt': %s", raw_dir, strerror(errno));
    if (cli_import(raw_dir, o.output, o.force) != CLI_EXIT_OK) {
        cli_error("the raw files are kept in '%s': import them with 'lantern import %s -o %s'",
                  raw_dir, raw_dir, o.output);
        goto out;
    }
    if (!o.keep_raw && remove_session_dir(raw_dir) < 0)
        cli_error("cannot remove '%s': %s", raw_dir, strerror(errno));
    fprintf(stderr, "lantern: report written to %s\n", o.output);
    if (o.stats && cli_print_report(o.output, report_find("nvtx_sum"), TABLE_FORMAT_TABLE, NULL,
                                    stdout) != CLI_EXIT_OK) {
        if (ferror(stdout))
            cli_error("cannot write the report to the standard output");
        if (!status)
            rc = CLI_EXIT_ERROR;
    }
out:
    if (fd >= 0)
        close(fd);
    if (dir_fd >= 0)
        close(dir_fd);
    hold_forwarded_signals(0); /* a signal held since the program ended acts now */
    free(default_name);
    free(raw_dir);
    free(session_dir);
    free(agent);
    return rc;
}
