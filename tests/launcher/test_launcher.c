/* The launcher (src/launcher/launcher.h) and the comma-list parser it shares with the agent
 * (src/trace/list.h): exact answers on hand-picked lists, the -t vocabulary against the rows
 * of sources.def, -o's name patterns in a made-up environment, and real commands run through
 * one session each. */
#include "harness.h"
#include "launcher/launcher.h"
#include "launcher/launcher_internal.h"
#include "launcher/samplers.h"
#include "trace/codec.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/list.h"
#include "trace/rank.h"
#include "trace/records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void list_has_whole_items_only(void)
{
    ASSERT_EQ(trace_list_has("nvtx,cuda", "cuda"), 1);
    ASSERT_EQ(trace_list_has("nvtx,cuda", "nvtx"), 1);
    ASSERT_EQ(trace_list_has("nvtx,cuda", "cud"), 0);
    ASSERT_EQ(trace_list_has("nvtx,cudax", "cuda"), 0);
    ASSERT_EQ(trace_list_has("nvtx", "nvtx"), 1);
    ASSERT_EQ(trace_list_has("nvtx,", "nvtx"), 1);
    ASSERT_EQ(trace_list_has(",,nvtx", "nvtx"), 1);
    ASSERT_EQ(trace_list_has("", "nvtx"), 0);
    ASSERT_EQ(trace_list_has(NULL, "nvtx"), 0);
}

static void list_within_rejects_unknown_and_empty_items(void)
{
    static const char *const names[] = {"nvtx", "cuda"};
    ASSERT_EQ(trace_list_within("nvtx", names, 2), 1);
    ASSERT_EQ(trace_list_within("cuda,nvtx,cuda", names, 2), 1);
    ASSERT_EQ(trace_list_within("nvtx,nvml", names, 2), 0);
    ASSERT_EQ(trace_list_within("", names, 2), 0);
    ASSERT_EQ(trace_list_within("nvtx,", names, 2), 0);
    ASSERT_EQ(trace_list_within(",nvtx", names, 2), 0);
    ASSERT_EQ(trace_list_within("nvtx,,cuda", names, 2), 0);
    ASSERT_EQ(trace_list_within("NVTX", names, 2), 0);
    ASSERT_EQ(trace_list_within("nvt", names, 2), 0);
}

/* sources.def's rows, read here on their own to check what the launcher derives from them. */
static const struct {
    const char *name, *where;
    int needs_gpu, by_default;
} rows[] = {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    {name, where, needs_gpu, by_default},
#include "trace/sources.def"
#undef SOURCE
};
#define ROW_COUNT (sizeof rows / sizeof rows[0])

/* Appends, after sep, the names of the rows that run at where (NULL: anywhere) and need a GPU
 * as gpu says (-1: either way); with where "agent", only those on by default (the default
 * lists). */
static void add_names(char *out, const char *sep, const char *where, int gpu)
{
    for (size_t i = 0; i < ROW_COUNT; i++)
        if ((!where || !strcmp(rows[i].where, where)) && (gpu < 0 || rows[i].needs_gpu == gpu) &&
            (!where || strcmp(where, "agent") || rows[i].by_default))
            sprintf(out + strlen(out), "%s%s", out[0] ? sep : "", rows[i].name);
}

static void trace_names_come_from_sources_def(void)
{
    const struct launcher_trace_names *n = launcher_trace_names();
    char want[256] = "";
    add_names(want, ", ", NULL, -1);
    ASSERT_STR_EQ(n->known, want);
    want[0] = 0; /* the agent's sources that need a GPU first, as the default always was */
    add_names(want, ",", "agent", 1);
    add_names(want, ",", "agent", 0);
    ASSERT_STR_EQ(n->default_gpu, want);
    want[0] = 0;
    add_names(want, ",", "agent", 0);
    ASSERT_STR_EQ(n->default_no_gpu, want);
    want[0] = 0;
    add_names(want, ", ", "launcher", -1);
    ASSERT_STR_EQ(n->sampled, want);
    for (size_t i = 0; i < ROW_COUNT; i++)
        ASSERT_EQ(launcher_trace_valid(rows[i].name), 1);
    ASSERT_EQ(launcher_trace_valid(n->default_gpu), 1);
    ASSERT_EQ(launcher_trace_valid("nvtx,unknown"), 0);
    const char *d = launcher_default_trace();
    ASSERT_STR_EQ(d, access("/dev/nvidiactl", F_OK) == 0 ? n->default_gpu : n->default_no_gpu);
}

