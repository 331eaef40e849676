/* CPU sampling (-t cpu, on by default): the kernel samples every thread of the process with a
 * per-thread perf_event_open software cpu-clock event (user-space callchain, tid, time on
 * CLOCK_MONOTONIC) into a small ring mapped here; the writer thread reads the rings at each of
 * its drains (about every 10 ms), interns the callchains and writes TRACE_CPU_* records. The
 * program's threads never run a line of this file: the kernel's timer interrupt takes the
 * sample, no signal is sent. Threads are found by listing /proc/self/task (at the start, then
 * every CPU_SCAN_NS): one event per thread, not `inherit`, because the kernel refuses to map
 * an inherited per-thread event, and per-CPU inherited events would cost one ring per CPU.
 * Symbols are the importer's (src/db/import_cpu.c), from the mappings written here. The same
 * event reports each context switch of its thread (context_switch: PERF_RECORD_SWITCH), from
 * which the writer makes the thread's blocked and preempted intervals (TRACE_CPU_THREAD_STATE).
 * Where perf_event_open is refused, each thread gets a CPU-time timer instead (cpu_timers.c),
 * drained into the same records: a method table below holds the two.
 * docs/cpu.md says what this sees and what it misses. */
#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/cpu_python.h"
#include "agent/cpu_timers.h"
#include "agent/ring.h"
#include "agent/writer.h"
#include "trace/environment.h"
#include "trace/format.h"
#include "trace/records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CPU_DEFAULT_HZ 1000u
#define CPU_MAX_HZ 10000u /* the cpu-clock hrtimer's floor is 10 us per sample */
/* New threads are found this often: a thread's first <= 100 ms are not sampled. */
#define CPU_SCAN_NS 100000000u
/* Threads sampled at once (a static table: nothing is allocated, fork children included). */
#define CPU_MAX_THREADS 4096u
/* Distinct callchains remembered per file: past that the table starts over (stacks are
 * written again under new ids), so memory stays bounded. */
#define CPU_STACK_SLOTS (1u << 16)
#define CPU_MAX_FRAMES 128u /* the kernel's perf_event_max_stack is 127 by default */
#define CPU_MAX_MAPPINGS 8192u

/* A thread's context switches (PERF_RECORD_SWITCH) as the writer reads them: the switch-out
 * waiting for its switch-in, and the off-CPU interval being merged (cpu_state_* below). */
struct cpu_state_run {
    uint64_t out_ts;   /* the last switch-out */
    uint8_t out_state; /* its TRACE_CPU_STATE_*; 0: the thread is on the CPU (or not known) */
    uint8_t state;     /* the interval's TRACE_CPU_STATE_*; 0: none being merged */
    uint32_t merged;
    uint64_t start, end, on_ns;
};

struct cpu_ring {
    uint32_t tid;  /* 0: a free slot */
    uint32_t seen; /* the scan that last listed it */
    int named;     /* its OS name was written (TRACE_THREAD_OS_NAME) */
    int adopted;   /* opened by the writer thread, which owns it (see cpu_events_on) */
    struct perf_event_mmap_page *page;
    struct cpu_state_run run;
};

struct cpu_stack_slot {
    uint64_t hash; /* of the frames; 0: empty */
    uint32_t id;
    uint32_t generation;
};

struct cpu_mapping {
    uint64_t start, end;
};

static struct {
    int on;
    uint64_t period_ns;
    size_t ring_bytes; /* header page + data pages */
    uint32_t scan;     /* scan counter */
    uint64_t last_scan_ns, last_maps_ns;
    uint32_t rings_used; /* slots [0, rings_used) may be in use */
    int status_pending;  /* a fork child writes its TRACE_CPU_SAMPLING at its first drain */
    int maps_stale;      /* an address outside the known mappings: read them again */
    uint32_t stack_generation, next_stack_id, stacks_in_generation;
    uint32_t mappings;
    uint64_t samples, lost, threads, threads_unsampled, cpu_ns, paused_samples;
    uint64_t switches; /* switch-outs seen while recording */
    int states;        /* the kernel reports context switches (context_switch accepted) */
    int map_errno; /* the last ring that could not be mapped (the locked-memory limit) */
    int stopped;   /* the timers' signal was taken by the program: no thread is sampled now */
    char reason[384]; /* TRACE_CPU_SAMPLING's reason while on: how the threads are sampled */
} cpu;

/* Start and stop on demand (set_recording, docs/long-runs.md): a pause switches the kernel's
 * sampling off. Each event's descriptor was closed at its mapping, so no ioctl can reach it;
 * but prctl(PR_TASK_PERF_EVENTS_DISABLE) disables every event the calling thread opened. So
 * the writer thread owns them all: a ring opened on another thread (at the agent's start, in
 * a fork child) is opened again by the writer at its next drain, and the writer switches the
 * events with one prctl at the drain that sees a pause or a resume (rings it opens while
 * paused start disabled). Samples taken between the pause and that drain, or before the
 * resume, are dropped by their time (CLOCK_MONOTONIC, the samples' clock): the trace file
 * holds none of the paused time. */
