/* The export's track producers: each format keeps a table (producers.c) whose rows name an
 * event source of src/trace/sources.def and the function, in that source's own file
 * (chrome_<source>.c, perfetto_<source>.c), that writes the source's tracks. A format's core
 * (chrome.c, perfetto.c) walks its table in order and names no source. */
#ifndef LANTERN_EXPORT_PRODUCERS_H
#define LANTERN_EXPORT_PRODUCERS_H

#include <stddef.h>

#include "trace/format.h"

/* The event sources, numbered in sources.def's order. */
enum export_source {
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    EXPORT_SOURCE_##ID,
#include "trace/sources.def"
#undef SOURCE
    EXPORT_SOURCE_COUNT
};

struct chrome_writer;
struct perfetto_writer;

/* A row: the source, and its producer, which returns 0 or -EIO (the database's error message
 * says why). Rows run in table order, which is the order of the output. */
struct chrome_producer {
    enum export_source source;
    int (*produce)(struct chrome_writer *w);
    /* top-level sections after "traceEvents" (each written as `, "key": value`), or NULL */
    int (*sections)(struct chrome_writer *w);
};
struct perfetto_producer {
    enum export_source source;
    int (*produce)(struct perfetto_writer *w);
};

extern const struct chrome_producer chrome_producers[];
extern const size_t chrome_producer_count;
extern const struct perfetto_producer perfetto_producers[];
extern const size_t perfetto_producer_count;

#endif
