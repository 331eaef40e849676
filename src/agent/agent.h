/* The agent's process-wide services shared by its source modules (nvtx.c, cupti*.c): init
 * state machine, the one-line warning (warn.c), the comma-list test, and the table of event
 * sources that the agent starts, forks and stops. */
#ifndef LANTERN_AGENT_AGENT_H
#define LANTERN_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>

/* Starts the agent once per process; any thread, any number of times, never blocks (a
 * caller that loses the race returns while the winner finishes). `loaded_for` is the
 * TRACE_FLAG_* of the entry point (NVTX or CUDA injection). Returns 0 when recording or
 * starting, -ECANCELED when inert. */
int agent_init(uint32_t loaded_for);

void agent_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Start and stop on demand (control.c, trace/control.h): whether the launcher has paused the
 * session. One relaxed load of a word that changes only at a start or a stop: a source's
 * hot path returns at once while it is set. */
extern const _Atomic uint32_t *agent_recording_word;
extern const _Atomic uint32_t agent_first_event_in_child;
int agent_paused_slow(void);
static inline int agent_paused(void)
{
    const _Atomic uint32_t *word = __atomic_load_n(&agent_recording_word, __ATOMIC_RELAXED);
    if (__builtin_expect(__atomic_load_n(word, __ATOMIC_RELAXED) != 0, 1))
        return 0;
    if (__builtin_expect(word == &agent_first_event_in_child, 0))
        return agent_paused_slow(); /* a fork child's first event (control.c) */
    return 1;
}

/* Maps <session_dir>/session.lrc read-only, where the launcher made one (control.c). */
void agent_control_map(const char *session_dir);
/* In a fork child of a session cut into windows: its first event starts its writer thread. */
void agent_control_fork_child(void);
/* At a pause, once what the threads buffered is in the trace file: says so in the buffer
 * file, for the launcher, which then imports the window (control.c). */
void agent_control_paused(void);
/* --ring (docs/long-runs.md): the dump the launcher asks for, when this agent has not written
 * what it holds for it yet (else 0); then, once written, say so in the buffer file. */
uint64_t agent_control_dump_wanted(void);
void agent_control_dumped(uint64_t dump);
/* --ring-trigger nvtx:NAME (LANTERN_RING_TRIGGER): a mark of that name asks the launcher for
 * a dump (SIGUSR1 to it). NULL: none (one load on the mark's path). */
extern const char *agent_ring_trigger;
void agent_ring_trigger_mark(const char *name, size_t len);

/* A capped table (TRACE_TABLE_*) did not keep one entry (tables.c); the writer writes the
 * counts (lock held) as TRACE_TABLE_CUT. */
struct trace_chunk_builder;
void agent_table_cut(unsigned table);
void agent_tables_put_cuts_locked(struct trace_chunk_builder *b);

/* An event source. The agent calls init after the trace file is open when the source is
 * named in LANTERN_TRACE (or is always_on); the fork hooks bracket fork() (prepare runs
 * before the writer lock is taken, child after the child's file is open), at_exit runs
 * before the final drain, and periodic every AGENT_PERIOD_MS on the writer thread, without
 * the writer lock (to hand over what the source holds, so that little is lost if the process
 * ends without its exit hooks), drain at each drain of the writer (about every 10 ms, and a
 * last time with final = 1 before the file ends) with the writer lock held, to append records
 * through writer_chunk_locked(), and set_recording at each pause and resume (below). Any hook
 * may be NULL. */
#define AGENT_PERIOD_MS 200u
struct agent_source {
    const char *name;    /* as in LANTERN_TRACE: "nvtx", "cuda" */
    uint32_t trace_flag; /* TRACE_FLAG_* added to TRACE_PROCESS when enabled */
    int always_on;
    int (*init)(void); /* 0: running; else the source stays off */
    void (*at_fork_prepare)(void);
    void (*at_fork_parent)(void);
    void (*at_fork_child)(void);
    void (*at_exit)(void);
    void (*periodic)(void);
    void (*drain)(int final);
    /* The session was paused (0) or resumed (1) by the launcher: called on the writer thread
     * within ~10 ms of the change, and once at start when it starts paused. */
    void (*set_recording)(int on);
    /* --ring: a dump is wanted; hand over now everything the source holds (writer thread). */
    void (*flush)(void);
};

/* Registers a source from its own file, with no edit elsewhere: the linker gathers these
 * into the section lantern_sources, which agent.c walks. */
#define AGENT_SOURCE(var)                                                                          \
    __attribute__((used, section("lantern_sources"), aligned(sizeof(void *))))                     \
    const struct agent_source var

#endif
