/* The CPU samples' part of the Chrome trace: none yet. Samples (cpu_samples) are not exported
 * in this version; docs/cpu.md lists it with what is still to come (instant events with their
 * stacks). The row in producers.c keeps the source's place in the table of sources. */
#include "export/producers.h"

int chrome_cpu_events(struct chrome_writer *w);

int chrome_cpu_events(struct chrome_writer *w)
{
    (void)w;
    return 0;
}
