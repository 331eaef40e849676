/* The agent's life cycle: the once-per-process start (an atomic state machine that never
 * blocks), the event sources named in LANTERN_TRACE, fork handling, the final drain at exit,
 * and the single "lantern:" warning line. */
#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/list.h"

#include <errno.h>
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
    const char *wanted = getenv("LANTERN_TRACE");
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
}

static void agent_fork_child(void)
{
    writer_fork_child();
    FOR_EACH_ON_SOURCE(s)
    if (s->at_fork_child)
        s->at_fork_child();
}

/* atexit and the library destructor both come here; only the first call works. */
static void agent_exit(void)
{
    if (__atomic_load_n(&agent_state, __ATOMIC_ACQUIRE) != AGENT_RECORDING)
        return;
    if (__atomic_exchange_n(&agent_exited, 1, __ATOMIC_ACQ_REL))
        return;
    FOR_EACH_ON_SOURCE(s)
    if (s->at_exit)
        s->at_exit();
    writer_finish();
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

int agent_init(uint32_t loaded_for)
{
    int expected = AGENT_FRESH;
    if (!__atomic_compare_exchange_n(&agent_state, &expected, AGENT_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return expected == AGENT_INERT ? -1 : 0; /* another caller is starting or has started */
    clock_init();
    const char *dir = getenv("LANTERN_SESSION_DIR");
    if (!dir || !*dir) {
        agent_warn("LANTERN_SESSION_DIR is not set; running untraced");
        goto inert;
    }
    if (writer_start(dir, agent_choose_sources(loaded_for)) < 0)
        goto inert;
    pthread_atfork(agent_fork_prepare, agent_fork_parent, agent_fork_child);
    atexit(agent_exit);
    agent_catch_ending_signals();
    __atomic_store_n(&agent_state, AGENT_RECORDING, __ATOMIC_RELEASE);
    agent_start_sources();
    writer_run();
    return 0;
inert:
    ring_disable();
    __atomic_store_n(&agent_state, AGENT_INERT, __ATOMIC_RELEASE);
    return -1;
}
