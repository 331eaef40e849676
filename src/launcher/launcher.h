/* The capture side of `lantern profile`: the session folder, the environment that loads the
 * agent into the profiled program (docs/architecture.md), running the program (fork/exec, the
 * signals sent to the launcher forwarded to it, its exit status), the samplers the launcher
 * runs itself (the src/trace/sources.def rows whose `where` is "launcher": NVML's is
 * nvml_sampler.c), and the launcher's own raw file launcher.lrt. src/cli/cmd_profile.c parses the
 * options, then drives one run:
 *
 *     struct launcher l;
 *     launcher_init(&l, &options);
 *     launcher_open(&l);            checks the outputs, creates OUTPUT.raw/, starts launcher.lrt
 *     launcher_start_samplers(&l);  a sampler asked for that cannot start is a warning
 *     launcher_run(&l);             sets the agent's environment (after the samplers started,
 *                                   so the launcher's own CUDA never loads the agent), runs
 *                                   the command to its end, then waits for the traced
 *                                   processes still writing (--wait); the command's status
 *     launcher_finish(&l, status);  launcher.lrt's end record
 *     ... cmd_profile imports l.raw_dir into OUTPUT ...
 *     launcher_release(&l);
 *
 * Errors: a function that fails returns a negative errno that says what kind of failure it
 * was and keeps one line saying which, which launcher_error() returns and the caller prints as
 * "lantern: <line>"; the launcher itself prints nothing. One launcher per process: it handles the
 * process's signals. */
#ifndef LANTERN_LAUNCHER_H
#define LANTERN_LAUNCHER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A start-stop window of the session (lantern start/stop, SIGUSR1/SIGUSR2, docs/long-runs.md):
 * CLOCK_MONOTONIC ns; end_ns INT64_MAX while open. */
struct launcher_window {
    uint64_t number; /* 1, 2, ... */
    uint64_t start_ns, end_ns;
    int written; /* its database is written (window_ended returned 0) */
};

/* What `lantern profile` was asked to do (its options, parsed and checked). */
struct launcher_options {
    const char *output; /* the database to write; the raw files go to OUTPUT.raw/ meanwhile */
    const char *trace;  /* the -t list (launcher_trace_valid), or launcher_default_trace() */
    int trace_given;  /* -t given: a launcher sampler runs only if listed, and a failure is said */
    int force;        /* replace OUTPUT, and the raw files of an old OUTPUT.raw/ */
    double nvml_rate; /* --nvml-rate: power samples per second (0: the sampler's default) */
    const char *capture_range;  /* --capture-range: none, cudaProfilerApi, nvtx:NAME (or NULL) */
    double delay_s, duration_s; /* --delay, --duration: CUDA capture window (0: none) */
    const char *cuda_api;       /* --cuda-api: default, all or none (or NULL) */
    int cuda_memory_usage;      /* --cuda-memory-usage=true: record allocations and frees */
    int python_backtrace;       /* --python-backtrace: the launching stack of each kernel */
    const char *py_functions;   /* --python-functions: the patterns of functions (or NULL) */
    int wait_primary;           /* --wait=primary: wait for the command only, not its daemons */
    double wait_timeout_s;      /* --wait-timeout: the longest wait for them after the command */
    uint32_t gpu_metrics;       /* --gpu-metrics=LIST: bits of gpu_metrics.def (0: all) */
    double gpu_metrics_hz;      /* --gpu-metrics-frequency (0: 5 kHz) */
    const char *gpu_metrics_devices; /* --gpu-metrics-devices: CUDA indices or UUIDs (NULL: all
                                        GPUs the program can see) */
    const char *gpu_metrics_source;  /* --gpu-metrics-source: auto, pm, gpm (NULL: auto) */
    unsigned sampling_hz;            /* --sampling-frequency: CPU samples per second (0: 1000) */
    unsigned python_sampling_hz;     /* --python-sampling-frequency: Python looks a second */
    const char *osrt_threshold;      /* --osrt-threshold: ns, digits (NULL: the agent's 1000) */
    const char *osrt_backtrace_ns;    /* --osrt-backtrace-threshold: digits (NULL: 80000) */
    const char *osrt_backtrace_depth; /* --osrt-backtrace-depth: digits (NULL: 24) */
    char **command;                  /* the program and its arguments, NULL-terminated */
    /* Start and stop on demand (control.c, docs/long-runs.md) */
    int start_paused; /* --start-paused: nothing is recorded until a start */
    int single_file;  /* --single-file: every window into one database, at the end */
    /* Called on the launcher's control thread when a window ends while the program runs
     * (not with single_file): writes its database, says which in name (cap bytes); 0 or a negative
     * errno. */
    int (*window_ended)(void *ctx, const struct launcher_window *w, char *name, size_t cap);
    void *window_ctx;
    /* The flight recorder (ring.c, docs/long-runs.md): --ring SEC keeps the last SEC seconds
     * (0: off); --ring-trigger nvtx:NAME (or NULL); dumped, on the control thread, imports the
     * raw folder dir of dump number (1..) keeping [from_ns, until_ns]: 0 or a negative errno
     * (window_ctx). */
    double ring_s;
    const char *ring_trigger;
    int (*dumped)(void *ctx, uint64_t number, const char *dir, uint64_t from_ns,
                  uint64_t until_ns, char *name, size_t cap);
};

