/* The NVTX agent end to end, without the launcher: each test runs nvtx_workload (or
 * nvtx_two_libs) with NVTX_INJECTION64_PATH pointing at liblantern-agent.so and its own
 * LANTERN_SESSION_DIR, then decodes the raw file(s) and checks exact records. */
#include "harness.h"
#include "trace/format.h"
#include "trace_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct run {
    char dir[256]; /* per test: session/, out.txt, err.txt */
    char session[300];
    char out[1 << 16];
    char err[1 << 16];
    pid_t pid;
    int status;
    char files[8][600]; /* the .lrt files, sorted by name */
    int nfiles;
};

/* Folders of the runs, removed when every test passed (kept for a look otherwise). */
static char run_dirs[64][256];
static int run_dir_count;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_run_dirs(void)
{
    for (int i = 0; i < run_dir_count; i++)
        nftw(run_dirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void read_text(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Runs `program scenario` with the agent; env_extra is "NAME=value" or NULL. session:
 * 1 = a fresh session folder, 0 = LANTERN_SESSION_DIR unset. */
static void run_program(struct run *r, const char *program, const char *scenario, int session,
                        const char *env_extra)
{
    memset(r, 0, sizeof(*r));
    strcpy(r->dir, "/tmp/lantern-agent-test-XXXXXX");
    ASSERT(mkdtemp(r->dir));
    if (run_dir_count < 64)
        strcpy(run_dirs[run_dir_count++], r->dir);
    snprintf(r->session, sizeof(r->session), "%s/session", r->dir);
    ASSERT(mkdir(r->session, 0755) == 0);
    r->pid = fork();
    ASSERT(r->pid >= 0);
    if (r->pid == 0) {
        char path[400];
        snprintf(path, sizeof(path), "%s/out.txt", r->dir);
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        snprintf(path, sizeof(path), "%s/err.txt", r->dir);
        int err = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out, 1);
        dup2(err, 2);
        setenv("NVTX_INJECTION64_PATH", LANTERN_AGENT_PATH, 1);
        if (session)
            setenv("LANTERN_SESSION_DIR", r->session, 1);
        else
            unsetenv("LANTERN_SESSION_DIR");
        unsetenv("LANTERN_BUFFER_KB");
        if (env_extra)
            putenv((char *)env_extra);
        execl(program, program, scenario, (char *)NULL);
        _exit(127);
    }
    ASSERT(waitpid(r->pid, &r->status, 0) == r->pid);
    char path[400];
    snprintf(path, sizeof(path), "%s/out.txt", r->dir);
    read_text(path, r->out, sizeof(r->out));
    snprintf(path, sizeof(path), "%s/err.txt", r->dir);
    read_text(path, r->err, sizeof(r->err));
    DIR *d = opendir(r->session);
    ASSERT(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".lrt") == 0 && r->nfiles < 8)
            snprintf(r->files[r->nfiles++], sizeof(r->files[0]), "%s/%s", r->session, e->d_name);
    }
    closedir(d);
    qsort(r->files, (size_t)r->nfiles, sizeof(r->files[0]), compare_names);
}

static void run_workload(struct run *r, const char *scenario, const char *env_extra)
{
    run_program(r, NVTX_WORKLOAD_PATH, scenario, 1, env_extra);
}

static void assert_exited_ok(const struct run *r)
{
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        fprintf(stderr, "program failed (status %d): %s\n", r->status, r->err);
    ASSERT(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
}

/* The single file of a run whose process is `pid`. */
static void load_file_of(const struct run *r, pid_t pid, struct trace_log *log)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "/%d-", (int)pid);
    for (int i = 0; i < r->nfiles; i++) {
        if (strstr(r->files[i], prefix)) {
            ASSERT_EQ(trace_log_load(log, r->files[i]), 0);
            ASSERT(!log->damaged);
            return;
        }
    }
    fprintf(stderr, "no trace file for pid %d\n", (int)pid);
    ASSERT(0);
}

