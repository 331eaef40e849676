/* The CPU samples' part of the Perfetto trace: none yet. Samples (cpu_samples) are not
 * exported in this version; docs/cpu.md lists it with what is still to come (PerfSample with
 * interned callstacks, which the database's cpu_callsites already mirror). The row in
 * producers.c keeps the source's place in the table of sources. */
#include "export/producers.h"

int perfetto_cpu_samples(struct perfetto_writer *w);

int perfetto_cpu_samples(struct perfetto_writer *w)
{
    (void)w;
    return 0;
}