#define LAUNCHER_MAX_SAMPLERS 8

struct launcher_file; /* launcher.lrt (launcher_file.c) */

struct launcher {
    const struct launcher_options *o;
    char *raw_dir;     /* OUTPUT.raw, as named (relative where OUTPUT is) */
    char *session_dir; /* its absolute path, LANTERN_SESSION_DIR */
    char *agent;       /* liblantern-agent.so's absolute path */
    int dir_fd;        /* the session folder, opened without following a link (-1: none) */
    struct launcher_file *file; /* launcher.lrt, from launcher_open to launcher_finish */
    void *sampler_state[LAUNCHER_MAX_SAMPLERS]; /* the running samplers, by launcher_samplers row */
    char *error;                                /* the last failure's line (see launcher_error) */
    size_t still_writing; /* processes still running when launcher_run returned: traced ones
                             still writing, and the command's other descendants */
    size_t untraced_running; /* of them, descendants with no raw file being written */
    char *running;        /* them, "pid 1234 (daemon --port 80), pid ..." (NULL: none) */
    int wait_interrupted; /* the wait stopped on a pending INT, TERM or HUP */
    int reaper;           /* the command's descendants are the launcher's to reap (child.c) */
    /* start and stop on demand (control.c) */
    struct trace_control *control; /* OUTPUT.raw/session.lrc, mapped (NULL: none) */
    struct launcher_window *windows;
    size_t window_count, window_cap;
    int stopped_once;          /* a window ended before the program did */
    pthread_t control_thread;
    int control_running;
    _Atomic int control_quit;
    uint64_t ring_swept_ns; /* the control thread's last ring_sweep (ring.c) */
};

/* Whether the run is cut into windows (--start-paused, --single-file, or a stop came while
 * the program ran): then the databases are the windows' (l->windows; those not written yet
 * are left to the caller), not one of the whole run. */
int launcher_windowed(const struct launcher *l);

/* --wait-timeout's default, in seconds: long enough for a daemon's last work after the
 * program's end, short enough that a server left running does not hold the report long. */
#define LAUNCHER_WAIT_TIMEOUT_S 10.0

/* ---- one run, in this order --------------------------------------------------------------- */

void launcher_init(struct launcher *l, const struct launcher_options *o);

/* Finds the agent ($LANTERN_AGENT, else ../lib/liblantern-agent.so beside this executable),
 * puts the Python bootstrap beside it first on PYTHONPATH, checks the outputs (OUTPUT a folder,
 * or existing without force; OUTPUT.raw a symbolic link, or existing without force, or holding
 * files that are not Lantern's), creates OUTPUT.raw/, and writes launcher.lrt's TRACE_PROCESS
 * record. Returns 0 or a negative errno. */
int launcher_open(struct launcher *l);

/* Starts the samplers the launcher runs itself: those -t lists, or, without -t, every one (a
 * sampler that cannot start then records why in launcher.lrt and the run goes on). Returns 0,
 * or -ENODEV when one that -t asked for cannot start ("GPU power not sampled: no NVIDIA GPU"): a
 * warning, the run goes on. */
int launcher_start_samplers(struct launcher *l);

/* Sets the agent's environment, runs the command and waits for it, forwarding to it the INT, TERM
 * and HUP signals sent to the launcher (kill(2); a Ctrl-C reaches it directly), then waits for the
 * traced processes that still write and the command's descendants that still run
 * (launcher_wait_writers), then stops the samplers. The launcher is the child subreaper
 * (prctl(2) PR_SET_CHILD_SUBREAPER) of the command's descendants: one orphaned (a daemon, a
 * double fork) becomes its child, is waited for, and reaped; how each process it reaped ended
 * is written to launcher.lrt as they are reaped. Returns the
 * command's status as a shell reports it (128+N when killed by signal N), or a negative errno
 * when it could not be started (the error says why, with what to type instead where that can be
 * told). Returns with those signals held: one sent from here on acts at launcher_release. */
int launcher_run(struct launcher *l);

