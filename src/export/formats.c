/* The export formats, one row each (export.h): what `lantern export` parses, lists in its help
 * and names in its errors. A new format is its files and a row here. */
#include "export/export.h"

static int write_chrome(sqlite3 *db, FILE *out, struct export_stats *stats, char *error,
                        size_t error_size)
{
    (void)stats; /* nothing is left out, and the CLI counts no events */
    return export_chrome(db, out, error, error_size);
}

const struct export_format export_formats[] = {
    {"chrome", ".json", "trace-event JSON for https://ui.perfetto.dev and chrome://tracing",
     write_chrome},
    {"perfetto", ".perfetto-trace",
     "Perfetto's protobuf trace (TrackEvent): smaller, opened natively by ui.perfetto.dev and "
     "trace_processor",
     export_perfetto},
};
const size_t export_format_count = sizeof export_formats / sizeof export_formats[0];
