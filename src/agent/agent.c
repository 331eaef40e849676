/* The agent's life cycle: the once-per-process start (an atomic state machine that never
 * blocks), the event sources named in LANTERN_TRACE, fork handling, the final drain at exit,
 * and the single "lantern:" warning line. */
#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/list.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum agent_state { AGENT_FRESH = 0, AGENT_STARTING, AGENT_RECORDING, AGENT_INERT };

static _Atomic int agent_state;
static _Atomic int agent_exited;

/* Sources registered with AGENT_SOURCE(); the linker provides the section bounds. */
extern const struct agent_source __start_lantern_sources[] __attribute__((visibility("hidden")));
extern const struct agent_source __stop_lantern_sources[] __attribute__((visibility("hidden")));
#define AGENT_MAX_SOURCES 16
static int agent_source_on[AGENT_MAX_SOURCES];

static int *agent_source_state(const struct agent_source *s)
{
    size_t i = (size_t)(s - __start_lantern_sources);
    return i < AGENT_MAX_SOURCES ? &agent_source_on[i] : NULL;
}

static int agent_source_enabled(const struct agent_source *s)
{
    int *on = agent_source_state(s);
    return on && *on;
}

#define FOR_EACH_ON_SOURCE(s)                                                                      \
    for (const struct agent_source *s = __start_lantern_sources; s < __stop_lantern_sources; s++)  \
        if (agent_source_enabled(s))

/* Turns on the always-on sources and those LANTERN_TRACE names; returns the TRACE_FLAG_*
 * set for TRACE_PROCESS: the entry point's own and those of the sources asked for. */
static uint32_t agent_choose_sources(uint32_t loaded_for)
{
    const char *wanted = getenv(trace_env_name(TRACE_ENV_TRACE));
    uint32_t flags = loaded_for;
    for (const struct agent_source *s = __start_lantern_sources; s < __stop_lantern_sources; s++) {
        int *on = agent_source_state(s);
        int listed = trace_list_has(wanted, s->name);
        if (on)
            *on = s->always_on || listed;
        if (on && listed)
            flags |= s->trace_flag;
    }
    return flags;
}

static void agent_fork_prepare(void)
{
    agent_busy++; /* until the parent's or the child's hook */
    FOR_EACH_ON_SOURCE(s)
    if (s->at_fork_prepare)
        s->at_fork_prepare();
    writer_fork_prepare();
}

static void agent_fork_parent(void)
{
    writer_fork_parent();
    FOR_EACH_ON_SOURCE(s)
    if (s->at_fork_parent)
        s->at_fork_parent();
    agent_busy--;
}

static void agent_fork_child(void)
{
    writer_fork_child();
    FOR_EACH_ON_SOURCE(s)
    if (s->at_fork_child)
        s->at_fork_child();
    writer_fork_child_done();
    agent_control_fork_child();
    agent_busy--;
}

/* Every drain (~10 ms, writer thread): a pause or resume of the launcher reaches the
 * sources that hold state of their own (CUPTI's activity kinds). */
static int agent_recording_seen = 1;

static void agent_poll(void)
{
    uint64_t dump = agent_control_dump_wanted();
    if (dump) { /* --ring: what every source holds reaches the current segment */
        FOR_EACH_ON_SOURCE(s)
        if (s->flush)
            s->flush();
        writer_flush_now();
        agent_control_dumped(dump);
    }
    int on = !agent_paused();
    if (on == agent_recording_seen)
        return;
    agent_recording_seen = on;
    FOR_EACH_ON_SOURCE(s)
    if (s->set_recording)
        s->set_recording(on);
    if (!on) {
        writer_flush_now(); /* the window's events, for its import */
        agent_control_paused();
    }
}

static void agent_periodic(void)
{
    FOR_EACH_ON_SOURCE(s)
    if (s->periodic)
        s->periodic();
}

static void agent_drain(int final)
{
    FOR_EACH_ON_SOURCE(s)
    if (s->drain)
        s->drain(final);
}

/* atexit and the library destructor both come here; only the first call works. */
static void agent_exit(void)
{
    if (__atomic_load_n(&agent_state, __ATOMIC_ACQUIRE) != AGENT_RECORDING)
        return;
    if (__atomic_exchange_n(&agent_exited, 1, __ATOMIC_ACQ_REL))
        return;
    agent_busy++;
    FOR_EACH_ON_SOURCE(s)
    if (s->at_exit)
        s->at_exit();
    writer_finish();
    agent_busy--;
}

__attribute__((destructor)) static void agent_unload(void)
{
    agent_exit();
}