static int string_is(const struct trace_log *log, uint64_t id, const char *expected)
{
    char *s = trace_log_string(log, id, NULL);
    int same = s && strcmp(s, expected) == 0;
    free(s);
    return same;
}

static uint64_t sum_dropped(const struct trace_log *log)
{
    uint64_t n = 0;
    for (size_t i = 0; i < log->count; i++)
        if (log->records[i].type == TRACE_DROPPED)
            n += log->records[i].u[1];
    return n;
}

/* The process record opens the file and the clean end closes it, with no drops. */
static void assert_clean_process(const struct trace_log *log, pid_t pid, pid_t ppid)
{
    ASSERT(log->count >= 2);
    const struct trace_log_record *p = &log->records[0];
    ASSERT_EQ(p->type, TRACE_PROCESS);
    ASSERT_EQ(p->u[PROCESS_PID], pid);
    ASSERT_EQ(p->u[PROCESS_PPID], ppid);
    ASSERT(p->u[PROCESS_FLAGS] & TRACE_FLAG_NVTX);
    const struct trace_log_record *end = &log->records[log->count - 1];
    ASSERT_EQ(end->type, TRACE_PROCESS_END);
    ASSERT_EQ(end->u[END_CLEAN], 1);
    ASSERT_EQ(end->u[END_DROPPED], 0);
    ASSERT_EQ(trace_log_count(log, TRACE_PROCESS_END), 1);
    ASSERT_EQ(sum_dropped(log), 0);
}

static void test_push_pop_levels_marks_and_ranges(void)
{
    struct run r;
    run_workload(&r, "basic", NULL);
    assert_exited_ok(&r);
    ASSERT_EQ(r.nfiles, 1);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());

    const struct trace_log_record *p = &log.records[0];
    char name[64];
    snprintf(name, sizeof(name), "/%d-%llu.lrt", (int)r.pid,
             (unsigned long long)p->u[PROCESS_START]);
    ASSERT(strstr(r.files[0], name));
    ASSERT(p->s_len[PROCESS_EXE] > 14 &&
           memcmp(p->s[PROCESS_EXE] + p->s_len[PROCESS_EXE] - 14, "/nvtx_workload", 14) == 0);
    const char cmdline[] = NVTX_WORKLOAD_PATH "\0basic";
    ASSERT_EQ(p->s_len[PROCESS_CMDLINE], sizeof(cmdline) - 1);
    ASSERT(memcmp(p->s[PROCESS_CMDLINE], cmdline, sizeof(cmdline) - 1) == 0);
    ASSERT_EQ(p->s_len[PROCESS_VERSION], strlen(LANTERN_VERSION));
    char host[256] = "";
    gethostname(host, sizeof(host));
    ASSERT_EQ(p->s_len[PROCESS_HOST], strlen(host));

    ASSERT_EQ(trace_log_count(&log, TRACE_THREAD), 1);
    const struct trace_log_record *thread = trace_log_nth(&log, TRACE_THREAD, 0);
    ASSERT_EQ(thread->u[THREAD_TID], r.pid); /* the main thread's tid is the pid */

    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 2);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 2);
    const struct trace_log_record *outer = trace_log_nth(&log, TRACE_PUSH, 0);
    const struct trace_log_record *inner = trace_log_nth(&log, TRACE_PUSH, 1);
    const struct trace_log_record *pop1 = trace_log_nth(&log, TRACE_POP, 0);
    const struct trace_log_record *pop0 = trace_log_nth(&log, TRACE_POP, 1);
    ASSERT(string_is(&log, outer->u[PUSH_NAME], "outer"));
    ASSERT(string_is(&log, inner->u[PUSH_NAME], "inner"));
    ASSERT_EQ(outer->u[EV_DEPTH], 0);
    ASSERT_EQ(inner->u[EV_DEPTH], 1);
    ASSERT_EQ(pop1->u[EV_DEPTH], 1);
    ASSERT_EQ(pop0->u[EV_DEPTH], 0);
    ASSERT_EQ(outer->u[EV_THREAD], thread->u[THREAD_IDX]);
    ASSERT_EQ(outer->u[EV_DOMAIN], 0);
    ASSERT(outer->u[EV_TS] <= inner->u[EV_TS] && inner->u[EV_TS] <= pop1->u[EV_TS] &&
           pop1->u[EV_TS] <= pop0->u[EV_TS]);
    ASSERT(p->u[PROCESS_START] <= outer->u[EV_TS]);
    ASSERT(thread->u[THREAD_FIRST_SEEN] <= outer->u[EV_TS]);
    ASSERT_EQ(inner->u[PUSH_COLOR], 0);
    ASSERT_EQ(inner->u[PUSH_PAYLOAD_TYPE], 0);

    ASSERT_EQ(trace_log_count(&log, TRACE_UNBALANCED_POP), 1);
    ASSERT(trace_log_nth(&log, TRACE_UNBALANCED_POP, 0)->u[EV_TS] >= pop0->u[EV_TS]);
    ASSERT_EQ(trace_log_count(&log, TRACE_MARK), 1);
    ASSERT(string_is(&log, trace_log_nth(&log, TRACE_MARK, 0)->u[MARK_NAME], "here"));

    unsigned long long id = 0;
    ASSERT(sscanf(r.out, "range %llu", &id) == 1);
    ASSERT_EQ(trace_log_count(&log, TRACE_START), 1);
    ASSERT_EQ(trace_log_count(&log, TRACE_END), 1);
    const struct trace_log_record *start = trace_log_nth(&log, TRACE_START, 0);
    ASSERT_EQ(start->u[START_ID], id);
    ASSERT(string_is(&log, start->u[START_NAME], "span"));
    ASSERT_EQ(trace_log_nth(&log, TRACE_END, 0)->u[END_ID], id);
    ASSERT_EQ(r.err[0], '\0'); /* nothing printed by the agent */
    trace_log_free(&log);
}

