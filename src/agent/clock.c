/* Chooses the hot path's tick source (invariant TSC or CLOCK_MONOTONIC) and calibrates TSC
 * ticks against CLOCK_MONOTONIC for the writer thread. */
#include "agent/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int clock_ticks_are_tsc;

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every P/C-state, so it is
 * a clock (Intel SDM vol. 3, 17.17.1). Without it the TSC cannot be converted reliably. */
static int clock_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, eax, ebx, ecx, edx);
    return (edx >> 8) & 1u;
#else
    return 0;
#endif
}

void clock_init(void)
{
    __atomic_store_n(&clock_ticks_are_tsc, clock_has_invariant_tsc(), __ATOMIC_RELAXED);
}

/* One (ticks, ns) pair: the TSC read on both sides of clock_gettime, the tightest of three
 * tries, so the pair's error is half of the shortest bracket. */
static void clock_sample_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t before = clock_ticks();
        uint64_t mono = clock_mono_ns();
        uint64_t after = clock_ticks();
        if (after - before < best_width) {
            best_width = after - before;
            *ticks = before + (after - before) / 2;
            *ns = mono;
        }
    }
}

void clock_calibration_start(struct clock_calibration *c)
{
    clock_sample_pair(&c->first_ticks, &c->first_ns);
    c->last_ticks = c->first_ticks;
    c->last_ns = c->first_ns;
    c->ns_per_tick = 1.0; /* replaced by the first update; only used if none happened */
}

void clock_calibration_update(struct clock_calibration *c)
{
    if (!clock_ticks_are_tsc)
        return;
    clock_sample_pair(&c->last_ticks, &c->last_ns);
    uint64_t ticks = c->last_ticks - c->first_ticks;
    if (ticks > 0 && c->last_ns > c->first_ns)
        c->ns_per_tick = (double)(c->last_ns - c->first_ns) / (double)ticks;
}