static _Atomic uint64_t cpu_paused_at;  /* when the sampler learnt of the pause; 0: recording */
static _Atomic uint64_t cpu_resumed_at; /* when it learnt of the last resume */
static int cpu_events_on = 1; /* the writer's events are enabled (writer thread only) */

/* A benchmark's switch of CPU sampling alone, inside a recording session: while the file
 * LANTERN_TEST_CPU_SWITCH names exists, sampling is paused as by a pause of the session
 * (bench/cpu_interrupt_cost.py times a program's blocks with and without it in one process).
 * Looked at once a drain by the writer thread; unset, nothing is looked at. */
static const char *cpu_switch_path;
static _Atomic int cpu_switched_off;
static void cpu_set_recording(int on);

static struct cpu_ring cpu_rings[CPU_MAX_THREADS];
_Static_assert(CPU_MAX_THREADS <= CPU_TIMERS_MAX_THREADS, "a ring slot is a timer's buffer slot");
static struct cpu_stack_slot cpu_stacks[CPU_STACK_SLOTS];
static struct cpu_mapping cpu_mappings[CPU_MAX_MAPPINGS];

static long cpu_perf_event_open(struct perf_event_attr *attr, pid_t tid)
{
    return syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens and maps tid's event; the descriptor is closed at once (the mapping holds the event),
 * so the program's descriptors are never touched. 0, or -errno. */
static int cpu_ring_open(struct cpu_ring *r, uint32_t tid)
{
    struct perf_event_attr attr = {
        .size = sizeof attr,
        .type = PERF_TYPE_SOFTWARE,
        .config = PERF_COUNT_SW_CPU_CLOCK,
        .sample_period = cpu.period_ns,
        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
        /* unprivileged at perf_event_paranoid 2: user space only */
        .exclude_kernel = 1,
        .exclude_hv = 1,
        .exclude_callchain_kernel = 1,
        .use_clockid = 1,
        .clockid = CLOCK_MONOTONIC, /* the common clock: no conversion */
        .remove_on_exec = 1,
        .wakeup_events = 1u << 30, /* never woken: the writer polls */
        /* thread states: a record at each switch of the thread, with its tid and time */
        .context_switch = (unsigned)cpu.states,
        .sample_id_all = (unsigned)cpu.states,
    };
    int on_writer = ring_gettid() == writer_thread_tid();
    attr.disabled = on_writer ? !cpu_events_on
                              : __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED) != 0;
    if (getenv(trace_env_name(TRACE_ENV_TEST_CPU_REFUSE)) ||
        getenv(trace_env_name(TRACE_ENV_TEST_CPU_TIMERS))) /* tests: a locked-down kernel */
        return -EACCES;
    long fd = cpu_perf_event_open(&attr, (pid_t)tid);
    if (fd < 0 && errno == EINVAL) { /* kernels before 5.13 know no remove_on_exec */
        attr.remove_on_exec = 0;
        fd = cpu_perf_event_open(&attr, (pid_t)tid);
    }
    if (fd < 0 && errno == EINVAL && cpu.states) { /* before 4.3: no context switches */
        cpu.states = 0;
        attr.context_switch = attr.sample_id_all = 0;
        fd = cpu_perf_event_open(&attr, (pid_t)tid);
    }
    if (fd < 0)
        return -errno;
    void *map = mmap(NULL, cpu.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    int err = errno;
    close((int)fd);
    if (map == MAP_FAILED) {
        cpu.map_errno = err;
        return -err;
    }
    r->tid = tid;
    r->page = map;
    r->seen = cpu.scan;
    r->named = 0;
    r->adopted = on_writer;
    return 0;
}

static void cpu_ring_close(struct cpu_ring *r)
{
    munmap(r->page, cpu.ring_bytes);
    r->tid = 0;
    r->page = NULL;
}

/* ---- what the writer writes (lock held) ---- */

static void cpu_put_status(unsigned status, const char *reason)
{
    struct trace_cpu_sampling rec = {
        .status = status, .period_ns = cpu.period_ns, .reason = trace_cstr(reason)};
    writer_reserve_locked(64 + strlen(reason));
    trace_put_cpu_sampling(writer_chunk_locked(), &rec);
}

/* Reads /proc/self/maps again and writes the executable mappings it did not know. */
static void cpu_put_mappings(void)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    static char buf[1 << 16], line[4096 + 256];
    size_t line_len = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (line_len < sizeof line - 1)
                    line[line_len++] = buf[i];
                continue;
            }
            line[line_len] = '\0';
            line_len = 0;
            unsigned long long start, end, offset;
            char perms[8];
            int path_at = 0;
            if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
                       &path_at) < 4 ||
                perms[2] != 'x')
                continue;
            uint32_t k = 0;
            while (k < cpu.mappings &&
                   !(cpu_mappings[k].start == start && cpu_mappings[k].end == end))
                k++;
            if (k < cpu.mappings || cpu.mappings == CPU_MAX_MAPPINGS)
                continue;
            cpu_mappings[cpu.mappings++] = (struct cpu_mapping){start, end};
            const char *path = path_at ? line + path_at : "";
            struct trace_cpu_mapping rec = {
                .start = start, .end = end, .file_offset = offset, .path = trace_cstr(path)};
            writer_reserve_locked(64 + strlen(path));
            trace_put_cpu_mapping(writer_chunk_locked(), &rec);
        }
    }
    close(fd);
    cpu.maps_stale = 0;
}