static void test_64_threads_nested_ranges_all_recorded(void)
{
    struct run r;
    run_workload(&r, "threads", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    ASSERT_EQ(trace_log_count(&log, TRACE_THREAD), 64);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 64 * 1000);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 64 * 1000);
    for (size_t t = 0; t < 64; t++) {
        uint64_t idx = trace_log_nth(&log, TRACE_THREAD, t)->u[THREAD_IDX];
        uint64_t pushes = 0, pops = 0;
        for (size_t i = 0; i < log.count; i++) {
            const struct trace_log_record *e = &log.records[i];
            if (e->type == TRACE_PUSH && e->u[EV_THREAD] == idx)
                ASSERT_EQ(e->u[EV_DEPTH], pushes++);
            if (e->type == TRACE_POP && e->u[EV_THREAD] == idx)
                ASSERT_EQ(e->u[EV_DEPTH], 999 - pops++);
        }
        ASSERT_EQ(pushes, 1000);
        ASSERT_EQ(pops, 1000);
    }
    trace_log_free(&log);
}

static void test_exited_threads_rings_are_reused(void)
{
    struct run r;
    run_workload(&r, "thread_churn", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    ASSERT_EQ(trace_log_count(&log, TRACE_THREAD), 300);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 3000);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 3000);
    trace_log_free(&log);
}

