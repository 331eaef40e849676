/* The GPU sampling engine: the one NVML loop that reads power, the slow-changing state (clocks,
 * utilization, memory, temperature, throttle reasons) and the energy counter (when
 * counter_reader.h says), on a schedule its caller sets, handing every reading to a sink. It
 * serves the launcher's NVML sampler (src/launcher/nvml_sampler.c: records into launcher.lrt)
 * and the energy windows (src/api/energy.c: an energy track per GPU); each runs it on threads
 * of its own. Never in the profiled program. */
#ifndef LANTERN_ENERGY_GPU_SAMPLING_H
#define LANTERN_ENERGY_GPU_SAMPLING_H

#include "energy/counter_reader.h"
#include "nvml/nvml_iface.h"

#include <stdint.h>

/* The state fields, each + 1 so that 0 says "not read": SM clock, memory clock (MHz), GPU and
 * memory utilization (%), memory used (bytes), temperature (C), throttle reasons. */
#define GPU_STATE_FIELDS 7
struct gpu_state {
    uint64_t values[GPU_STATE_FIELDS];
};

/* One power reading of one GPU, and the state when it was due. */
struct gpu_power_sample {
    uint64_t ts;                /* when the reads began */
    uint64_t power_end_ns;      /* when the power reads ended */
    int instant_ok, average_ok; /* GPU_POWER_BOTH: which of the two read */
    unsigned int instant_mw, average_mw;
    int power_ok;          /* the one reading: the instant power where it reads, else */
    unsigned int power_mw; /* the average (both modes) */
    int with_state;        /* state read, from power_end_ns to state_end_ns */
    uint64_t state_end_ns;
    struct gpu_state state;
};

/* One read of the energy counter: when it ran, whether it worked, and the update it saw. */
struct gpu_counter_read {
    uint64_t t0, t1;
    int ok, updated;
    struct counter_update update;
};

/* What the engine hands its readings to; ctx is the caller's. gpu is the GPU's slot in the
 * caller's numbering (struct gpu_sampling's slots). */
struct gpu_sink {
    void *ctx;
    void (*power)(void *ctx, unsigned int gpu, const struct gpu_power_sample *p);
    void (*counter)(void *ctx, unsigned int gpu, const struct gpu_counter_read *r);
    /* after each round of power readings, with the round's start (NULL: nothing) */
    void (*round)(void *ctx, uint64_t now);
    /* sleeps until deadline (CLOCK_MONOTONIC ns; a past one returns at once): 0, or -EINTR
     * once the caller asked the engine to stop */
    int (*wait_until)(void *ctx, uint64_t deadline);
};

/* How the power is read: the instant and the average power both (the launcher records both),
 * or one reading, the instant power where the GPU has it (nvml_read_power). */
enum gpu_power_read { GPU_POWER_BOTH, GPU_POWER_ONE };

/* One sampling thread's work. */
struct gpu_sampling {
    const struct nvml *nvml;
    struct gpu_sink sink;
    /* power: these GPUs, every power_period_ns, all at once; none when power_count is 0 */
    unsigned int power_count;
    const struct nvml_gpu *power_gpus[NVML_MAX_GPUS];
    unsigned int power_slots[NVML_MAX_GPUS];
    uint64_t power_period_ns;
    enum gpu_power_read power_read;
    uint64_t state_period_ns; /* the state with the power this often; 0: never */
    /* behind schedule (a slow read): read at once (1), or a period from now (0); neither
     * catches up */
    int resume_now;
    /* power and state at both ends whatever the stop: a round before the first wait and one
     * after the stop (a program shorter than a period still has both) */
    int both_ends;
    /* the energy counter of counter_gpu (NULL: none), read when reader says */
    const struct nvml_gpu *counter_gpu;
    unsigned int counter_slot;
    struct counter_reader *reader;
    uint64_t acquire_gap_ns; /* the reader's until the first update; 0: its default */
    uint64_t cpu_ns;         /* out: the thread's CPU time, when gpu_sampling_run returns */
};

/* A sampling thread's function (pthread_create's, arg: a struct gpu_sampling): runs until the
 * sink's wait_until says stop. Returns NULL. */
void *gpu_sampling_thread(void *arg);

#endif