static int cpu_address_mapped(uint64_t ip)
{
    for (uint32_t k = 0; k < cpu.mappings; k++)
        if (ip >= cpu_mappings[k].start && ip < cpu_mappings[k].end)
            return 1;
    return 0;
}

static uint64_t cpu_stack_hash(const uint64_t *ips, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15u ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= ips[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h | 1;
}

static uint8_t *cpu_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* The file's id of a callchain, written as TRACE_CPU_STACK the first time. */
static uint32_t cpu_stack_id(const uint64_t *ips, uint32_t n)
{
    if (n == 0)
        return 0;
    uint64_t hash = cpu_stack_hash(ips, n);
    uint32_t i = (uint32_t)(hash >> 40) & (CPU_STACK_SLOTS - 1);
    for (;; i = (i + 1) & (CPU_STACK_SLOTS - 1)) {
        struct cpu_stack_slot *s = &cpu_stacks[i];
        if (s->generation != cpu.stack_generation || s->hash == 0)
            break;
        if (s->hash == hash) /* 64 bits: a collision within 64 Ki stacks is ~1e-10 */
            return s->id;
    }
    if (cpu.stacks_in_generation >= CPU_STACK_SLOTS / 2) { /* full: start over */
        cpu.stack_generation++;
        cpu.stacks_in_generation = 0;
        return cpu_stack_id(ips, n);
    }
    for (uint32_t k = 0; k < n && !cpu.maps_stale; k++)
        cpu.maps_stale = !cpu_address_mapped(ips[k]);
    uint8_t frames[CPU_MAX_FRAMES * 10], *p = frames;
    p = cpu_put_varint(p, ips[0]);
    for (uint32_t k = 1; k < n; k++) {
        int64_t d = (int64_t)(ips[k] - ips[k - 1]);
        p = cpu_put_varint(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
    }
    struct trace_cpu_stack rec = {.stack_id = ++cpu.next_stack_id,
                                  .frames = trace_bytes(frames, (size_t)(p - frames))};
    writer_reserve_locked(32 + (size_t)(p - frames));
    trace_put_cpu_stack(writer_chunk_locked(), &rec);
    cpu_stacks[i] = (struct cpu_stack_slot){hash, rec.stack_id, cpu.stack_generation};
    cpu.stacks_in_generation++;
    return rec.stack_id;
}

/* One sample of either method: thread, time (CLOCK_MONOTONIC), addresses leaf first; it stands
 * for 1 + overruns periods of the thread's CPU time (CPU-time timers: expiries a late tick
 * folded into one signal; the perf path: 0). A fold of TRACE_CPU_SAMPLE_WEIGHT_MAX expiries or
 * more is a signal the thread kept blocked: the sample stands for one, the rest count lost. */
static void cpu_put_sample(uint32_t tid, uint64_t ts, const uint64_t *ips, uint32_t n,
                           uint32_t overruns)
{
    uint32_t weighted = overruns < TRACE_CPU_SAMPLE_WEIGHT_MAX ? overruns : 0;
    uint64_t paused_at = __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED);
    if ((paused_at && ts >= paused_at) ||
        ts < __atomic_load_n(&cpu_resumed_at, __ATOMIC_RELAXED)) {
        cpu.paused_samples += 1 + (uint64_t)weighted; /* taken while the session was paused */
        return;
    }
    struct trace_cpu_sample rec = {
        .os_tid = tid, .ts = ts, .stack_id = cpu_stack_id(ips, n), .overruns = weighted};
    writer_reserve_locked(56);
    trace_put_cpu_sample(writer_chunk_locked(), &rec);
    cpu.samples += 1 + (uint64_t)weighted;
    cpu.lost += overruns - weighted;
}

/* One PERF_RECORD_SAMPLE: u32 pid, u32 tid; u64 time; u64 nr, u64 ips[nr] (sample_type's
 * order, perf_event_open(2)). */
static void cpu_put_perf_sample(const uint64_t *body, size_t words)
{
    if (words < 3)
        return;
    uint64_t nr = body[2];
    if (nr > words - 3)
        nr = words - 3;
    uint64_t ips[CPU_MAX_FRAMES];
    uint32_t n = 0;
    for (uint64_t i = 0; i < nr && n < CPU_MAX_FRAMES; i++)
        if (body[3 + i] < (uint64_t)PERF_CONTEXT_MAX) /* not a context marker */
            ips[n++] = body[3 + i];
    cpu_put_sample((uint32_t)(body[0] >> 32), body[1], ips, n, 0);
}

/* ---- thread states: a sampled thread's context switches (PERF_RECORD_SWITCH) ----
 * A switch-out opens an off-CPU interval, blocked or preempted (PERF_RECORD_MISC_SWITCH_OUT_
 * PREEMPT: the thread was still runnable, Linux 4.17), its switch-in closes it. A thread that
 * switches very often (a futex or pipe ping-pong: 100 000 a second) would write a record per
 * switch; so intervals of the same state less than CPU_STATE_MERGE_GAP_NS of running apart are
 * merged into one of at most CPU_STATE_MERGE_SPAN_NS, which keeps its running time inside
 * (on_ns) so that every total stays exact: a thread switching densely in one state writes
 * at most about one record a millisecond (a pipe ping-pong on a loaded machine, its states
 * alternating: one per ~10 switches, docs/cpu.md "Thread states"). */

#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif
#define CPU_STATE_MERGE_GAP_NS 20000u
#define CPU_STATE_MERGE_SPAN_NS 1000000u

static void cpu_state_flush(struct cpu_ring *r)
{
    struct cpu_state_run *u = &r->run;
    if (!u->state)
        return;
    struct trace_cpu_thread_state rec = {.os_tid = r->tid,
                                         .start = u->start,
                                         .end = u->end,
                                         .state = u->state,
                                         .merged = u->merged,
                                         .on_ns = u->on_ns};
    writer_reserve_locked(64);
    trace_put_cpu_thread_state(writer_chunk_locked(), &rec);
    u->state = 0;
}

/* The thread was off the CPU in state from start to end: merged into the interval being made,
 * or that one written and this one begun. */
static void cpu_state_add(struct cpu_ring *r, uint64_t start, uint64_t end, uint8_t state)
{
    struct cpu_state_run *u = &r->run;
    if (end <= start)
        return;
    if (u->state == state && start >= u->end && start - u->end < CPU_STATE_MERGE_GAP_NS &&
        end - u->start <= CPU_STATE_MERGE_SPAN_NS) {
        u->on_ns += start - u->end;
        u->end = end;
        u->merged++;
        return;
    }
    cpu_state_flush(r);
    u->state = state;
    u->start = start;
    u->end = end;
    u->merged = 0;
    u->on_ns = 0;
}

/* The switch-out waiting for its switch-in ends at `at` (a pause, the file's end). */
static void cpu_state_close(struct cpu_ring *r, uint64_t at)
{
    if (r->run.out_state && at > r->run.out_ts)
        cpu_state_add(r, r->run.out_ts, at, r->run.out_state);
    r->run.out_state = 0;
    cpu_state_flush(r);
}

/* One PERF_RECORD_SWITCH of r's thread: its sample_id, u32 pid, u32 tid, u64 time. Those
 * outside the recording are dropped, a switch-out pending at the pause ends there. */
static void cpu_state_switch(struct cpu_ring *r, uint16_t misc, const uint64_t *body, size_t words)
{
    if (words < 2)
        return;
    uint64_t ts = body[1];
    uint64_t paused_at = __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED);
    if (paused_at && ts >= paused_at) {
        cpu_state_close(r, paused_at);
        return;
    }
    if (ts < __atomic_load_n(&cpu_resumed_at, __ATOMIC_RELAXED)) {
        r->run.out_state = 0;
        return;
    }
    if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
        r->run.out_ts = ts;
        r->run.out_state = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? TRACE_CPU_STATE_PREEMPTED
                                                                       : TRACE_CPU_STATE_BLOCKED;
        cpu.switches++;
    } else if (r->run.out_state) {
        cpu_state_add(r, r->run.out_ts, ts, r->run.out_state);
        r->run.out_state = 0;
    }
}

