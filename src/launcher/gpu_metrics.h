/* Between the launcher's GPU metric sampler (gpu_metrics_sampler.c, its row of samplers.h),
 * the sampler child process it runs per GPU (gpu_metrics_child.c) and the two backends, one
 * per TRACE_GPU_METRICS_* source: CUPTI PM sampling (gpu_metrics_pm.c) and NVML GPM
 * (gpu_metrics_gpm.c). A backend samples one GPU on a thread of its own in the child and hands
 * its records to the sink (gpu_metrics_sink.c, with that thread: what the backends look down
 * to), which sends them in chunks to the launcher, which writes them into
 * launcher.lrt. Never in the profiled program: no context, no GPU memory, no thread of the
 * program's, and one sampler per GPU however many processes use it; and never in the launcher
 * itself: a vendor library's crash or hang costs only that GPU's metrics. */
#ifndef LANTERN_LAUNCHER_GPU_METRICS_H
#define LANTERN_LAUNCHER_GPU_METRICS_H

#include "trace/records.h"

#include <pthread.h>

#include <stddef.h>
#include <stdint.h>

struct nvml;
struct nvml_gpu;

/* The sampler child's descriptors (gpu_metrics_child.c): the pipe its records go down, in
 * whole chunks of at most GPU_METRICS_CHUNK_MAX bytes, and its control socket (one line
 * each way: "started SOURCE", "failed WHY", "crash SIGNO LIBRARY"; the launcher shuts its
 * end to stop it). */
#define GPU_METRICS_CHILD_RECORDS_FD 3
#define GPU_METRICS_CHILD_CONTROL_FD 4
#define GPU_METRICS_CHUNK_MAX (1u << 20)

/* The records' way out (gpu_metrics_sink.c), in whole chunks down fd; every function is safe
 * from any thread. The child opens it (NULL: out of memory), sends what it holds every few ms
 * (tick: only when it holds records; flush: always, starting a new chunk) and closes it. */
struct gpu_metrics_sink;
struct gpu_metrics_sink *gpu_metrics_sink_open(int fd);
void gpu_metrics_sink_tick(struct gpu_metrics_sink *s);
void gpu_metrics_sink_flush(struct gpu_metrics_sink *s);
void gpu_metrics_sink_close(struct gpu_metrics_sink *s);
void gpu_metrics_put_set(struct gpu_metrics_sink *s, const struct trace_gpu_metric_set *r);
void gpu_metrics_put_sample(struct gpu_metrics_sink *s, const struct trace_gpu_metric_sample *r);
void gpu_metrics_put_sampler(struct gpu_metrics_sink *s, const struct trace_gpu_metric_sampler *r);
void gpu_metrics_put_status(struct gpu_metrics_sink *s, const char *uuid, unsigned int source,
                            unsigned int code, uint64_t count, const char *reason);

/* One GPU to sample, and how. */
struct gpu_metrics_target {
    int cuda_index;             /* in the launcher's CUDA numbering (the program's) */
    const char *uuid, *name;    /* GPU-xxxxxxxx-..., as NVML gives them */
    struct nvml *nvml;          /* loaded; GPM reads through it */
    const struct nvml_gpu *gpu; /* the GPU in nvml */
    uint32_t mask;              /* the metrics asked for: bits of gpu_metrics.def */
    uint64_t period_ns;         /* the sampling period asked for */
    uint64_t set_id;            /* the TRACE_GPU_METRIC_SET id the backend writes */
    struct gpu_metrics_sink *sink;
};

/* Samples kept between decodes or reads: a sampler's thread evaluates and writes them, so
 * memory stays bounded whatever the run's length. */
struct gpu_metrics_backend {
    const char *name;    /* "CUPTI PM sampling" */
    const char *option;  /* its --gpu-metrics-source name: "pm" */
    unsigned int source; /* TRACE_GPU_METRICS_* */
    /* Starts sampling t (copied) on a thread of its own, and returns once samples are being
     * taken: a handle, or NULL with *code (TRACE_GPU_METRICS_UNAVAILABLE, _NOT_PERMITTED,
     * _BUSY, _FAILED) and why[] set in one line. Writes the set record. */
    void *(*start)(const struct gpu_metrics_target *t, unsigned int *code, char *why,
                   size_t why_len);
    /* Stops sampling, writes the last samples and the footprint, frees the handle. */
    void (*stop)(void *handle);
};

extern const struct gpu_metrics_backend gpu_metrics_pm_backend;  /* gpu_metrics_pm.c */
extern const struct gpu_metrics_backend gpu_metrics_gpm_backend; /* gpu_metrics_gpm.c */

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the closest of a few paired reads (the GPU's
 * and the driver's stamps are on CLOCK_REALTIME; Lantern's times on CLOCK_MONOTONIC). */
int64_t gpu_metrics_realtime_offset(void);

/* LANTERN_TEST_SAMPLER_FAULT (gpu_metrics_sink.c): read once in the child; a fault asked for
 * before any sample (N = 0) strikes at gpu_metrics_fault_at_start, the others at a put. */
void gpu_metrics_faults_init(void);
void gpu_metrics_fault_at_start(void);

/* The thread of one GPU's backend (gpu_metrics_sink.c): it sleeps until a time or the
 * stop, and counts what it wrote for the footprint record. */
struct gpu_metrics_thread {
    pthread_t thread;
    int started, stop; /* stop: under lock */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t samples, lost, first_start, last_end; /* the samples written */
    uint64_t reads, read_ns;                       /* decode calls or GPM reads, their time */
};
void gpu_metrics_thread_init(struct gpu_metrics_thread *th);
/* Runs fn(arg) on the thread; 0 or pthread_create's error, negated. */
int gpu_metrics_thread_start(struct gpu_metrics_thread *th, void *(*fn)(void *), void *arg);
/* Sleeps until CLOCK_MONOTONIC ns `until` or the stop; 1 when stopped. */
int gpu_metrics_thread_sleep(struct gpu_metrics_thread *th, uint64_t until);
/* Asks the thread to stop and waits for its end; then frees its lock. */
void gpu_metrics_thread_stop(struct gpu_metrics_thread *th);
/* Counts a sample [start, end) written, and the whole periods missing before it. */
void gpu_metrics_thread_count(struct gpu_metrics_thread *th, uint64_t start, uint64_t end,
                              uint64_t period_ns);
/* On the thread, at its end: a "lost" status line when samples were (lost_reason), and the
 * footprint record. */
void gpu_metrics_thread_finish(struct gpu_metrics_thread *th, const struct gpu_metrics_target *t,
                               unsigned int source, const char *lost_reason);

#endif
