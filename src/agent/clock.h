/* The agent's clocks: a cheap tick counter for the hot path (the TSC where it is invariant,
 * else CLOCK_MONOTONIC ns) and the writer's calibration that turns ticks into CLOCK_MONOTONIC
 * ns with a fresh (tsc, ns) pair per drain (docs/architecture.md, "Clock"). */
#ifndef LANTERN_AGENT_CLOCK_H
#define LANTERN_AGENT_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "trace/events.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* Set once by clock_init(): 1 when ticks are TSC cycles, 0 when they are already ns. */
extern int clock_ticks_are_tsc;

/* Idempotent and a pure function of the CPU: any thread may call it, at any time. */
void clock_init(void);

static inline uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The hot path's timestamp: rdtsc (~10 ns) when invariant, else clock_gettime (~22 ns). */
static inline uint64_t clock_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(clock_ticks_are_tsc, 1))
        return __rdtsc();
#endif
    return clock_mono_ns();
}

/* Ticks -> ns: a line through the latest calibration pair whose slope is measured over the
 * whole run (from the first pair), so the slope's error shrinks as the run gets longer and
 * the offset error stays at the jitter of one clock_gettime. Owned by the writer. */
struct clock_calibration {
    uint64_t first_ticks, first_ns;
    uint64_t last_ticks, last_ns;
    double ns_per_tick;
};

void clock_calibration_start(struct clock_calibration *c);
void clock_calibration_update(struct clock_calibration *c);

/* The line the writer also writes as TRACE_CLOCK, so the importer converts the threads' ticks
 * exactly as the agent does (one formula: trace/events.h). */
static inline struct trace_clock_line clock_line(const struct clock_calibration *c)
{
    return (struct trace_clock_line){
        .tsc = c->last_ticks, .ns = c->last_ns, .ns_per_tick = c->ns_per_tick,
        .set = clock_ticks_are_tsc};
}

static inline uint64_t clock_ticks_to_ns(const struct clock_calibration *c, uint64_t ticks)
{
    struct trace_clock_line line = clock_line(c);
    return trace_clock_line_ns(&line, ticks);
}

#endif