/* Everything the kernel put in one ring since the last read. */
static void cpu_ring_read(struct cpu_ring *r)
{
    struct perf_event_mmap_page *pg = r->page;
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;
    const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
    uint64_t size = pg->data_size;
    static uint64_t record[(CPU_MAX_FRAMES + 8) * 2]; /* a record that wraps, copied whole */
    while (tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof h; i++)
            ((uint8_t *)&h)[i] = data[(tail + i) % size];
        if (h.size < sizeof h || tail + h.size > head)
            break;
        size_t bytes = h.size - sizeof h < sizeof record ? h.size - sizeof h : sizeof record;
        for (size_t i = 0; i < bytes; i++)
            ((uint8_t *)record)[i] = data[(tail + sizeof h + i) % size];
        if (h.type == PERF_RECORD_SAMPLE)
            cpu_put_perf_sample(record, bytes / 8);
        else if (h.type == PERF_RECORD_SWITCH)
            cpu_state_switch(r, h.misc, record, bytes / 8);
        else if (h.type == PERF_RECORD_LOST && bytes >= 16) {
            cpu.lost += record[1];
            writer_put_dropped(0, record[1]);
            r->run.out_state = 0; /* its switch-in may be among them */
        }
        tail += h.size;
    }
    __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static int cpu_perf_switch(int on)
{
    return prctl(on ? PR_TASK_PERF_EVENTS_ENABLE : PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
}

/* ---- the CPU-time timers (cpu_timers.c): a ring slot's index is its timer's buffer ---- */

static uint32_t cpu_slot_of(const struct cpu_ring *r)
{
    return (uint32_t)(r - cpu_rings);
}

/* Any thread may create, arm and delete the process's timers: the writer owns them all. */
static int cpu_timer_ring_open(struct cpu_ring *r, uint32_t tid)
{
    int rc = cpu_timers_open(cpu_slot_of(r), tid,
                             __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED) == 0);
    if (rc)
        return rc;
    *r = (struct cpu_ring){.tid = tid, .seen = cpu.scan, .adopted = 1};
    return 0;
}