static void test_range_ended_on_another_thread(void)
{
    struct run r;
    run_workload(&r, "cross_thread", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    unsigned long long id = 0;
    ASSERT(sscanf(r.out, "range %llu", &id) == 1);
    const struct trace_log_record *start = trace_log_nth(&log, TRACE_START, 0);
    const struct trace_log_record *end = trace_log_nth(&log, TRACE_END, 0);
    ASSERT(start && end);
    ASSERT_EQ(start->u[START_ID], id);
    ASSERT_EQ(end->u[END_ID], id);
    ASSERT(start->u[EV_THREAD] != end->u[EV_THREAD]);
    ASSERT(string_is(&log, start->u[START_NAME], "handed over"));
    ASSERT(end->u[EV_TS] >= start->u[EV_TS]);
    trace_log_free(&log);
}

static uint64_t domain_id(const struct trace_log *log, const char *name)
{
    for (size_t i = 0; i < log->count; i++)
        if (log->records[i].type == TRACE_DOMAIN && string_is(log, log->records[i].u[1], name))
            return log->records[i].u[0];
    return UINT64_MAX;
}

static const struct trace_log_record *named(const struct trace_log *log, unsigned type,
                                            int name_field, const char *name, size_t nth)
{
    for (size_t i = 0; i < log->count; i++)
        if (log->records[i].type == type && string_is(log, log->records[i].u[name_field], name) &&
            nth-- == 0)
            return &log->records[i];
    return NULL;
}

static void test_domains_categories_registered_strings_payloads_colors_wide(void)
{
    struct run r;
    run_workload(&r, "attributes", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());

    ASSERT_EQ(trace_log_count(&log, TRACE_DOMAIN), 2);
    uint64_t io = domain_id(&log, "io"), wide = domain_id(&log, "wide-domain");
    ASSERT(io >= 1 && io != UINT64_MAX && wide >= 1 && wide != UINT64_MAX && io != wide);

    ASSERT_EQ(trace_log_count(&log, TRACE_CATEGORY), 2);
    const struct trace_log_record *cat = named(&log, TRACE_CATEGORY, 2, "global-cat", 0);
    ASSERT(cat && cat->u[0] == 0 && cat->u[1] == 7);
    cat = named(&log, TRACE_CATEGORY, 2, "io-cat", 0);
    ASSERT(cat && cat->u[0] == io && cat->u[1] == 3);

    const struct trace_log_record *e = named(&log, TRACE_PUSH, PUSH_NAME, "plain", 0);
    ASSERT(e && e->u[EV_DOMAIN] == 0 && e->u[EV_DEPTH] == 0);
    e = named(&log, TRACE_PUSH, PUSH_NAME, "default-domain", 0);
    ASSERT(e && e->u[EV_DOMAIN] == 0 && e->u[EV_DEPTH] == 1);

    e = named(&log, TRACE_PUSH, PUSH_NAME, "registered", 0);
    ASSERT(e && e->u[EV_DOMAIN] == io && e->u[EV_DEPTH] == 0);
    ASSERT_EQ(e->u[PUSH_CATEGORY], 3);
    ASSERT_EQ(e->u[PUSH_COLOR], 0xFF00FF00ull + 1);
    ASSERT_EQ(e->u[PUSH_PAYLOAD_TYPE], 5 /* NVTX_PAYLOAD_TYPE_INT32 */);
    ASSERT_EQ(e->u[PUSH_PAYLOAD], 0xFFFFFFFBull); /* -5 as 32 bits */
    uint64_t registered_id = e->u[PUSH_NAME];
    e = named(&log, TRACE_PUSH, PUSH_NAME, "registered", 1);
    ASSERT(e && e->u[EV_DEPTH] == 1 && e->u[PUSH_NAME] == registered_id);
    ASSERT_EQ(e->u[PUSH_PAYLOAD_TYPE], 1 /* NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 */);
    ASSERT_EQ(e->u[PUSH_PAYLOAD], 0xFFFFFFFFFFFFull);
    ASSERT_EQ(trace_log_count(&log, TRACE_UNBALANCED_POP), 1);
    ASSERT_EQ(trace_log_nth(&log, TRACE_UNBALANCED_POP, 0)->u[EV_DOMAIN], io);

    e = named(&log, TRACE_MARK, MARK_NAME, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9d\x84\x9e", 0);
    ASSERT(e && e->u[EV_DOMAIN] == wide);
    double d = 2.25;
    uint64_t bits;
    memcpy(&bits, &d, 8);
    ASSERT_EQ(e->u[MARK_PAYLOAD_TYPE], 3 /* NVTX_PAYLOAD_TYPE_DOUBLE */);
    ASSERT_EQ(e->u[MARK_PAYLOAD], bits);
    e = named(&log, TRACE_MARK, MARK_NAME, "float-mark", 0);
    float f = 1.5f;
    uint32_t fbits;
    memcpy(&fbits, &f, 4);
    ASSERT(e && e->u[MARK_CATEGORY] == 7 && e->u[MARK_PAYLOAD] == fbits);
    ASSERT_EQ(e->u[MARK_PAYLOAD_TYPE], 6 /* NVTX_PAYLOAD_TYPE_FLOAT */);
    ASSERT(named(&log, TRACE_MARK, MARK_NAME, "wide-mark", 0));
    ASSERT(named(&log, TRACE_PUSH, PUSH_NAME, "wide-push", 0));

    e = named(&log, TRACE_START, START_NAME, "registered-2", 0);
    ASSERT(e && e->u[START_DOMAIN] == io);
    ASSERT(trace_log_nth(&log, TRACE_END, 0)->u[END_ID] == e->u[START_ID]);

    const struct trace_log_record *tn = trace_log_nth(&log, TRACE_THREAD_NAME, 0);
    ASSERT(tn && tn->u[0] == 4242 && string_is(&log, tn->u[1], "worker-name"));
    ASSERT_EQ(trace_log_count(&log, TRACE_NAME_RESOURCE), 3);
    e = named(&log, TRACE_NAME_RESOURCE, 2, "cu-stream", 0);
    ASSERT(e && e->u[0] == TRACE_RESOURCE_CU_STREAM && e->u[1] == 0x1234);
    e = named(&log, TRACE_NAME_RESOURCE, 2, "cu-device", 0);
    ASSERT(e && e->u[0] == TRACE_RESOURCE_CU_DEVICE && e->u[1] == 1);
    e = named(&log, TRACE_NAME_RESOURCE, 2, "rt-event", 0);
    ASSERT(e && e->u[0] == TRACE_RESOURCE_CUDART_EVENT && e->u[1] == 0x5678);
    ASSERT_EQ(trace_log_count(&log, TRACE_DOMAIN_DESTROY), 1);
    ASSERT_EQ(trace_log_nth(&log, TRACE_DOMAIN_DESTROY, 0)->u[0], wide);

    /* every string is written once per file */
    for (size_t i = 0; i < log.count; i++)
        for (size_t j = i + 1; j < log.count; j++)
            if (log.records[i].type == TRACE_STRING && log.records[j].type == TRACE_STRING)
                ASSERT(log.records[i].s_len[1] != log.records[j].s_len[1] ||
                       memcmp(log.records[i].s[1], log.records[j].s[1], log.records[i].s_len[1]));
    trace_log_free(&log);
}

static void test_1mb_name_and_non_utf8_bytes_recorded_exactly(void)
{
    struct run r;
    run_workload(&r, "big_names", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 2);
    size_t len = 0;
    char *big = trace_log_string(&log, trace_log_nth(&log, TRACE_PUSH, 0)->u[PUSH_NAME], &len);
    ASSERT_EQ(len, 1u << 20);
    for (size_t i = 0; i < len; i++)
        if (big[i] != (char)('a' + i % 26))
            ASSERT(0);
    free(big);
    ASSERT(string_is(&log, trace_log_nth(&log, TRACE_PUSH, 1)->u[PUSH_NAME],
                     "\xff\xfe\x80 not utf-8 \xc3"));
    trace_log_free(&log);
}

static void test_fork_child_writes_its_own_file(void)
{
    struct run r;
    run_workload(&r, "fork", NULL);
    assert_exited_ok(&r);
    int child = 0;
    ASSERT(sscanf(r.out, "child %d", &child) == 1);
    ASSERT_EQ(r.nfiles, 2);

    struct trace_log parent;
    load_file_of(&r, r.pid, &parent);
    assert_clean_process(&parent, r.pid, getpid());
    ASSERT_EQ(trace_log_count(&parent, TRACE_PUSH), 2);
    ASSERT(named(&parent, TRACE_PUSH, PUSH_NAME, "parent-before", 0));
    ASSERT(named(&parent, TRACE_PUSH, PUSH_NAME, "parent-after", 0));

    struct trace_log kid;
    load_file_of(&r, child, &kid);
    assert_clean_process(&kid, child, r.pid);
    ASSERT_EQ(trace_log_count(&kid, TRACE_PUSH), 1);
    ASSERT_EQ(trace_log_count(&kid, TRACE_POP), 1);
    const struct trace_log_record *e = named(&kid, TRACE_PUSH, PUSH_NAME, "child", 0);
    ASSERT(e && e->u[EV_DOMAIN] == domain_id(&kid, "forked-domain"));
    ASSERT_EQ(trace_log_count(&kid, TRACE_THREAD), 1);
    ASSERT_EQ(trace_log_nth(&kid, TRACE_THREAD, 0)->u[THREAD_TID], child);
    ASSERT(kid.records[0].u[PROCESS_START] > parent.records[0].u[PROCESS_START]);
    trace_log_free(&parent);
    trace_log_free(&kid);
}

static void test_sigkill_keeps_events_flushed_before_the_kill(void)
{
    struct run r;
    run_workload(&r, "sigkill", NULL);
    ASSERT(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    ASSERT_EQ(log.records[0].type, TRACE_PROCESS);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 100);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 100);
    ASSERT_EQ(trace_log_count(&log, TRACE_PROCESS_END), 0);
    trace_log_free(&log);
}

static void test_sigterm_ends_the_file_before_dying(void)
{
    struct run r;
    run_workload(&r, "sigterm", NULL);
    ASSERT(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 10);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 10);
    const struct trace_log_record *end = &log.records[log.count - 1];
    ASSERT_EQ(end->type, TRACE_PROCESS_END);
    ASSERT_EQ(end->u[END_CLEAN], 0);
    trace_log_free(&log);

    run_workload(&r, "own_sigterm_handler", NULL);
    ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
}

