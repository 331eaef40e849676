/* Start and stop on demand (docs/long-runs.md): the agent maps the launcher's control file
 * (trace/control.h) read-only, and the sources' hot paths read its `recording` word
 * (agent_paused, agent.h). Until it is mapped, and where it cannot be, the word is a constant
 * 1: the agent records, and the importer's window still keeps only what lies inside. */
#include "trace/control.h"
#include "agent/agent.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/environment.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const _Atomic uint32_t agent_always_recording = 1;
const _Atomic uint32_t *agent_recording_word = &agent_always_recording;
static const struct trace_control *agent_control; /* the mapped file (NULL: none) */
/* Read 0 by the hot path in a fork child until its first event (agent_paused_slow). */
const _Atomic uint32_t agent_first_event_in_child = 0;

/* A fork child's writer thread starts only once it has filled RING_WAKE_BLOCKS blocks (a
 * short-lived child makes none: its events are salvaged after its end). A worker of a server
 * cut into windows lives on and may record little: what it records must reach its trace file
 * at each pause, which its writer thread does, so its first event starts it. */
void agent_control_fork_child(void)
{
    if (agent_control && __atomic_load_n(&agent_control->windowed, __ATOMIC_ACQUIRE))
        __atomic_store_n(&agent_recording_word, &agent_first_event_in_child, __ATOMIC_RELEASE);
}

void agent_control_paused(void)
{
    struct pool_header *h = ring_pool.header;
    if (agent_control && h)
        __atomic_store_n(&h->paused_window,
                         __atomic_load_n(&agent_control->window, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
}

int agent_paused_slow(void)
{
    const _Atomic uint32_t *first = &agent_first_event_in_child;
    if (__atomic_load_n(&agent_recording_word, __ATOMIC_ACQUIRE) == first &&
        __atomic_compare_exchange_n(&agent_recording_word, &first, &agent_control->recording, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        writer_start_wanted();
    return !__atomic_load_n(agent_recording_word, __ATOMIC_RELAXED);
}

static void agent_ring_trigger_init(void);

void agent_control_map(const char *session_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" TRACE_CONTROL_FILE, session_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return; /* a session without one (an older launcher, a synthetic session): record */
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)TRACE_CONTROL_BYTES)
        map = mmap(NULL, TRACE_CONTROL_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    const struct trace_control *c = map;
    if (map == MAP_FAILED || memcmp(c->magic, TRACE_CONTROL_MAGIC, 8) != 0) {
        if (map != MAP_FAILED)
            munmap(map, TRACE_CONTROL_BYTES);
        agent_warn("cannot read the session's control file '%s': recording without pauses", path);
        return;
    }
    agent_control = c;
    __atomic_store_n(&agent_recording_word, &c->recording, __ATOMIC_RELEASE);
    if (c->ring_ns)
        agent_ring_trigger_init();
}

/* ---- the flight recorder (--ring) ---- */

uint64_t agent_control_dump_wanted(void)
{
    struct pool_header *h = ring_pool.header;
    if (!agent_control || !h)
        return 0;
    uint64_t dump = __atomic_load_n(&agent_control->dump, __ATOMIC_ACQUIRE);
    return dump > __atomic_load_n(&h->dumped, __ATOMIC_ACQUIRE) ? dump : 0;
}

void agent_control_dumped(uint64_t dump)
{
    struct pool_header *h = ring_pool.header;
    if (h)
        __atomic_store_n(&h->dumped, dump, __ATOMIC_RELEASE);
}

const char *agent_ring_trigger;
static size_t agent_ring_trigger_len;

void agent_ring_trigger_mark(const char *name, size_t len)
{
    if (len == agent_ring_trigger_len && !memcmp(name, agent_ring_trigger, len) && agent_control &&
        agent_control->launcher_pid > 0)
        kill((pid_t)agent_control->launcher_pid, SIGUSR1); /* the launcher's own signal */
}

/* LANTERN_RING_TRIGGER=nvtx:NAME, read once the control file is mapped. */
static void agent_ring_trigger_init(void)
{
    const char *t = getenv(trace_env_name(TRACE_ENV_RING_TRIGGER));
    if (!t || strncmp(t, "nvtx:", 5) != 0 || !t[5])
        return;
    agent_ring_trigger_len = strlen(t + 5);
    __atomic_store_n(&agent_ring_trigger, t + 5, __ATOMIC_RELEASE);
}