static void cpu_timer_ring_close(struct cpu_ring *r)
{
    if (cpu_timers_close(cpu_slot_of(r))) { /* it blocked the signal all along */
        cpu.threads--;
        cpu.threads_unsampled++;
    }
    r->tid = 0;
}

static void cpu_timer_ring_watch(struct cpu_ring *r)
{
    cpu_timers_watch(cpu_slot_of(r), __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED) == 0);
}

static void cpu_timer_ring_read(struct cpu_ring *r)
{
    uint32_t slot = cpu_slot_of(r);
    const struct cpu_timer_sample *s;
    while ((s = cpu_timers_peek(slot))) {
        cpu_put_sample(r->tid, s->ts, s->ips, s->frames, s->overruns);
        cpu_timers_pop(slot);
    }
    uint64_t overruns, lost = cpu_timers_take_lost(slot, &overruns);
    cpu.lost += lost + overruns; /* the header's "lost": periods of CPU time without a sample */
    if (lost) /* the Lost events line: samples taken and dropped */
        writer_put_dropped(0, lost);
}

static int cpu_timers_switch(int on)
{
    for (uint32_t i = 0; i < cpu.rings_used; i++)
        if (cpu_rings[i].tid)
            cpu_timers_arm(i, on);
    return 0;
}

/* How threads are sampled: perf events, or CPU-time timers where those are refused. */
struct cpu_method {
    int (*open)(struct cpu_ring *r, uint32_t tid); /* 0, or -errno */
    void (*close)(struct cpu_ring *r);
    void (*read)(struct cpu_ring *r);
    int (*switch_all)(int on); /* a pause or a resume, on the writer thread: 0 done */
    void (*at_fork_child)(void);
    int (*still_ours)(void); /* NULL: nothing the program can take away */
    void (*watch)(struct cpu_ring *r); /* at each scan of a live thread; NULL: nothing to do */
};

static const struct cpu_method cpu_perf_method = {
    .open = cpu_ring_open,
    .close = cpu_ring_close,
    .read = cpu_ring_read,
    .switch_all = cpu_perf_switch,
};

static const struct cpu_method cpu_timer_method = {
    .open = cpu_timer_ring_open,
    .close = cpu_timer_ring_close,
    .read = cpu_timer_ring_read,
    .switch_all = cpu_timers_switch,
    .at_fork_child = cpu_timers_at_fork_child,
    .still_ours = cpu_timers_handler_is_ours,
    .watch = cpu_timer_ring_watch,
};

static const struct cpu_method *cpu_method = &cpu_perf_method;

static struct cpu_ring *cpu_ring_of(uint32_t tid)
{
    for (uint32_t i = 0; i < cpu.rings_used; i++)
        if (cpu_rings[i].tid == tid)
            return &cpu_rings[i];
    return NULL;
}

static struct cpu_ring *cpu_ring_free_slot(void)
{
    for (uint32_t i = 0; i < cpu.rings_used; i++)
        if (!cpu_rings[i].tid)
            return &cpu_rings[i];
    return cpu.rings_used < CPU_MAX_THREADS ? &cpu_rings[cpu.rings_used++] : NULL;
}

/* Opens tid's ring; the first error of the process is returned for the status. */
static int cpu_thread_add(uint32_t tid)
{
    if (cpu.stopped)
        return 0;
    struct cpu_ring *r = cpu_ring_free_slot();
    if (!r) {
        cpu.threads_unsampled++;
        return 0;
    }
    r->run = (struct cpu_state_run){0};
    int rc = cpu_method->open(r, tid);
    if (rc == 0)
        cpu.threads++;
    else if (rc != -ESRCH) /* it ended meanwhile */
        cpu.threads_unsampled++;
    return rc;
}

/* Lists /proc/self/task: new threads get a ring, ended ones are read a last time and closed.
 * Returns the first error opening a ring (0: none). */
static int cpu_scan(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return 0;
    cpu.scan++;
    uint32_t writer = writer_thread_tid();
    int first_error = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
        /* the writer's and the Python sampler's time is not the program's */
        if (!tid || tid == writer || tid == cpu_python_sampler_tid())
            continue;
        struct cpu_ring *r = cpu_ring_of(tid);
        if (r) {
            r->seen = cpu.scan;
            if (cpu_method->watch)
                cpu_method->watch(r);
            continue;
        }
        int rc = cpu_thread_add(tid);
        if (rc && !first_error)
            first_error = rc;
    }
    closedir(dir);
    for (uint32_t i = 0; i < cpu.rings_used; i++) {
        struct cpu_ring *r = &cpu_rings[i];
        if (r->tid && r->seen != cpu.scan) { /* ended: its last samples, then the ring goes */
            cpu_method->read(r);
            r->run.out_state = 0; /* its last switch-out was its exit */
            cpu_state_flush(r);
            cpu_method->close(r);
        }
    }
    cpu.last_scan_ns = clock_mono_ns();
    return first_error;
}