static void test_durations_match_the_programs_own_clock(void)
{
    struct run r;
    run_workload(&r, "durations", NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 20);
    const char *line = r.out;
    int close_matches = 0;
    for (size_t i = 0; i < 20; i++) {
        unsigned long long before, after;
        ASSERT(sscanf(line, "timed %llu %llu", &before, &after) == 2);
        line = strchr(line, '\n') + 1;
        uint64_t push = trace_log_nth(&log, TRACE_PUSH, i)->u[EV_TS];
        uint64_t pop = trace_log_nth(&log, TRACE_POP, i)->u[EV_TS];
        /* the recorded range lies within what the program measured and lasts at least the
         * time it spun inside, give or take the calibration's error (2 us) */
        int64_t slack = 2000;
        ASSERT((int64_t)(push - before) > -slack);
        ASSERT((int64_t)(after - pop) > -slack);
        ASSERT((int64_t)(pop - push) > (int64_t)(100000 * (i + 1)) - slack);
        /* and as long as measured within 5 us, unless the program was preempted between its
         * own clock read and the NVTX call (the shared test machine): most ranges must be */
        int64_t measured = (int64_t)(after - before), recorded = (int64_t)(pop - push);
        if (llabs(measured - recorded) <= 5000)
            close_matches++;
        else
            fprintf(stderr, "range %zu: measured %lld ns, recorded %lld ns\n", i,
                    (long long)measured, (long long)recorded);
    }
    ASSERT(close_matches >= 15);
    trace_log_free(&log);
}