/* SIGTERM, SIGINT and SIGHUP kill a program that does not handle them before atexit runs;
 * Python's multiprocessing Pool ends its workers so. Where the program left the default
 * action, the agent has the writer end the file first (waiting at most 1 s, a
 * bound reached only when the machine starves the writer thread), then lets the
 * signal kill the process as before. A program that installs its own handler replaces this one. */
static const int agent_ending_signals[] = {SIGTERM, SIGINT, SIGHUP};

static void agent_on_ending_signal(int sig)
{
    int saved_errno = errno;
    agent_busy++; /* the process ends: never decremented */
    writer_finish_from_signal(1000);
    struct sigaction default_action = {.sa_handler = SIG_DFL};
    sigaction(sig, &default_action, NULL);
    errno = saved_errno;
    raise(sig); /* blocked until this handler returns, then the default action */
}

static void agent_catch_ending_signals(void)
{
    for (size_t i = 0; i < sizeof(agent_ending_signals) / sizeof(agent_ending_signals[0]); i++) {
        struct sigaction old;
        if (sigaction(agent_ending_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        struct sigaction ours = {.sa_handler = agent_on_ending_signal, .sa_flags = SA_RESTART};
        sigemptyset(&ours.sa_mask);
        sigaction(agent_ending_signals[i], &ours, NULL);
    }
}

static void agent_start_sources(void)
{
    FOR_EACH_ON_SOURCE(s)
    if (s->init && s->init() != 0)
        *agent_source_state(s) = 0;
}

/* Whether the program is a static executable (no PT_INTERP, and not the dynamic loader run as
 * a command, which has a DT_SONAME). NVTX's header dlopens the agent even there, which brings
 * a second C library into the process: a thread it starts crashes. */
static int agent_program_is_static(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    Elf64_Dyn dyn[128]; /* 2 KiB: the caller is the program's thread */
    int is_static = 0;
    size_t n = 0;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        size_t want = eh.e_phnum < 64 ? eh.e_phnum : 64;
        ssize_t got = pread(fd, ph, want * sizeof ph[0], (off_t)eh.e_phoff);
        n = got > 0 ? (size_t)got / sizeof ph[0] : 0;
        is_static = n > 0;
    }
    for (size_t i = 0; i < n && is_static; i++) /* a program interpreter: dynamic */
        is_static = ph[i].p_type != PT_INTERP;
    for (size_t i = 0; i < n && is_static; i++) { /* a DT_SONAME: ld.so run as the command */
        if (ph[i].p_type != PT_DYNAMIC)
            continue;
        size_t bytes = ph[i].p_filesz < sizeof dyn ? ph[i].p_filesz : sizeof dyn;
        ssize_t got = pread(fd, dyn, bytes, (off_t)ph[i].p_offset);
        for (size_t k = 0; got > 0 && k < (size_t)got / sizeof dyn[0] && dyn[k].d_tag != DT_NULL;
             k++)
            is_static = dyn[k].d_tag != DT_SONAME;
    }
    close(fd);
    return is_static;
}

/* <dir>/<pid>.untraced (trace/format.h): this process runs untraced, and said why. */
static void agent_mark_untraced(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%d" TRACE_UNTRACED_SUFFIX, dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

int agent_init(uint32_t loaded_for)
{
    int expected = AGENT_FRESH;
    if (!__atomic_compare_exchange_n(&agent_state, &expected, AGENT_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        /* another caller is starting or has started */
        return expected == AGENT_INERT ? -ECANCELED : 0;
    agent_busy++;
    clock_init();
    const char *dir = getenv(trace_env_name(TRACE_ENV_SESSION_DIR));
    if (!dir || !*dir) {
        agent_warn("LANTERN_SESSION_DIR is not set; running untraced");
        goto inert;
    }
    if (agent_program_is_static()) {
        agent_warn("the program is statically linked: Lantern cannot run inside it safely (its "
                   "NVTX calls load a second C library); running untraced");
        agent_mark_untraced(dir);
        goto inert;
    }
    if (writer_start(dir, agent_choose_sources(loaded_for)) < 0)
        goto inert;
    writer_set_periodic(agent_periodic, AGENT_PERIOD_MS);
    writer_set_drain(agent_drain);
    writer_set_poll(agent_poll);
    agent_control_map(dir);
    pthread_atfork(agent_fork_prepare, agent_fork_parent, agent_fork_child);
    atexit(agent_exit);
    agent_catch_ending_signals();
    __atomic_store_n(&agent_state, AGENT_RECORDING, __ATOMIC_RELEASE);
    agent_start_sources();
    agent_poll(); /* started paused: the sources learn it before the program's first call */
    writer_run();
    agent_busy--;
    return 0;
inert:
    ring_disable();
    __atomic_store_n(&agent_state, AGENT_INERT, __ATOMIC_RELEASE);
    agent_busy--;
    return -ECANCELED;
}