/* On the writer thread: every ring opened elsewhere is opened again here (its samples so far
 * read first), so that the writer owns every event; then a pause or resume seen since the last
 * drain switches them all. */
static void cpu_writer_owns_and_switches(void)
{
    for (uint32_t i = 0; i < cpu.rings_used; i++) {
        struct cpu_ring *r = &cpu_rings[i];
        if (!r->tid || r->adopted)
            continue;
        uint32_t tid = r->tid;
        cpu_method->read(r);
        cpu_method->close(r);
        int rc = cpu_method->open(r, tid);
        if (rc != 0 && rc != -ESRCH) /* -ESRCH: it ended meanwhile */
            cpu.threads_unsampled++;
    }
    if (cpu_switch_path) {
        int off = access(cpu_switch_path, F_OK) == 0;
        if (off != __atomic_load_n(&cpu_switched_off, __ATOMIC_RELAXED)) {
            __atomic_store_n(&cpu_switched_off, off, __ATOMIC_RELAXED);
            cpu_python_switch(!off);
            cpu_set_recording(!off && !agent_paused());
        }
    }
    int want = __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED) == 0;
    if (want != cpu_events_on && cpu_method->switch_all(want) == 0)
        cpu_events_on = want;
}

static uint64_t cpu_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_put_totals(void)
{
    struct trace_cpu_sampler rec = {.samples = cpu.samples,
                                    .lost = cpu.lost,
                                    .threads = cpu.threads,
                                    .threads_unsampled = cpu.threads_unsampled,
                                    .cpu_ns = cpu.cpu_ns,
                                    .paused_samples = cpu.paused_samples,
                                    .switches = cpu.switches,
                                    .states = (uint64_t)cpu.states,
                                    .optional_present = 9}; /* states 0 is an answer too */
    cpu_python_totals(&rec);
    writer_reserve_locked(128);
    trace_put_cpu_sampler(writer_chunk_locked(), &rec);
}

/* Every thread's last samples, then its ring or timer goes: at the final drain, or when the
 * program took the timers' signal. */
static void cpu_close_all(void)
{
    for (uint32_t i = 0; i < cpu.rings_used; i++)
        if (cpu_rings[i].tid) {
            if (cpu_method->watch)
                cpu_method->watch(&cpu_rings[i]);
            cpu_method->read(&cpu_rings[i]);
            cpu_method->close(&cpu_rings[i]);
        }
}

/* The program installed its own handler for the timers' signal: sampling stops (its handler
 * gets the signals still in flight), the samples so far stay, and the status says so. */
static void cpu_stop_taken_signal(void)
{
    cpu_close_all();
    cpu.stopped = 1;
    int signo = cpu_timers_signal();
    size_t used = strlen(cpu.reason);
    snprintf(cpu.reason + used, sizeof cpu.reason - used,
             "; stopped: the program installed its own handler for signal %d", signo);
    cpu_put_status(TRACE_CPU_SAMPLING_ON, cpu.reason);
    agent_warn("CPU sampling stops in this process: the program installed its own handler for "
               "signal %d, which the CPU-time timers used; the samples so far are kept",
               signo);
}

/* On every drain of the writer, lock held: the rings' new samples; new threads every
 * CPU_SCAN_NS; at the final drain, the mappings once more and the totals. */
static void cpu_drain(int final)
{
    if (!cpu.on)
        return;
    uint64_t cpu_start = cpu_thread_cpu_ns();
    if (cpu.status_pending) {
        cpu_put_status(TRACE_CPU_SAMPLING_ON, cpu.reason);
        cpu.status_pending = 0;
    }
    /* listing threads and reading maps allocate (opendir): only on the writer thread or at the
     * end, never in a program thread that helps the writer (writer_help) or forks */
    int on_writer = ring_gettid() == writer_thread_tid();
    int may_allocate = final || on_writer;
    cpu_python_drain(final, on_writer && !final, cpu.period_ns, cpu.reason);
    if (on_writer && !cpu.stopped && cpu_method->still_ours && !cpu_method->still_ours())
        cpu_stop_taken_signal();
    if (may_allocate && clock_mono_ns() - cpu.last_scan_ns >= CPU_SCAN_NS)
        cpu_scan();
    if (on_writer)
        cpu_writer_owns_and_switches();
    for (uint32_t i = 0; i < cpu.rings_used; i++) {
        struct cpu_ring *r = &cpu_rings[i];
        if (!r->tid)
            continue;
        if (!r->named) { /* a thread that never made an NVTX event has no name otherwise */
            writer_note_tid_locked(r->tid);
            r->named = 1;
        }
        cpu_method->read(r);
        uint64_t paused_at = __atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED);
        if (paused_at || final) /* no switch-in will come: the events are off, or the file ends */
            cpu_state_close(r, paused_at ? paused_at : clock_mono_ns());
    }
    if (final) /* no sample after the file's end: none is taken */
        cpu_close_all();
    /* a new library's addresses: its mapping before the file can end (rate: one read per
     * scan period, as a broken frame-pointer chain yields addresses in no mapping) */
    uint64_t now = clock_mono_ns();
    if (cpu.maps_stale && may_allocate && (final || now - cpu.last_maps_ns >= CPU_SCAN_NS)) {
        cpu.last_maps_ns = now;
        cpu_put_mappings();
    }
    cpu.cpu_ns += cpu_thread_cpu_ns() - cpu_start;
    if (final)
        cpu_put_totals();
}

