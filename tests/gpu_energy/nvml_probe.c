/* Measures, on a real GPU, what the sampler's design rests on: the cost of each NVML call
 * Lantern makes and how often power and the energy counter really change. Prints one line
 * per measurement; exits 77 (skip) with the reason when NVML cannot be used. */
#include "nvml/nvml_iface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALLS 200

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static struct nvml nvml;
static struct nvml_gpu *gpu;

static int call_once(int which)
{
    const struct nvml_api *a = &nvml.api;
    unsigned int u;
    unsigned long long ull;
    struct nvml_utilization util;
    struct nvml_memory mem;
    struct nvml_field_value fv = {.field_id = NVML_FIELD_POWER_INSTANT};
    struct nvml_field_value fe = {.field_id = NVML_FIELD_TOTAL_ENERGY};
    switch (which) {
    case 0:
        return a->field_values(gpu->device, 1, &fv);
    case 1:
        return a->power_usage(gpu->device, &u);
    case 2:
        return a->total_energy(gpu->device, &ull);
    case 3:
        return a->field_values(gpu->device, 1, &fe);
    case 4:
        return a->clock(gpu->device, NVML_CLOCK_KIND_SM, &u);
    case 5:
        return a->clock(gpu->device, NVML_CLOCK_KIND_MEM, &u);
    case 6:
        return a->utilization(gpu->device, &util);
    case 7:
        return a->memory(gpu->device, &mem);
    case 8:
        return a->temperature(gpu->device, NVML_TEMPERATURE_SENSOR_GPU, &u);
    case 9:
        return a->clock_reasons ? a->clock_reasons(gpu->device, &ull) : -1;
    }
    return -1;
}

static const char *call_names[] = {"field POWER_INSTANT", "GetPowerUsage", "GetTotalEnergy",
                                   "field TOTAL_ENERGY",  "clock SM",      "clock MEM",
                                   "utilization",         "memory info",   "temperature",
                                   "clock event reasons"};

static void measure_costs(void)
{
    static uint64_t ns[CALLS];
    for (int which = 0; which < 10; which++) {
        int rc = 0;
        for (int i = 0; i < CALLS; i++) {
            uint64_t t0 = nvml_now_ns();
            rc |= call_once(which);
            ns[i] = nvml_now_ns() - t0;
        }
        qsort(ns, CALLS, sizeof ns[0], compare_u64);
        uint64_t sum = 0;
        for (int i = 0; i < CALLS; i++)
            sum += ns[i];
        printf("cost %-20s rc=%d mean_us=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f\n",
               call_names[which], rc, sum / 1e3 / CALLS, ns[CALLS / 2] / 1e3,
               ns[CALLS * 99 / 100] / 1e3, ns[CALLS - 1] / 1e3);
    }
}

/* Polls power and the counter as fast as possible and reports how often each changes. */
static void measure_updates(double seconds)
{
    uint64_t end = nvml_now_ns() + (uint64_t)(seconds * 1e9);
    unsigned long long last_mj = 0, first_mj = 0;
    unsigned int last_mw = 0;
    uint64_t last_energy_change = 0, last_power_change = 0, first_ts = 0, last_ts = 0;
    long long last_field_ts = 0;
    int energy_changes = 0, power_changes = 0, field_ts_changes = 0, polls = 0;
    double energy_gap_sum = 0, energy_gap_min = 1e18, energy_gap_max = 0, power_gap_sum = 0;
    double power_sum = 0;
    while (nvml_now_ns() < end) {
        unsigned long long mj;
        struct nvml_field_value fv = {.field_id = NVML_FIELD_POWER_INSTANT};
        nvml.api.field_values(gpu->device, 1, &fv);
        nvml.api.total_energy(gpu->device, &mj);
        uint64_t now = nvml_now_ns();
        if (!polls) {
            first_mj = last_mj = mj;
            first_ts = now;
        }
        polls++;
        power_sum += fv.value.ui;
        if (fv.timestamp_us != last_field_ts) {
            field_ts_changes++;
            last_field_ts = fv.timestamp_us;
        }
        if (fv.value.ui != last_mw) {
            if (last_power_change)
                power_gap_sum += (now - last_power_change) / 1e6;
            last_power_change = now;
            power_changes++;
            last_mw = fv.value.ui;
        }
        if (mj != last_mj) {
            if (last_energy_change) {
                double gap = (now - last_energy_change) / 1e6;
                energy_gap_sum += gap;
                energy_gap_min = gap < energy_gap_min ? gap : energy_gap_min;
                energy_gap_max = gap > energy_gap_max ? gap : energy_gap_max;
            }
            last_energy_change = now;
            last_ts = now;
            energy_changes++;
            last_mj = mj;
        }
    }
    printf("updates polls=%d poll_ms=%.2f energy_changes=%d energy_gap_ms mean=%.1f min=%.1f "
           "max=%.1f power_changes=%d power_gap_ms_mean=%.1f field_ts_changes=%d "
           "avg_instant_w=%.1f counter_w=%.1f\n",
           polls, seconds * 1e3 / polls, energy_changes,
           energy_changes > 1 ? energy_gap_sum / (energy_changes - 1) : 0, energy_gap_min,
           energy_gap_max, power_changes,
           power_changes > 1 ? power_gap_sum / (power_changes - 1) : 0, field_ts_changes,
           power_sum / polls / 1e3,
           last_ts > first_ts ? (last_mj - first_mj) / ((last_ts - first_ts) / 1e6) : 0);
}

int main(int argc, char **argv)
{
    if (nvml_open(&nvml) != 0) {
        printf("skip: %s\n", nvml.disabled_reason);
        return 77;
    }
    gpu = &nvml.gpus[0];
    printf("gpu %s %s energy_counter=%d instant_power=%d power_limit_mw=%u gpus=%u\n", gpu->name,
           gpu->uuid, gpu->has_energy_counter, gpu->has_instant_power, gpu->power_limit_mw,
           nvml.gpu_count);
    if (argc < 2 || strcmp(argv[1], "--updates-only") != 0)
        measure_costs();
    measure_updates(argc > 2 ? atof(argv[2]) : 3.0);
    nvml_close(&nvml);
    return 0;
}