static void every_launcher_source_has_a_sampler(void)
{
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const struct launcher_sampler *s = launcher_sampler_find(rows[i].name);
        ASSERT_EQ(s != NULL, !strcmp(rows[i].where, "launcher"));
        if (s)
            ASSERT_STR_EQ(s->source, rows[i].name);
    }
    ASSERT(launcher_sampler_find("no such source") == NULL);
}

/* ---- one session per command, in a fresh folder ------------------------------------------- */

static char folder[PATH_MAX];

static void enter_fresh_folder(void)
{
    snprintf(folder, sizeof folder, "%s/lantern-test-launcher-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ASSERT(mkdtemp(folder) != NULL);
    ASSERT_EQ(chdir(folder), 0);
    FILE *agent = fopen("liblantern-agent.so", "w"); /* found, never loaded: nvtx only */
    ASSERT(agent != NULL);
    fclose(agent);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/liblantern-agent.so", folder);
    ASSERT_EQ(setenv("LANTERN_AGENT", path, 1), 0);
}

static void leave_folder(void)
{
    ASSERT_EQ(unlink("liblantern-agent.so"), 0);
    ASSERT_EQ(chdir("/"), 0);
    ASSERT_EQ(rmdir(folder), 0);
}

/* Runs command in a session writing x.db; returns launcher_run's answer, *error its line. */
static int run_session(char **command, char *error, size_t error_len)
{
    struct launcher_options o = {
        .output = "x.db", .trace = "nvtx", .trace_given = 1, .command = command};
    struct launcher l;
    launcher_init(&l, &o);
    ASSERT_EQ(launcher_open(&l), 0);
    ASSERT_STR_EQ(l.raw_dir, "x.db.raw");
    /* the agent's environment is set by launcher_run, after the samplers started */
    ASSERT(getenv("LANTERN_SESSION_DIR") == NULL);
    ASSERT_EQ(launcher_start_samplers(&l), 0);
    int status = launcher_run(&l);
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/x.db.raw", folder);
    ASSERT_STR_EQ(getenv("LANTERN_SESSION_DIR"), want);
    ASSERT_STR_EQ(getenv("LANTERN_TRACE"), "nvtx");
    unsetenv("LANTERN_SESSION_DIR");
    snprintf(error, error_len, "%s", status < 0 ? launcher_error(&l) : "");
    if (status >= 0)
        ASSERT_EQ(launcher_finish(&l, status), 0);
    struct stat st;
    ASSERT_EQ(stat("x.db.raw/launcher.lrt", &st), 0);
    ASSERT(st.st_size > TRACE_FILE_HEADER_SIZE);
    ASSERT_EQ(launcher_remove_session(l.raw_dir), 0);
    ASSERT(stat("x.db.raw", &st) < 0 && errno == ENOENT);
    launcher_release(&l);
    return status;
}

/* Every row of src/launcher/profile_options.def that names a variable of the agent's
 * environment, given a value here, reaches the environment with it (and one not given does
 * not): the rows, not hand-written setenvs, decide. */
#define ENV(id, render) TRACE_ENV_##id
#define ENV_EARLY(id, render) TRACE_ENV_##id
#define NO_ENV TRACE_ENV_COUNT
#define PROFILE_OPTION(source, short_flag, long_flag, argument, value_name, check, field, env,    \
                       help_text, doc)                                                             \
    env,
