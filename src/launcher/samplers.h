/* The samplers the launcher runs itself, one for each source of src/trace/sources.def whose
 * `where` is "launcher": each is a row defined in the sampler's own file, listed in
 * run.c's table. They run in the launcher, never in the profiled program, and append
 * their records to launcher.lrt (launcher_file_write). */
#ifndef LANTERN_LAUNCHER_SAMPLERS_H
#define LANTERN_LAUNCHER_SAMPLERS_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/launcher.h"

struct launcher_sampler {
    const char *source; /* its name in sources.def */
    const char *what;   /* what goes unrecorded when it cannot start: "GPU power" */
    /* Starts sampling into f (launcher.lrt) with the options o.
     * Returns 0 with *state set, or a negative errno (-ENOMEM, -ENODEV nothing to sample,
     * -EIO, the failed call's) with why[] set after recording the same reason in the file;
     * *state may then still be set (it samples part of what was asked: some GPUs) and is
     * stopped as usual. */
    int (*start)(struct launcher_file *f, const struct launcher_options *o, void **state, char *why,
                 size_t why_len);
    void (*stop)(void *state); /* stops and frees; writes what is buffered; NULL allowed */
};

extern const struct launcher_sampler launcher_sampler_nvml;        /* nvml_sampler.c */
extern const struct launcher_sampler launcher_sampler_gpu_metrics; /* gpu_metrics_sampler.c */
extern const struct launcher_sampler launcher_sampler_rapl;        /* rapl_sampler.c */

/* launcher.lrt (launcher_file.c): launcher_file_write writes a finished chunk whole, one at
 * a time whatever the thread; with --ring its definitions go to launcher.lrt and its events
 * to the current segment, renumbered. 0, or write's -errno: a write that fails (a full disk)
 * loses the chunk, the profiled command goes on. launcher_file_flush writes a sampler's chunk
 * (the builder's buffer, finished) and begins the next one at base_ts in the same buffer;
 * nothing when it holds no record. launcher_flush_chunk does the same into a plain fd (the
 * GPU metric sampler's child, into its pipe). */
struct trace_chunk_builder;
/* Takes fd, launcher.lrt just created (or any file open for writing, /dev/null for a bench),
 * and writes its file header; with ring_ns (--ring) its events go to segments in the folder
 * dir_fd (not taken). 0 with *out set, or write's -errno (errno set too; fd closed), -ENOMEM. */
int launcher_file_open(int fd, int dir_fd, uint64_t ring_ns, struct launcher_file **out);
/* Closes the files and frees f (NULL allowed): 0 or close's -errno. */
int launcher_file_close(struct launcher_file *f);
int launcher_file_write(struct launcher_file *f, uint8_t *chunk, size_t len);
void launcher_file_flush(struct launcher_file *f, struct trace_chunk_builder *b, uint8_t *buffer,
                         size_t size, uint64_t base_ts);
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
