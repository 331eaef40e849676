/* The importer's table of sources: one row per line of src/trace/sources.def, pointing at the
 * source's importer (import_source_<ID>, in import_<name>.c). The record loop dispatches by
 * the row's type range; the session opens, finishes and closes each in this order. */
#include "db/import_core.h"
#include "trace/format.h"

const struct import_source_row import_sources[IMPORT_SOURCES] = {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    {name, first, last, &import_source_##ID},
#include "trace/sources.def"
#undef SOURCE
};