/* ---- the source ---- */

static unsigned cpu_ring_pages(unsigned hz)
{
    /* room for 50 ms of samples of ~512 bytes (5 drains): 8 pages at 1 kHz */
    unsigned want = (unsigned)((uint64_t)hz * 512u / 20u / 4096u), pages = 8;
    while (pages < want && pages < 64)
        pages *= 2;
    return pages;
}

#define CPU_REASON_ROOM 320u
static char *cpu_refusal(int err, unsigned *status)
{
    static char reason[CPU_REASON_ROOM];
    if (cpu.map_errno) {
        *status = TRACE_CPU_SAMPLING_FAILED;
        snprintf(reason, sizeof reason,
                 "the sample ring could not be mapped (%s: the locked-memory limits "
                 "kernel.perf_event_mlock_kb and ulimit -l)",
                 strerror(cpu.map_errno));
    } else if (err == -EACCES || err == -EPERM) {
        *status = TRACE_CPU_SAMPLING_NOT_PERMITTED;
        int paranoid = -9;
        FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
        if (f) {
            if (fscanf(f, "%d", &paranoid) != 1)
                paranoid = -9;
            fclose(f);
        }
        if (paranoid > 2)
            snprintf(reason, sizeof reason,
                     "perf_event_open was refused (kernel.perf_event_paranoid is %d; 2 or less "
                     "allows it)",
                     paranoid);
        else
            snprintf(reason, sizeof reason,
                     "perf_event_open was refused (%s: a seccomp filter or container policy?)",
                     strerror(-err));
    } else if (err == -ENOSYS || err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP) {
        *status = TRACE_CPU_SAMPLING_UNAVAILABLE;
        snprintf(reason, sizeof reason, "the kernel has no perf events here (%s)", strerror(-err));
    } else {
        *status = TRACE_CPU_SAMPLING_FAILED;
        snprintf(reason, sizeof reason, "perf_event_open or its ring failed: %s", strerror(-err));
    }
    return reason;
}

/* A pause counts from the first time the sampler learns of it (cpu_init, then agent_poll). */
static void cpu_set_recording(int on)
{
    uint64_t now = clock_mono_ns();
    if (on && !__atomic_load_n(&cpu_switched_off, __ATOMIC_RELAXED)) {
        __atomic_store_n(&cpu_resumed_at, now, __ATOMIC_RELAXED);
        __atomic_store_n(&cpu_paused_at, 0, __ATOMIC_RELAXED);
    } else if (!__atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED))
        __atomic_store_n(&cpu_paused_at, now, __ATOMIC_RELAXED);
}

static uint32_t cpu_timer_slots(unsigned hz)
{
    /* room for 50 ms of samples (5 drains), as the perf rings: 64 (64 KiB) at 1 kHz */
    uint32_t want = hz / 20u, slots = 16;
    while (slots < want && slots < 512)
        slots *= 2;
    return slots;
}

/* perf_event_open was refused (refusal says why): every thread gets a CPU-time timer instead.
 * Returns 1 when at least one thread is sampled so, with cpu.reason saying how; else 0, with
 * why not appended to refusal. */
static int cpu_fall_back_to_timers(char *refusal, size_t room, unsigned hz)
{
    /* the kernel checks CPU-time timers at its scheduler tick (CONFIG_HZ), whose length is
     * the coarse clocks' resolution: a shorter period would fire once a tick all the same */
    struct timespec tick = {0, 0};
    clock_getres(CLOCK_MONOTONIC_COARSE, &tick);
    uint64_t tick_ns = (uint64_t)tick.tv_sec * 1000000000u + (uint64_t)tick.tv_nsec;
    uint64_t period_ns = cpu.period_ns > tick_ns ? cpu.period_ns : tick_ns;
    int rc = getenv(trace_env_name(TRACE_ENV_TEST_CPU_REFUSE))
                 ? -EPERM /* tests: a kernel that refuses both */
                 : cpu_timers_start(period_ns, cpu_timer_slots(hz));
    if (rc > 0) {
        cpu_method = &cpu_timer_method;
        uint64_t asked_ns = cpu.period_ns;
        cpu.period_ns = period_ns;
        cpu.threads_unsampled = 0;
        cpu_scan();
        if (cpu.threads > 0) {
            if (period_ns > asked_ns)
                snprintf(cpu.reason, sizeof cpu.reason,
                         "CPU-time timers, at most %llu Hz (the kernel's tick): %s",
                         (unsigned long long)(1000000000u / period_ns), refusal);
            else
                snprintf(cpu.reason, sizeof cpu.reason, "CPU-time timers: %s", refusal);
            return 1;
        }
        cpu.period_ns = asked_ns;
        rc = -ESRCH;
    }
    size_t used = strlen(refusal);
    snprintf(refusal + used, room - used, "; no CPU-time timer either (%s)",
             rc == -EBUSY ? "the program handles every real-time signal" : strerror(-rc));
    return 0;
}

