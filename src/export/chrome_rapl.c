/* The RAPL part of the Chrome trace-event export: one counter track per CPU package, on a row
 * of its own ("CPU package N"), with the package's (and DRAM's) energy since the first read,
 * so that CPU-bound phases show beside the GPU's power. */
#include "export/chrome_writer.h"
#include "output/json.h"

#include <errno.h>

/* CPU package rows need pids no OS pid and no GPU row can take (chrome_writer.h). */
#define RAPL_PACKAGE_PID "(1100000000 + s.package)"

/* pid, ts, package J, DRAM J (NULL: no DRAM zone); none from a database without the table. */
static const char counters_sql[] =
    "SELECT " RAPL_PACKAGE_PID ", s.ts_ns, s.energy_uj / 1e6, s.dram_energy_uj / 1e6"
    " FROM cpu_energy_samples s ORDER BY s.package, s.ts_ns";

static const char names_sql[] = "SELECT DISTINCT " RAPL_PACKAGE_PID ", 'CPU package ' || s.package"
                                " FROM cpu_energy_samples s ORDER BY 1";

static void write_counter(struct chrome_writer *w, sqlite3_stmt *st)
{
    chrome_event_begin(w);
    fprintf(w->out, "\"name\": \"CPU energy (J)\", \"ph\": \"C\", \"pid\": %lld, \"ts\": ",
            (long long)sqlite3_column_int64(st, 0));
    chrome_write_us(w, sqlite3_column_int64(st, 1));
    fputs(", \"args\": {\"package\": ", w->out);
    json_write_double(w->out, sqlite3_column_double(st, 2));
    if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
        fputs(", \"dram\": ", w->out);
        json_write_double(w->out, sqlite3_column_double(st, 3));
    }
    fputs("}}", w->out);
}

int chrome_rapl_events(struct chrome_writer *w)
{
    int rc = chrome_rows(w, names_sql, chrome_write_process_name);
    if (rc == 0)
        rc = chrome_rows(w, counters_sql, write_counter);
    return rc == -ENOENT ? 0 : rc; /* a database from before RAPL was recorded */
}