static const enum trace_env option_variables[] = {
#include "launcher/profile_options.def"
};
#undef PROFILE_OPTION
#define PROFILE_OPTION(source, short_flag, long_flag, argument, value_name, check, field, env,    \
                       help_text, doc)                                                             \
    source,
static const char *const option_sources[] = {
#include "launcher/profile_options.def"
};
#undef ENV
#undef ENV_EARLY
#undef NO_ENV
#undef PROFILE_OPTION

static uint64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void option_rows_reach_the_agent_environment(void)
{
    static const struct {
        enum trace_env variable;
        const char *value; /* NULL: a CLOCK_MONOTONIC bound, checked below */
    } want[] = {
        {TRACE_ENV_CAPTURE, "nvtx:step"},      {TRACE_ENV_CUDA_API, "all"},
        {TRACE_ENV_CUDA_MEMORY, "1"},          {TRACE_ENV_PYTHON_BACKTRACE, "1"},
        {TRACE_ENV_SAMPLING_HZ, "250"},        {TRACE_ENV_OSRT_THRESHOLD_NS, "5000"},
        {TRACE_ENV_CAPTURE_FROM_NS, NULL},     {TRACE_ENV_CAPTURE_UNTIL_NS, NULL},
        {TRACE_ENV_RING_NS, "1500000000"},     {TRACE_ENV_RING_TRIGGER, "nvtx:boom"},
        {TRACE_ENV_PYTHON_FUNCTIONS, "json.*"}, {TRACE_ENV_PYTHON_SAMPLING_HZ, "200"},
        {TRACE_ENV_OSRT_BACKTRACE_NS, "200000"}, {TRACE_ENV_OSRT_BACKTRACE_DEPTH, "8"},
    };
    const size_t count = sizeof want / sizeof want[0];
    /* every row with a variable is in want, and nothing else is */
    size_t rows = 0;
    for (size_t i = 0; i < sizeof option_variables / sizeof option_variables[0]; i++) {
        if (option_variables[i] == TRACE_ENV_COUNT)
            continue;
        rows++;
        size_t k = 0;
        while (k < count && want[k].variable != option_variables[i])
            k++;
        ASSERT(k < count);
    }
    ASSERT_EQ(rows, count);
    /* each row belongs to the launcher or to a -t source of sources.def */
    for (size_t i = 0; i < sizeof option_sources / sizeof option_sources[0]; i++)
        ASSERT(!strcmp(option_sources[i], "launcher") || launcher_trace_valid(option_sources[i]));

    enter_fresh_folder();
    ASSERT_EQ(mkdir("lantern-python", 0755), 0); /* the bootstrap --python-functions needs */
    FILE *site = fopen("lantern-python/sitecustomize.py", "w");
    ASSERT(site != NULL);
    fclose(site);
    char *command[] = {"true", NULL};
    struct launcher_options o = {.output = "x.db", .trace = "nvtx", .command = command,
                                 .capture_range = "nvtx:step", .cuda_api = "all",
                                 .cuda_memory_usage = 1, .python_backtrace = 1,
                                 .sampling_hz = 250, .python_sampling_hz = 200,
                                 .osrt_threshold = "5000", .delay_s = 2,
                                 .duration_s = 3, .ring_s = 1.5, .ring_trigger = "nvtx:boom",
                                 .py_functions = "json.*", .osrt_backtrace_ns = "200000",
                                 .osrt_backtrace_depth = "8"};
    struct launcher l;
    launcher_init(&l, &o);
    uint64_t before = monotonic_ns();
    ASSERT_EQ(launcher_open(&l), 0);
    ASSERT_EQ(environment_set_agent(&l), 0);
    uint64_t after = monotonic_ns();
    for (size_t k = 0; k < count; k++) {
        const char *set = getenv(trace_env_name(want[k].variable));
        ASSERT(set != NULL);
        if (want[k].value)
            ASSERT_STR_EQ(set, want[k].value);
    }
    uint64_t from = strtoull(getenv(trace_env_name(TRACE_ENV_CAPTURE_FROM_NS)), NULL, 10);
    uint64_t until = strtoull(getenv(trace_env_name(TRACE_ENV_CAPTURE_UNTIL_NS)), NULL, 10);
    ASSERT(from >= before + 2000000000u && from <= after + 2000000000u);
    ASSERT_EQ(until - from, 3000000000u);
    for (size_t k = 0; k < count; k++)
        unsetenv(trace_env_name(want[k].variable));
    /* not given: not set */
    struct launcher_options plain = {.output = "y.db", .trace = "nvtx", .command = command};
    struct launcher m;
    launcher_init(&m, &plain);
    ASSERT_EQ(launcher_open(&m), 0);
    ASSERT_EQ(environment_set_agent(&m), 0);
    for (size_t k = 0; k < count; k++)
        ASSERT(getenv(trace_env_name(want[k].variable)) == NULL);
    unsetenv(trace_env_name(TRACE_ENV_SESSION_DIR));
    ASSERT_EQ(launcher_remove_session(l.raw_dir), 0);
    ASSERT_EQ(launcher_remove_session(m.raw_dir), 0);
    launcher_release(&l);
    launcher_release(&m);
    ASSERT_EQ(unlink("lantern-python/sitecustomize.py"), 0);
    ASSERT_EQ(rmdir("lantern-python"), 0);
    leave_folder();
}

