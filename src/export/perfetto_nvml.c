/* The NVML part of the Perfetto export: the launcher's samples (power, energy since the first
 * sample, clocks, utilization, memory used, temperature) as counter tracks under their GPU's
 * track, one per metric, so idle and loaded phases show beside the kernels that caused them. */
#include "export/perfetto_writer.h"

#include <errno.h>
#include <stdio.h>

static const struct {
    const char *name, *value; /* the track's name; the value, an SQL expression over gpu_samples */
} counters[] = {
    {"Power (W)", "power_mw / 1000.0"},
    {"Energy (J)", "(energy_mj - min(energy_mj) OVER (PARTITION BY gpu_id)) / 1000.0"},
    {"SM clock (MHz)", "sm_clock_mhz"},
    {"Memory clock (MHz)", "memory_clock_mhz"},
    {"GPU utilization (%)", "gpu_util"},
    {"Memory utilization (%)", "memory_util"},
    {"Memory used (GB)", "memory_used_bytes / 1e9"},
    {"Temperature (C)", "temperature_c"},
};

int perfetto_nvml_counters(struct perfetto_writer *w)
{
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT gpu_id, ts_ns, v FROM (SELECT gpu_id, ts_ns, %s AS v FROM gpu_samples)"
                 " WHERE v IS NOT NULL ORDER BY gpu_id, ts_ns",
                 counters[i].value);
        if (perfetto_gpu_counter(w, counters[i].name, sql) < 0)
            return -EIO;
    }
    return 0;
}