/* 400000 events in a burst into a pool of two 32 KiB blocks: the thread waits for the
 * writer (or drains itself) instead of dropping, so every event is kept. */
static void test_burst_larger_than_the_pool_loses_nothing(void)
{
    struct run r;
    run_workload(&r, "overflow", "LANTERN_BUFFER_KB=64");
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    ASSERT_EQ(sum_dropped(&log), 0);
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 200000);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 200000);
    trace_log_free(&log);
}

/* Eight threads writing at once into two blocks: the threads without one drop, and every
 * drop is counted, per thread and in TRACE_PROCESS_END; the levels of what is kept are right. */
static void test_more_writers_than_blocks_drop_and_count_and_keep_levels(void)
{
    struct run r;
    run_workload(&r, "crowd", "LANTERN_BUFFER_KB=64");
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    uint64_t dropped = sum_dropped(&log);
    uint64_t kept = trace_log_count(&log, TRACE_PUSH) + trace_log_count(&log, TRACE_POP);
    ASSERT(dropped > 0);
    ASSERT_EQ(kept + dropped, 8 * 40000);
    ASSERT_EQ(log.records[log.count - 1].type, TRACE_PROCESS_END);
    ASSERT_EQ(log.records[log.count - 1].u[END_DROPPED], dropped);
    for (size_t i = 0; i < log.count; i++) {
        const struct trace_log_record *e = &log.records[i];
        if (e->type == TRACE_PUSH)
            ASSERT_EQ(e->u[EV_DEPTH], string_is(&log, e->u[PUSH_NAME], "crowd") ? 0 : 1);
    }
    trace_log_free(&log);
}