static void run_returns_the_status_a_shell_would(void)
{
    char error[512];
    enter_fresh_folder();
    char *exits[] = {"sh", "-c", "exit 3", NULL};
    ASSERT_EQ(run_session(exits, error, sizeof error), 3);
    char *killed[] = {"sh", "-c", "kill -TERM $$", NULL};
    ASSERT_EQ(run_session(killed, error, sizeof error), 128 + 15);
    char *missing[] = {"/no/such/program", NULL};
    ASSERT_EQ(run_session(missing, error, sizeof error), -ENOENT);
    ASSERT_STR_EQ(error, "cannot run '/no/such/program': No such file or directory");
    leave_folder();
}

static void open_refuses_an_existing_database_without_force(void)
{
    enter_fresh_folder();
    FILE *db = fopen("x.db", "w");
    ASSERT(db != NULL);
    fclose(db);
    char *command[] = {"true", NULL};
    struct launcher_options o = {.output = "x.db", .trace = "nvtx", .command = command};
    struct launcher l;
    launcher_init(&l, &o);
    ASSERT_EQ(launcher_open(&l), -EEXIST);
    ASSERT_STR_EQ(launcher_error(&l),
                  "'x.db' exists (use --force to replace it, or -o another name)");
    launcher_release(&l);
    launcher_release(&l); /* twice is allowed */
    ASSERT_EQ(access("x.db.raw", F_OK), -1);
    ASSERT_EQ(unlink("x.db"), 0);
    leave_folder();
}

static void default_output_is_the_first_free_name(void)
{
    enter_fresh_folder();
    char *name = launcher_default_output();
    ASSERT_STR_EQ(name, "lantern-1.db");
    free(name);
    ASSERT_EQ(mkdir("lantern-1.db.raw", 0755), 0);
    name = launcher_default_output();
    ASSERT_STR_EQ(name, "lantern-2.db");
    free(name);
    ASSERT_EQ(rmdir("lantern-1.db.raw"), 0);
    leave_folder();
}

/* ---- after the command: the traced processes still writing (wait.c) ---------------------- */

/* A raw file named as an agent names it: the header, and the end record if ended. */
static void write_raw_file(long pid, uint64_t start_ns, int ended)
{
    char name[64];
    snprintf(name, sizeof name, "x.db.raw/%ld-%llu.lrt", pid, (unsigned long long)start_ns);
    FILE *f = fopen(name, "w");
    ASSERT(f != NULL);
    uint8_t header[TRACE_FILE_HEADER_SIZE], chunk[256];
    trace_file_header(header);
    ASSERT_EQ(fwrite(header, 1, sizeof header, f), sizeof header);
    if (ended) {
        struct trace_chunk_builder b;
        trace_chunk_begin(&b, chunk, sizeof chunk, start_ns);
        struct trace_process_end end = {.end = start_ns + 1, .clean = 1};
        ASSERT_EQ(trace_put_process_end(&b, &end), 0);
        size_t len = trace_chunk_finish(&b);
        ASSERT_EQ(fwrite(chunk, 1, len, f), len);
    }
    ASSERT_EQ(fclose(f), 0);
}

