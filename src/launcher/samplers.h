/* The samplers the launcher runs itself, one for each source of src/trace/sources.def whose
 * `where` is "launcher": each is a row defined in the sampler's own file, listed in
 * run.c's table. They run in the launcher, never in the profiled program, and append
 * their records to launcher.lrt. */
#ifndef LANTERN_LAUNCHER_SAMPLERS_H
#define LANTERN_LAUNCHER_SAMPLERS_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/launcher.h"

struct launcher_sampler {
    const char *source; /* its name in sources.def */
    const char *what;   /* what goes unrecorded when it cannot start: "GPU power" */
    /* Starts sampling into fd (launcher.lrt, positioned at its end) with the options o.
     * Returns 0 with *state set, or a negative errno (-ENOMEM, -ENODEV nothing to sample,
     * -EIO, the failed call's) with why[] set after recording the same reason in the file;
     * *state may then still be set (it samples part of what was asked: some GPUs) and is
     * stopped as usual. */
    int (*start)(int fd, const struct launcher_options *o, void **state, char *why, size_t why_len);
    void (*stop)(void *state); /* stops and frees; writes what is buffered; NULL allowed */
};

extern const struct launcher_sampler launcher_sampler_nvml;        /* nvml_sampler.c */
extern const struct launcher_sampler launcher_sampler_gpu_metrics; /* gpu_metrics_sampler.c */
extern const struct launcher_sampler launcher_sampler_rapl;        /* rapl_sampler.c */

/* Writes a sampler's chunk (the builder's buffer, finished) to fd, whole, and begins the next
 * one at base_ts in the same buffer; nothing when it holds no record. A write that fails (a
 * full disk) loses the chunk: the profiled command goes on (launcher_file.c). */
struct trace_chunk_builder;
void launcher_flush_chunk(int fd, struct trace_chunk_builder *b, uint8_t *buffer, size_t size,
                          uint64_t base_ts);

/* The GPU metric sampler's child process: `lantern GPU_METRICS_CHILD_COMMAND ...`, run by
 * gpu_metrics_sampler.c only (gpu_metrics_child.c); main() hands it argv from the command's
 * name on. Returns the exit status. */
#define GPU_METRICS_CHILD_COMMAND "__gpu-metrics-sampler"
int gpu_metrics_child_main(int argc, char **argv);

/* The row for a source's name, or NULL (the source is not sampled by the launcher). */
const struct launcher_sampler *launcher_sampler_find(const char *source);

#endif
