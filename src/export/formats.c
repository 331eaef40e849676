/* The export formats, one row each (export.h): what `lantern export` parses, lists in its help
 * and names in its errors. A new format is its files and a row here. */
#include "export/export.h"

#include <string.h>

const struct export_format export_formats[] = {
    {"chrome", ".json", "trace-event JSON for https://ui.perfetto.dev and chrome://tracing",
     export_chrome},
    {"perfetto", ".perfetto-trace",
     "Perfetto's protobuf trace (TrackEvent): smaller, opened natively by ui.perfetto.dev and "
     "trace_processor",
     export_perfetto},
};
const size_t export_format_count = sizeof export_formats / sizeof export_formats[0];

const struct export_format *export_format_find(const char *name)
{
    for (size_t i = 0; i < export_format_count; i++)
        if (!strcmp(name, export_formats[i].name))
            return &export_formats[i];
    return NULL;
}
