/* The track producers of each export format (producers.h): one row per event source of
 * src/trace/sources.def, pointing at the function in that source's own file. The only place
 * the export names its sources; a new source adds a row to each table (and its files).
 * Rows run in order, and the order is the output's: each table lists the sources in
 * sources.def's order, except that the Perfetto trace's CUDA device-memory counter has always
 * come after the NVML counters, so it is a row of its own at the end. */
#include "export/producers.h"

int chrome_nvtx_events(struct chrome_writer *w);
int chrome_cuda_events(struct chrome_writer *w);
int chrome_nvml_events(struct chrome_writer *w);
int chrome_gpu_metrics_events(struct chrome_writer *w);
int chrome_cpu_events(struct chrome_writer *w);
int chrome_cpu_stack_frames(struct chrome_writer *w);
int chrome_cpu_gil_waits(struct chrome_writer *w);
int chrome_cpu_thread_states(struct chrome_writer *w);
int chrome_osrt_events(struct chrome_writer *w);
int chrome_rapl_events(struct chrome_writer *w);

const struct chrome_producer chrome_producers[] = {
    {EXPORT_SOURCE_NVTX, chrome_nvtx_events, NULL}, /* chrome_nvtx.c: ranges and marks */
    {EXPORT_SOURCE_CUDA, chrome_cuda_events, NULL}, /* chrome_cuda.c: GPU rows, API calls, flows */
    {EXPORT_SOURCE_NVML, chrome_nvml_events, NULL}, /* chrome_nvml.c: counters per GPU */
    {EXPORT_SOURCE_GPU_METRICS, chrome_gpu_metrics_events, NULL}, /* chrome_gpu_metrics.c */
    /* chrome_cpu.c: samples as instant events, their stacks in "stackFrames" */
    {EXPORT_SOURCE_CPU, chrome_cpu_events, chrome_cpu_stack_frames},
    {EXPORT_SOURCE_CPU, chrome_cpu_gil_waits, NULL}, /* chrome_cpu_gil.c: GIL waits on threads */
    {EXPORT_SOURCE_CPU, chrome_cpu_thread_states, NULL}, /* chrome_cpu_state.c: thread states */
    {EXPORT_SOURCE_OSRT, chrome_osrt_events, NULL}, /* chrome_osrt.c: calls on their thread */
    {EXPORT_SOURCE_RAPL, chrome_rapl_events, NULL}, /* chrome_rapl.c: counters per CPU package */
};
const size_t chrome_producer_count = sizeof chrome_producers / sizeof chrome_producers[0];

int perfetto_nvtx_events(struct perfetto_writer *w);
int perfetto_cuda_events(struct perfetto_writer *w);
int perfetto_nvml_counters(struct perfetto_writer *w);
int perfetto_gpu_metrics_counters(struct perfetto_writer *w);
int perfetto_cuda_memory_counter(struct perfetto_writer *w);
int perfetto_cpu_samples(struct perfetto_writer *w);
int perfetto_cpu_gil_waits(struct perfetto_writer *w);
int perfetto_cpu_thread_states(struct perfetto_writer *w);
int perfetto_osrt_events(struct perfetto_writer *w);
int perfetto_rapl_counters(struct perfetto_writer *w);

const struct perfetto_producer perfetto_producers[] = {
    {EXPORT_SOURCE_NVTX, perfetto_nvtx_events},         /* perfetto_nvtx.c */
    {EXPORT_SOURCE_CUDA, perfetto_cuda_events},         /* perfetto_cuda.c: API calls, GPU work */
    {EXPORT_SOURCE_NVML, perfetto_nvml_counters},       /* perfetto_nvml.c */
    {EXPORT_SOURCE_GPU_METRICS, perfetto_gpu_metrics_counters}, /* perfetto_gpu_metrics.c */
    {EXPORT_SOURCE_CUDA, perfetto_cuda_memory_counter}, /* perfetto_cuda.c */
    {EXPORT_SOURCE_CPU, perfetto_cpu_samples},          /* perfetto_cpu.c: PerfSample packets */
    {EXPORT_SOURCE_CPU, perfetto_cpu_gil_waits},        /* perfetto_cpu_gil.c: Python GIL tracks */
    {EXPORT_SOURCE_CPU, perfetto_cpu_thread_states},    /* perfetto_cpu_state.c: thread states */
    {EXPORT_SOURCE_OSRT, perfetto_osrt_events},         /* perfetto_osrt.c: OS runtime tracks */
    {EXPORT_SOURCE_RAPL, perfetto_rapl_counters},       /* perfetto_rapl.c: CPU package energy */
};
const size_t perfetto_producer_count = sizeof perfetto_producers / sizeof perfetto_producers[0];