static void test_ring_laps_keep_every_record(void)
{
    struct run r;
    run_workload(&r, "wrap", "LANTERN_BUFFER_KB=64");
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 100 * 100);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 100 * 100);
    static const char names[] = "abcdefghijklmnopqrstuvwxyz";
    for (size_t i = 0; i < 100 * 100; i++) {
        const struct trace_log_record *push = trace_log_nth(&log, TRACE_PUSH, i);
        ASSERT(string_is(&log, push->u[PUSH_NAME], names + (i % 100) % 26));
        ASSERT_EQ(push->u[EV_DEPTH], 0);
    }
    trace_log_free(&log);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_without_session_dir_one_warning_and_no_op_calls(void)
{
    struct run r;
    run_program(&r, NVTX_WORKLOAD_PATH, "inert", 0, NULL);
    assert_exited_ok(&r);
    ASSERT_EQ(r.nfiles, 0);
    ASSERT_EQ(count_lines(r.err), 1);
    ASSERT(strncmp(r.err, "lantern: ", 9) == 0);

    run_workload(&r, "inert", "LANTERN_SESSION_DIR=/proc/no-such-dir");
    assert_exited_ok(&r);
    ASSERT_EQ(count_lines(r.err), 1);
    ASSERT(strncmp(r.err, "lantern: cannot create", 22) == 0);
}

static void test_init_from_two_libraries_at_once(void)
{
    struct run r;
    run_program(&r, NVTX_TWO_LIBS_PATH, "", 1, NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    /* 8 threads, each 1000 ranges through library a and 1000 through library b */
    ASSERT_EQ(trace_log_count(&log, TRACE_THREAD), 8);
    size_t a = 0, b = 0;
    for (size_t i = 0; i < log.count; i++) {
        if (log.records[i].type != TRACE_PUSH)
            continue;
        a += string_is(&log, log.records[i].u[PUSH_NAME], "lib-a");
        b += string_is(&log, log.records[i].u[PUSH_NAME], "lib-b");
        ASSERT_EQ(log.records[i].u[EV_DEPTH], 0);
    }
    ASSERT_EQ(a, 8000);
    ASSERT_EQ(b, 8000);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 16000);
    trace_log_free(&log);
}