/* Waits (up to 10 s) until /proc/<pid>/stat holds text: ") Z " a zombie, unreaped; "(sleep) "
 * the program it exec'd. */
static void wait_for_stat(pid_t pid, const char *text)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 10000; i++) {
        FILE *f = fopen(path, "r");
        ASSERT(f != NULL);
        size_t len = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[len] = 0;
        if (strstr(stat, text))
            return;
        usleep(1000);
    }
    ASSERT(!"the child's /proc/<pid>/stat never held the text");
}

/* Only a file without its end record whose process lives on with the agent is waited for:
 * not one whose process is a zombie or gone, nor one of a pid reused by a process that started
 * after the file, nor one that ended, nor one whose process maps no agent (it exec'd an
 * untraced program); the one left is named, with its command line. */
static void wait_names_only_live_writers_without_an_end(void)
{
    enter_fresh_folder();
    ASSERT_EQ(mkdir("x.db.raw", 0755), 0);
    /* this process maps "liblantern-agent.so" as a process with the agent does */
    FILE *agent = fopen("liblantern-agent.so", "w");
    ASSERT(agent != NULL && fputc(0, agent) == 0 && fclose(agent) == 0);
    int agent_fd = open("liblantern-agent.so", O_RDONLY);
    void *agent_map = mmap(NULL, 1, PROT_READ, MAP_PRIVATE, agent_fd, 0);
    ASSERT(agent_fd >= 0 && agent_map != MAP_FAILED);
    uint64_t now = monotonic_ns();
    write_raw_file(getpid(), now, 0);     /* this process, still writing */
    write_raw_file(getpid(), now + 1, 1); /* this process, ended */
    write_raw_file(getpid(), 1, 0);       /* a file from before this process: its pid reused */
    pid_t zombie = fork();
    ASSERT(zombie >= 0);
    if (zombie == 0)
        _exit(0);
    wait_for_stat(zombie, ") Z ");
    write_raw_file(zombie, now, 0);
    write_raw_file(999999999, now, 0); /* no such process */
    pid_t exec_d = fork(); /* forked with a file, then exec'd a program without the agent */
    ASSERT(exec_d >= 0);
    if (exec_d == 0) {
        execlp("sleep", "sleep", "5", (char *)NULL);
        _exit(127);
    }
    write_raw_file(exec_d, now, 0);
    wait_for_stat(exec_d, "(sleep) ");
    struct launcher_options o = {.output = "x.db", .wait_timeout_s = 0.05};
    struct launcher l;
    launcher_init(&l, &o);
    l.raw_dir = strdup("x.db.raw");
    l.session_dir = realpath("x.db.raw", NULL);
    uint64_t start = monotonic_ns();
    ASSERT_EQ(launcher_wait_writers(&l), 0);
    ASSERT(monotonic_ns() - start >= 50000000u); /* the whole timeout: one still writes */
    ASSERT_EQ(l.still_writing, 1);
    char self[64];
    snprintf(self, sizeof self, "pid %d (", (int)getpid());
    ASSERT(l.running && strncmp(l.running, self, strlen(self)) == 0);
    ASSERT(strstr(l.running, "test_launcher") && !strchr(l.running, ','));
    o.wait_primary = 1; /* not waited for, still named */
    ASSERT_EQ(launcher_wait_writers(&l), 0);
    ASSERT_EQ(l.still_writing, 1);
    ASSERT(waitpid(zombie, NULL, 0) == zombie);
    ASSERT_EQ(kill(exec_d, SIGKILL), 0);
    ASSERT(waitpid(exec_d, NULL, 0) == exec_d);
    ASSERT_EQ(munmap(agent_map, 1), 0);
    close(agent_fd);
    ASSERT_EQ(launcher_remove_session("x.db.raw"), 0);
    launcher_release(&l);
    leave_folder();
}