static int cpu_init(void)
{
    const char *hz_text = getenv(trace_env_name(TRACE_ENV_SAMPLING_HZ));
    unsigned long hz = hz_text && *hz_text ? strtoul(hz_text, NULL, 10) : CPU_DEFAULT_HZ;
    if (hz == 0 || hz > CPU_MAX_HZ)
        hz = CPU_DEFAULT_HZ;
    cpu.period_ns = 1000000000u / hz;
    cpu.ring_bytes = (size_t)(1 + cpu_ring_pages((unsigned)hz)) * (size_t)getpagesize();
    const char *states = getenv(trace_env_name(TRACE_ENV_CPU_STATES)); /* 0: none asked for */
    cpu.states = !(states && !strcmp(states, "0")); /* until the kernel refuses (cpu_ring_open) */
    cpu_switch_path = getenv(trace_env_name(TRACE_ENV_TEST_CPU_SWITCH));
    if (cpu_switch_path && access(cpu_switch_path, F_OK) == 0) {
        cpu_switched_off = 1;
        cpu_python_switch(0);
    }
    if (agent_paused() || cpu_switched_off) /* started paused: no sample before the first start */
        cpu_set_recording(0);
    cpu.last_scan_ns = clock_mono_ns();
    int err = cpu_scan();
    unsigned status = TRACE_CPU_SAMPLING_ON;
    const char *reason = "";
    if (cpu.threads == 0) {
        err = err ? err : -ESRCH;
        char *refusal = cpu_refusal(err, &status);
        if (cpu_fall_back_to_timers(refusal, CPU_REASON_ROOM, (unsigned)hz)) {
            status = TRACE_CPU_SAMPLING_ON;
            cpu.states = 0; /* timers see no context switch: thread states unknown */
            reason = cpu.reason;
            agent_warn("CPU sampling falls back to CPU-time timers (signal %d) in this process: %s",
                       cpu_timers_signal(), refusal);
        } else {
            reason = refusal;
            agent_warn("CPU sampling is off in this process: %s; the rest is recorded", reason);
        }
    }
    if (!writer_lock())
        return -ECANCELED;
    cpu_put_status(status, reason);
    writer_unlock_durable();
    cpu.on = status == TRACE_CPU_SAMPLING_ON;
    return cpu.on ? 0 : err; /* off: cpu_refusal's err, negative */
}

/* The child has only the forking thread; the parent's rings are not mapped in it
 * (VM_DONTCOPY). Its file starts over: stacks and mappings are written again. */
static void cpu_at_fork_child(void)
{
    if (!cpu.on)
        return;
    memset(cpu_rings, 0, cpu.rings_used * sizeof cpu_rings[0]);
    cpu.rings_used = 0;
    cpu.stack_generation++;
    cpu.stacks_in_generation = 0;
    cpu.next_stack_id = 0;
    cpu.mappings = 0;
    cpu.maps_stale = 1;
    cpu.last_maps_ns = 0;
    cpu.samples = cpu.lost = cpu.threads = cpu.threads_unsampled = cpu.cpu_ns = 0;
    cpu.paused_samples = cpu.switches = 0;
    cpu.status_pending = 1;
    cpu_events_on = !__atomic_load_n(&cpu_paused_at, __ATOMIC_RELAXED); /* the child's writer owns none yet */
    cpu_python_at_fork_child();
    if (cpu_method->at_fork_child)
        cpu_method->at_fork_child();
    cpu_thread_add(ring_gettid());
    /* the child's writer thread (which reads the ring) starts at the child's first event,
     * not after 16 blocks: a ring holds ~0.5 s of samples (docs/cpu.md) */
    ring_hook_at_next_block();
    cpu.last_scan_ns = clock_mono_ns();
}

/* Starts the agent in a process that may never call NVTX or CUDA, for its CPU samples: Python's
 * start-up calls it (src/agent/python/sitecustomize.py) when LANTERN_TRACE names cpu, so a
 * Python program is sampled from its first line. 0 recording, -ECANCELED inert. */
__attribute__((visibility("default"))) int lantern_agent_start_cpu_sampling(void)
{
    return agent_init(TRACE_FLAG_CPU);
}

AGENT_SOURCE(cpu_source) = {
    .name = "cpu",
    .trace_flag = TRACE_FLAG_CPU,
    .init = cpu_init,
    .at_fork_child = cpu_at_fork_child,
    .drain = cpu_drain,
    .set_recording = cpu_set_recording,
};