static void test_cpp_raii_ranges_in_a_domain(void)
{
    struct run r;
    run_program(&r, NVTX_CPP_WORKLOAD_PATH, "", 1, NULL);
    assert_exited_ok(&r);
    struct trace_log log;
    load_file_of(&r, r.pid, &log);
    assert_clean_process(&log, r.pid, getpid());
    uint64_t app = domain_id(&log, "cpp-app");
    ASSERT(app >= 1 && app != UINT64_MAX);
    const struct trace_log_record *cat = named(&log, TRACE_CATEGORY, 2, "io", 0);
    ASSERT(cat && cat->u[0] == app && cat->u[1] == 11);

    const struct trace_log_record *outer = named(&log, TRACE_PUSH, PUSH_NAME, "cpp-outer", 0);
    ASSERT(outer && outer->u[EV_DOMAIN] == app && outer->u[EV_DEPTH] == 0);
    ASSERT_EQ(outer->u[PUSH_COLOR], 0xFFFF0000ull + 1);
    for (size_t i = 0; i < 3; i++) {
        const struct trace_log_record *step = named(&log, TRACE_PUSH, PUSH_NAME, "step", i);
        ASSERT(step && step->u[EV_DOMAIN] == app && step->u[EV_DEPTH] == 1);
        ASSERT_EQ(step->u[PUSH_CATEGORY], 11);
        ASSERT_EQ(step->u[PUSH_PAYLOAD_TYPE], 2 /* NVTX_PAYLOAD_TYPE_INT64 */);
        ASSERT_EQ(step->u[PUSH_PAYLOAD], i);
    }
    const struct trace_log_record *mark = named(&log, TRACE_MARK, MARK_NAME, "cpp-mark", 0);
    ASSERT(mark && mark->u[EV_DOMAIN] == app);
    /* NVTX3_FUNC_RANGE names the range after the function, in nvtx3's default domain */
    ASSERT(named(&log, TRACE_PUSH, PUSH_NAME, "traced_function", 0));
    ASSERT_EQ(trace_log_count(&log, TRACE_PUSH), 5);
    ASSERT_EQ(trace_log_count(&log, TRACE_POP), 5);
    trace_log_free(&log);
}

static const struct test_case tests[] = {
    {"push_pop_levels_marks_and_ranges", test_push_pop_levels_marks_and_ranges},
    {"64_threads_nested_ranges_all_recorded", test_64_threads_nested_ranges_all_recorded},
    {"exited_threads_rings_are_reused", test_exited_threads_rings_are_reused},
    {"range_ended_on_another_thread", test_range_ended_on_another_thread},
    {"domains_categories_registered_strings_payloads_colors_wide",
     test_domains_categories_registered_strings_payloads_colors_wide},
    {"1mb_name_and_non_utf8_bytes_recorded_exactly",
     test_1mb_name_and_non_utf8_bytes_recorded_exactly},
    {"fork_child_writes_its_own_file", test_fork_child_writes_its_own_file},
    {"sigkill_keeps_events_flushed_before_the_kill",
     test_sigkill_keeps_events_flushed_before_the_kill},
    {"sigterm_ends_the_file_before_dying", test_sigterm_ends_the_file_before_dying},
    {"durations_match_the_programs_own_clock", test_durations_match_the_programs_own_clock},
    {"burst_larger_than_the_pool_loses_nothing", test_burst_larger_than_the_pool_loses_nothing},
    {"more_writers_than_blocks_drop_and_count_and_keep_levels",
     test_more_writers_than_blocks_drop_and_count_and_keep_levels},
    {"ring_laps_keep_every_record", test_ring_laps_keep_every_record},
    {"without_session_dir_one_warning_and_no_op_calls",
     test_without_session_dir_one_warning_and_no_op_calls},
    {"init_from_two_libraries_at_once", test_init_from_two_libraries_at_once},
    {"cpp_raii_ranges_in_a_domain", test_cpp_raii_ranges_in_a_domain},
    {NULL, NULL},
};

int main(int argc, char **argv)
{
    int rc = test_main(tests, argc, argv);
    if (rc == 0)
        remove_run_dirs();
    return rc;
}
