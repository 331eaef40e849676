/* The GPU sampling engine (see gpu_sampling.h): one loop, one schedule of two clocks (the power
 * period, and the counter reader's next read), the NVML reads, and the sink. The callers keep
 * their own threads, locks and stop. */
#include "energy/gpu_sampling.h"

#include <string.h>
#include <time.h>

/* A failed counter read: the next one this much later. */
#define GPU_COUNTER_RETRY_NS 100000000ull

static void read_state(const struct nvml *n, const struct nvml_gpu *g, struct gpu_state *st)
{
    const struct nvml_api *a = &n->api;
    unsigned int u;
    unsigned long long ull;
    struct nvml_utilization util;
    struct nvml_memory mem;
    memset(st, 0, sizeof *st);
    if (a->clock(g->device, NVML_CLOCK_KIND_SM, &u) == NVML_OK)
        st->values[0] = u + 1ull;
    if (a->clock(g->device, NVML_CLOCK_KIND_MEM, &u) == NVML_OK)
        st->values[1] = u + 1ull;
    if (a->utilization(g->device, &util) == NVML_OK) {
        st->values[2] = util.gpu + 1ull;
        st->values[3] = util.memory + 1ull;
    }
    if (a->memory(g->device, &mem) == NVML_OK)
        st->values[4] = mem.used + 1ull;
    if (a->temperature(g->device, NVML_TEMPERATURE_SENSOR_GPU, &u) == NVML_OK)
        st->values[5] = u + 1ull;
    if (a->clock_reasons && a->clock_reasons(g->device, &ull) == NVML_OK)
        st->values[6] = ull + 1;
}

/* GPU_POWER_BOTH: the instant power (where the GPU has it) and the average, stamped when the
 * reads began and ended. */
static void read_power_both(const struct nvml *n, const struct nvml_gpu *g, uint64_t round,
                            struct gpu_power_sample *p)
{
    (void)round;
    struct nvml_field_value v = {.field_id = NVML_FIELD_POWER_INSTANT};
    p->ts = nvml_now_ns();
    p->instant_ok = g->has_instant_power && n->api.field_values(g->device, 1, &v) == NVML_OK &&
                    v.status == NVML_OK;
    p->instant_mw = p->instant_ok ? v.value.ui : 0;
    p->average_ok = n->api.power_usage(g->device, &p->average_mw) == NVML_OK;
    p->power_end_ns = nvml_now_ns();
    p->power_ok = p->instant_ok || p->average_ok;
    p->power_mw = p->instant_ok ? p->instant_mw : p->average_mw;
}

/* GPU_POWER_ONE: one reading, stamped with the round's start. */
static void read_power_one(const struct nvml *n, const struct nvml_gpu *g, uint64_t round,
                           struct gpu_power_sample *p)
{
    p->ts = round;
    p->power_ok = nvml_read_power(n, g, &p->power_mw) == NVML_OK;
}

static void (*const power_readers[])(const struct nvml *, const struct nvml_gpu *, uint64_t,
                                     struct gpu_power_sample *) = {
    [GPU_POWER_BOTH] = read_power_both,
    [GPU_POWER_ONE] = read_power_one,
};

/* Every power GPU once, with the state when with_state. */
static void power_round(struct gpu_sampling *w, uint64_t now, int with_state)
{
    for (unsigned int i = 0; i < w->power_count; i++) {
        const struct nvml_gpu *g = w->power_gpus[i];
        struct gpu_power_sample p = {0};
        power_readers[w->power_read](w->nvml, g, now, &p);
        if (with_state) {
            read_state(w->nvml, g, &p.state);
            p.with_state = 1;
            p.state_end_ns = nvml_now_ns();
        }
        w->sink.power(w->sink.ctx, w->power_slots[i], &p);
    }
}

/* One read of the energy counter, fed to the reader; returns when a failed read may be tried
 * again (0 after a read that worked). */
static uint64_t read_counter(struct gpu_sampling *w)
{
    struct gpu_counter_read r = {0};
    unsigned long long mj;
    r.t0 = nvml_now_ns();
    r.ok = w->nvml->api.total_energy(w->counter_gpu->device, &mj) == NVML_OK;
    r.t1 = nvml_now_ns();
    r.updated = r.ok && counter_reader_feed(w->reader, r.t0, r.t1, mj, &r.update);
    w->sink.counter(w->sink.ctx, w->counter_slot, &r);
    return r.ok ? 0 : r.t1 + GPU_COUNTER_RETRY_NS;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The power's next round after one due at next that ran at now: a period on, never catching
 * up. */
static uint64_t next_power_round(const struct gpu_sampling *w, uint64_t next, uint64_t now)
{
    next += w->power_period_ns;
    if (next < now)
        next = w->resume_now ? now : now + w->power_period_ns;
    return next;
}

/* Power when due (with the state when that is due too), the counter when the reader says
 * (never back to back: a read holds the driver for milliseconds, and the program's own driver
 * calls would wait behind it), then a sleep until the next of the two. */
void *gpu_sampling_thread(void *arg)
{
    struct gpu_sampling *w = arg;
    const struct gpu_sink *k = &w->sink;
    if (w->counter_gpu) {
        counter_reader_init(w->reader);
        if (w->acquire_gap_ns)
            w->reader->acquire_gap_ns = w->acquire_gap_ns;
    }
    uint64_t next_power = nvml_now_ns(), next_state = next_power, retry_at = 0;
    int stopped = !w->both_ends && k->wait_until(k->ctx, 0) != 0;
    while (!stopped) {
        uint64_t now = nvml_now_ns(), wake = UINT64_MAX;
        if (w->power_count && now >= next_power) {
            int with_state = w->state_period_ns && now >= next_state;
            if (with_state)
                next_state += w->state_period_ns;
            power_round(w, now, with_state);
            if (k->round)
                k->round(k->ctx, now);
            next_power = next_power_round(w, next_power, now);
        }
        if (w->power_count)
            wake = next_power;
        if (w->counter_gpu) {
            uint64_t next_counter = counter_reader_next_start(w->reader);
            if (now >= (next_counter > retry_at ? next_counter : retry_at)) {
                retry_at = read_counter(w);
                next_counter = counter_reader_next_start(w->reader);
            }
            if (next_counter < retry_at)
                next_counter = retry_at;
            if (next_counter < wake)
                wake = next_counter;
        }
        stopped = k->wait_until(k->ctx, wake) != 0;
    }
    if (w->both_ends && w->power_count)
        power_round(w, nvml_now_ns(), 1);
    w->cpu_ns = thread_cpu_ns();
    return NULL;
}