/* ---- -o's name patterns ----------------------------------------------------------------- */

/* The rank variables as docs and nsys users know them, in the order they are read. */
static const char *const rank_variables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                             "PMIX_RANK", "SLURM_PROCID"};
#define RANK_VARIABLES (sizeof rank_variables / sizeof rank_variables[0])

static void clear_rank_variables(void)
{
    for (size_t i = 0; i < RANK_VARIABLES; i++)
        ASSERT_EQ(unsetenv(rank_variables[i]), 0);
}

/* The expansion of pattern, which must succeed; malloc'd. */
static char *expand(const char *pattern)
{
    char *name, *error;
    ASSERT_EQ(launcher_output_name(pattern, &name, &error), 0);
    ASSERT(error == NULL);
    return name;
}

/* The error line of pattern, which must fail with code; "" when the error is NULL. */
static void expect_error(const char *pattern, int code, const char *want)
{
    char *name, *error;
    ASSERT_EQ(launcher_output_name(pattern, &name, &error), code);
    ASSERT(name == NULL);
    ASSERT_STR_EQ(error, want);
    free(error);
}

static void output_name_expands_rank_host_pid_variable_and_percent(void)
{
    clear_rank_variables();
    ASSERT_EQ(setenv("RANK", "3", 1), 0);
    ASSERT_EQ(setenv("LANTERN_TEST_JOB", "j/7%r", 1), 0); /* a value is never expanded again */
    char host[256], want[512];
    ASSERT_EQ(gethostname(host, sizeof host), 0);
    snprintf(want, sizeof want, "run-3-%s-%d-j/7%%r-100%%.db", host, (int)getpid());
    char *name = expand("run-%r-%h-%p-%q{LANTERN_TEST_JOB}-100%%.db");
    ASSERT_STR_EQ(name, want);
    free(name);
    name = expand("plain.db"); /* no pattern: the name as given */
    ASSERT_STR_EQ(name, "plain.db");
    free(name);
    ASSERT_EQ(setenv("LANTERN_TEST_JOB", "", 1), 0); /* set but empty is set */
    name = expand("a%q{LANTERN_TEST_JOB}b");
    ASSERT_STR_EQ(name, "ab");
    free(name);
    ASSERT_EQ(unsetenv("LANTERN_TEST_JOB"), 0);
    clear_rank_variables();
}

/* %r reads the variables in the agent's order (src/trace/rank.h: one definition), and skips a
 * value that is not a rank. */
static void output_name_rank_is_the_first_variable_that_holds_one(void)
{
    size_t i = 0;
    for (; trace_rank_variables[i]; i++) {
        ASSERT(i < RANK_VARIABLES);
        ASSERT_STR_EQ(trace_rank_variables[i], rank_variables[i]);
    }
    ASSERT_EQ(i, RANK_VARIABLES);
    clear_rank_variables();
    for (size_t first = RANK_VARIABLES; first-- > 0;) {
        char value[16];
        snprintf(value, sizeof value, "%zu", 10 + first);
        ASSERT_EQ(setenv(rank_variables[first], value, 1), 0);
        char *name = expand("r%r");
        char want[16];
        snprintf(want, sizeof want, "r%zu", 10 + first);
        ASSERT_STR_EQ(name, want);
        free(name);
    }
    ASSERT_EQ(setenv("RANK", "x1", 1), 0);
    ASSERT_EQ(setenv("OMPI_COMM_WORLD_RANK", "-1", 1), 0);
    ASSERT_EQ(setenv("PMI_RANK", "", 1), 0);
    char *name = expand("r%r"); /* PMIX_RANK=13 */
    ASSERT_STR_EQ(name, "r13");
    free(name);
    clear_rank_variables();
}

