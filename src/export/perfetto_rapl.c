/* The RAPL part of the Perfetto export: per CPU package, a top-level counter track of the
 * package's energy since the first read ("CPU package N energy (J)"), and one of its DRAM's
 * where it has a DRAM zone. */
#include "export/perfetto_writer.h"

#include <stdio.h>

/* package, ts, J, zone (0 package, 1 DRAM), in track then time order; none from a database
 * without the table. */
static const char samples_sql[] =
    "SELECT package, ts_ns, energy_uj / 1e6, 0 FROM cpu_energy_samples"
    " UNION ALL SELECT package, ts_ns, dram_energy_uj / 1e6, 1 FROM cpu_energy_samples"
    "  WHERE dram_energy_uj IS NOT NULL ORDER BY 1, 4, 2";

int perfetto_rapl_counters(struct perfetto_writer *w)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, samples_sql, -1, &st, NULL) != SQLITE_OK)
        return 0; /* a database from before RAPL was recorded */
    uint64_t last_track = 0;
    while (sqlite3_step(st) == SQLITE_ROW && !w->write_failed) {
        int64_t package = sqlite3_column_int64(st, 0), zone = sqlite3_column_int64(st, 3);
        uint64_t track = PERFETTO_RAPL_TRACK(package, zone);
        if (track != last_track) {
            char name[64];
            snprintf(name, sizeof name, "CPU package %lld %senergy (J)", (long long)package,
                     zone ? "DRAM " : "");
            perfetto_track(w, track, 0, name, NULL, NULL, 1);
            perfetto_run_begin(w, track);
            last_track = track;
        }
        perfetto_event_begin(w, PF_TYPE_COUNTER, track);
        pb_double(&w->event, PF_EVENT_DOUBLE_COUNTER_VALUE, sqlite3_column_double(st, 2));
        perfetto_event_end(w, (uint64_t)sqlite3_column_int64(st, 1));
    }
    return sqlite3_finalize(st) == SQLITE_OK ? 0 : -1;
}
