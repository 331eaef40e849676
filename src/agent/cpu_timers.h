/* CPU sampling where perf_event_open is refused (cpu_sampling.c falls back to this): one POSIX
 * CPU-time timer per thread, on that thread's own CPU clock, whose signal (a real-time signal
 * the program leaves at its default) goes to that thread; the handler takes the interrupted
 * instruction and its frame-pointer chain into the thread's slot buffer, which the writer
 * drains into the same TRACE_CPU_* records as the perf path. docs/cpu.md, "CPU-time timers". */
#ifndef LANTERN_AGENT_CPU_TIMERS_H
#define LANTERN_AGENT_CPU_TIMERS_H

#include <stdint.h>

/* Frames kept per sample: the interrupted instruction and its callers (a sample is 1 KiB). */
#define CPU_TIMERS_FRAMES 126u
/* Threads sampled at once: one buffer slot each. */
#define CPU_TIMERS_MAX_THREADS 4096u

struct cpu_timer_sample {
    uint64_t ts; /* CLOCK_MONOTONIC, the common clock */
    uint32_t frames;
    uint32_t overruns; /* expiries the kernel folded into this signal (si_overrun): a late tick */
    uint64_t ips[CPU_TIMERS_FRAMES];
};

/* Picks the signal (the highest of SIGRTMAX..SIGRTMIN whose action is the default) and
 * installs the handler; period_ns of a thread's CPU time between two samples, slots the
 * buffers' room in samples (a power of two). Returns the signal, or -errno (-EBUSY: every
 * real-time signal is the program's). */
int cpu_timers_start(uint64_t period_ns, uint32_t slots);

/* A timer for thread tid whose samples go to buffer `slot` (< CPU_TIMERS_MAX_THREADS), armed
 * or not; the buffer is mapped the first time the slot is used and kept for the next thread.
 * 0, or -errno (-ESRCH: the thread ended). */
int cpu_timers_open(uint32_t slot, uint32_t tid, int armed);

/* Notes the slot's thread's CPU time now (at each scan, and before the last close): time it
 * ran while armed counts towards cpu_timers_close's verdict. */
void cpu_timers_watch(uint32_t slot, int armed);

/* Deletes the slot's timer (its buffer stays, read it first). Returns 1 when the thread took
 * no signal while it ran 4 periods or more armed (it blocked the signal: not sampled). */
int cpu_timers_close(uint32_t slot);

/* Arms or disarms the slot's timer (a pause). */
void cpu_timers_arm(uint32_t slot, int armed);

/* The slot's oldest unread sample, NULL when none; cpu_timers_pop releases it. */
const struct cpu_timer_sample *cpu_timers_peek(uint32_t slot);
void cpu_timers_pop(uint32_t slot);

/* Samples the slot's thread took since the last call that its buffer had no room for; and in
 * *overruns the expiries the kernel had folded into those (a kept sample carries its own). */
uint64_t cpu_timers_take_lost(uint32_t slot, uint64_t *overruns);

/* Whether the signal's action is still this handler (the program may install its own). */
int cpu_timers_handler_is_ours(void);

/* The signal (0 before cpu_timers_start). */
int cpu_timers_signal(void);

/* In a fork child: the parent's timers are not there (POSIX); its buffers are, emptied. */
void cpu_timers_at_fork_child(void);

#endif