static void output_name_number_is_the_first_free_one(void)
{
    enter_fresh_folder();
    char *name = expand("run-%n.db");
    ASSERT_STR_EQ(name, "run-1.db");
    free(name);
    FILE *f = fopen("run-1.db", "w");
    ASSERT(f != NULL);
    fclose(f);
    ASSERT_EQ(mkdir("run-2.db.raw", 0755), 0); /* a session folder takes its name too */
    name = expand("run-%n.db");
    ASSERT_STR_EQ(name, "run-3.db");
    free(name);
    name = expand("%n-%n.db"); /* every %n is the same number */
    ASSERT_STR_EQ(name, "1-1.db");
    free(name);
    name = expand("run-1.db"); /* without %n an existing name is returned, and refused later */
    ASSERT_STR_EQ(name, "run-1.db");
    free(name);
    ASSERT_EQ(unlink("run-1.db"), 0);
    ASSERT_EQ(rmdir("run-2.db.raw"), 0);
    leave_folder();
}

static void output_name_errors_say_what_is_wrong(void)
{
    clear_rank_variables();
    expect_error("run-%x.db", -EINVAL,
                 "-o 'run-%x.db': unknown pattern '%x' (known: %r rank, %h host, %p pid, %q{VAR} "
                 "environment variable, %n first free number, %%)");
    expect_error("run-%", -EINVAL, "-o 'run-%': a '%' ends the name (%% writes a percent sign)");
    expect_error("run-%r.db", -EINVAL,
                 "-o 'run-%r.db': %r is the rank, but none of RANK, OMPI_COMM_WORLD_RANK, "
                 "PMI_RANK, PMIX_RANK, SLURM_PROCID holds one (not run by a job launcher?)");
    ASSERT_EQ(unsetenv("LANTERN_TEST_UNSET"), 0);
    expect_error("%q{LANTERN_TEST_UNSET}.db", -EINVAL,
                 "-o '%q{LANTERN_TEST_UNSET}.db': %q{LANTERN_TEST_UNSET}: the environment "
                 "variable LANTERN_TEST_UNSET is not set");
    static const char *const no_name[] = {"%q", "%qHOME", "%q{HOME", "%q{}"};
    for (size_t i = 0; i < sizeof no_name / sizeof no_name[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "-o '%s': %%q needs a variable's name in braces: %%q{VAR}",
                 no_name[i]);
        expect_error(no_name[i], -EINVAL, want);
    }
    ASSERT_EQ(setenv("LANTERN_TEST_EMPTY", "", 1), 0);
    expect_error("%q{LANTERN_TEST_EMPTY}", -EINVAL,
                 "-o '%q{LANTERN_TEST_EMPTY}': the name is empty");
    ASSERT_EQ(unsetenv("LANTERN_TEST_EMPTY"), 0);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"list_has_whole_items_only", list_has_whole_items_only},
        {"list_within_rejects_unknown_and_empty_items",
         list_within_rejects_unknown_and_empty_items},
        {"trace_names_come_from_sources_def", trace_names_come_from_sources_def},
        {"every_launcher_source_has_a_sampler", every_launcher_source_has_a_sampler},
        {"option_rows_reach_the_agent_environment", option_rows_reach_the_agent_environment},
        {"run_returns_the_status_a_shell_would", run_returns_the_status_a_shell_would},
        {"open_refuses_an_existing_database_without_force",
         open_refuses_an_existing_database_without_force},
        {"default_output_is_the_first_free_name", default_output_is_the_first_free_name},
        {"wait_names_only_live_writers_without_an_end",
         wait_names_only_live_writers_without_an_end},
        {"output_name_expands_rank_host_pid_variable_and_percent",
         output_name_expands_rank_host_pid_variable_and_percent},
        {"output_name_rank_is_the_first_variable_that_holds_one",
         output_name_rank_is_the_first_variable_that_holds_one},
        {"output_name_number_is_the_first_free_one", output_name_number_is_the_first_free_one},
        {"output_name_errors_say_what_is_wrong", output_name_errors_say_what_is_wrong},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