/* After the command (wait.c): waits until no traced process still writes its raw file (no
 * TRACE_PROCESS_END yet, and its pid alive, not a zombie, not reused, still mapping the agent),
 * no process of the session that maps the agent is yet to make its file (forked an instant
 * ago), and, when l->reaper, the launcher has no child left (every descendant of the command
 * ended; each is reaped as it ends), polling from 1 ms apart up to 100 ms apart, for at most
 * o->wait_timeout_s (not at all with o->wait_primary), or until an INT, TERM or HUP is pending.
 * Sets l->still_writing, l->untraced_running and l->running to those still running at the end
 * (l->wait_interrupted when a signal stopped the wait),
 * whose raw folder must then be kept. Returns 0, or opendir's -errno or -ENOMEM when the session
 * folder cannot be read. */
int launcher_wait_writers(struct launcher *l);

/* Writes launcher.lrt's TRACE_CHILD_EXIT records not written yet and its TRACE_PROCESS_END record
 * with the command's exit status, and closes the file. Returns 0 or a negative errno. */
int launcher_finish(struct launcher *l, int exit_status);

/* Closes and frees everything, and releases the signals launcher_run held (a pending one acts
 * now). Safe after any step, and more than once. */
void launcher_release(struct launcher *l);

/* The last failure's line ("cannot create session folder 'x.raw': Permission denied"). */
const char *launcher_error(const struct launcher *l);

/* ---- lantern start / stop (control.c) -------------------------------------------------------- */

/* The running session that `lantern start|stop` act on, from a pid (the launcher or any
 * process it traces: the one that maps the session's control file), or a session folder
 * (OUTPUT.raw, or OUTPUT), or with neither the one session of this user that runs. Fills
 * session_dir (cap bytes) and *launcher_pid. Returns 0, or with why in error ("no running
 * 'lantern profile' session", "pid 42 belongs to another user", ...) -ENOENT (no session),
 * -ESRCH (no such pid), -EACCES (another user's) or -EEXIST (several run); a session folder
 * whose real path fails or does not fit cap gives realpath's -errno or -ENAMETOOLONG with
 * error left as it was. */
int launcher_control_find(const char *pid, const char *session, char *session_dir, size_t cap,
                          int *launcher_pid, char *error, size_t error_cap);

/* ---- the session folder ------------------------------------------------------------------- */

/* The database's name from -o's pattern, expanded as nsys expands its -o: %r the rank (the
 * first of src/trace/rank.h's variables that holds one), %h the host name, %p the launcher's
 * pid, %q{VAR} the environment variable VAR's value, %n the lowest number >= 1 for which
 * neither NAME nor NAME.raw exists, %% a percent sign; other text is kept. Sets *name,
 * malloc'd. Returns 0; -EINVAL when the pattern cannot be expanded (an unknown %X, %r with no
 * rank, VAR not set, an empty name), with *error, malloc'd, saying why ("-o 'run-%r.db': %r is
 * the rank, but none of RANK, ... holds one"); -ENOSPC when no %n is free (*error says so);
 * -ENOMEM out of memory (*error NULL). */
int launcher_output_name(const char *pattern, char **name, char **error);

/* The name without -o: "lantern-%n.db", the first lantern-N.db of the current folder that
 * exists neither as a file nor as a session folder, so a second run never overwrites the
 * first; malloc'd, NULL when none is free. */
char *launcher_default_output(void);

/* Removes a session folder: the raw files Lantern writes there (regular files named *.lrt,
 * *.lrb, *.untraced), then the folder, which fails if anything else is in it (nothing else is
 * ours). No symbolic link is followed. Returns 0, or the failed call's -errno, errno set too
 * (-ENOTEMPTY: files that are not ours). */
int launcher_remove_session(const char *raw_dir);
/* How many processes of the session loaded the agent but ran untraced, having said why
 * (<pid>.untraced, trace/format.h). */
int launcher_untraced_processes(const char *raw_dir);

/* ---- the -t list, from src/trace/sources.def ---------------------------------------------- */

/* The -t list's names, for the help and the errors. */
struct launcher_trace_names {
    char known[128];          /* every source, as the help lists them: "nvtx, cuda, nvml" */
    char default_gpu[128];    /* the default where an NVIDIA GPU is present: "cuda,nvtx" */
    char default_no_gpu[128]; /* the default elsewhere: "nvtx" */
    char sampled[128];        /* the sources the launcher samples itself: "nvml" */
};
const struct launcher_trace_names *launcher_trace_names(void);

/* Whether every item of list is a source's name (an empty item is not). */
int launcher_trace_valid(const char *list);

/* The list without -t: the sources of the agent, those that need an NVIDIA GPU only where the
 * driver's device node exists (so a machine without a GPU gets no warning for a source nobody
 * asked for). The launcher's own samplers are not in it: without -t they run where they work. */
const char *launcher_default_trace(void);

#endif
