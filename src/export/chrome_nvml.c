/* The NVML part of the Chrome trace-event export: counter tracks per GPU (power instant and
 * averaged, energy since the first sample, clocks, utilization, memory used, temperature) on
 * the GPU's process row, so idle and loaded phases show beside the kernels that caused them. */
#include "export/chrome_writer.h"
#include "output/json.h"

#include <errno.h>

/* The GPU rows' pid, as the CUDA rows number them (gpu_samples.gpu_id is never NULL). */
#define NVML_GPU_PID CHROME_GPU_PID("s.gpu_id")

/* One row per counter event: pid, ts, track name, then up to two (key, value) series. */
static const char counters_sql[] =
    "SELECT " NVML_GPU_PID ", s.ts_ns, 'Power (W)', 'instant', s.power_mw / 1000.0,"
    "  'average', s.power_avg_mw / 1000.0 FROM gpu_samples s"
    "  WHERE s.power_mw IS NOT NULL OR s.power_avg_mw IS NOT NULL"
    " UNION ALL SELECT " NVML_GPU_PID ", s.ts_ns, 'Energy (J)', 'since start',"
    "  (s.energy_mj - MIN(s.energy_mj) OVER (PARTITION BY s.gpu_id)) / 1000.0, NULL, NULL"
    "  FROM gpu_samples s WHERE s.energy_mj IS NOT NULL"
    " UNION ALL SELECT " NVML_GPU_PID ", s.ts_ns, 'Clocks (MHz)', 'sm', s.sm_clock_mhz,"
    "  'memory', s.memory_clock_mhz FROM gpu_samples s WHERE s.sm_clock_mhz IS NOT NULL"
    " UNION ALL SELECT " NVML_GPU_PID ", s.ts_ns, 'Utilization (%)', 'gpu', s.gpu_util,"
    "  'memory', s.memory_util FROM gpu_samples s WHERE s.gpu_util IS NOT NULL"
    " UNION ALL SELECT " NVML_GPU_PID ", s.ts_ns, 'Memory used (GB)', 'used',"
    "  s.memory_used_bytes / 1e9, NULL, NULL FROM gpu_samples s"
    "  WHERE s.memory_used_bytes IS NOT NULL"
    " UNION ALL SELECT " NVML_GPU_PID ", s.ts_ns, 'Temperature (C)', 'gpu', s.temperature_c,"
    "  NULL, NULL FROM gpu_samples s WHERE s.temperature_c IS NOT NULL"
    " ORDER BY 1, 3, 2";

static const char names_sql[] =
    "SELECT " NVML_GPU_PID ", 'GPU ' || COALESCE(g.nvml_index, '?') || ': ' ||"
    " COALESCE(g.name, 'unknown GPU') FROM (SELECT DISTINCT gpu_id FROM gpu_samples) s"
    " LEFT JOIN gpus g ON g.id = s.gpu_id";

static void write_series(FILE *out, sqlite3_stmt *st, int key_col, int first)
{
    if (sqlite3_column_type(st, key_col) == SQLITE_NULL ||
        sqlite3_column_type(st, key_col + 1) == SQLITE_NULL)
        return;
    if (!first)
        fputs(", ", out);
    json_write_cstring(out, (const char *)sqlite3_column_text(st, key_col));
    fputs(": ", out);
    json_write_double(out, sqlite3_column_double(st, key_col + 1));
}

static void write_counter(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_event_begin(w);
    fputs("\"name\": ", w->out);
    json_write_cstring(w->out, (const char *)sqlite3_column_text(st, 2));
    fprintf(w->out,
            ", \"ph\": \"C\", \"pid\": %lld, \"ts\": ", (long long)sqlite3_column_int64(st, 0));
    chrome_write_us(w, sqlite3_column_int64(st, 1));
    fputs(", \"args\": {", w->out);
    int has_first =
        sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL;
    write_series(w->out, st, 3, 1);
    write_series(w->out, st, 5, !has_first);
    fputs("}}", w->out);
}

int chrome_nvml_events(struct chrome_writer *w)
{
    if (chrome_rows(w, names_sql, chrome_write_process_name) < 0)
        return -EIO;
    return chrome_rows(w, counters_sql, write_counter);
}
