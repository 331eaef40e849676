/* What recorded the GPU hardware metrics of a session, per GPU, in the words every report
 * header and the HTML page use: "GPU 0 NVIDIA H200: CUPTI PM sampling, 10 kHz, 15 metrics",
 * or why there are none or some are missing (gpu_metric_status). */
#ifndef LANTERN_MODEL_GPU_METRICS_SOURCES_H
#define LANTERN_MODEL_GPU_METRICS_SOURCES_H

#include <sqlite3.h>

/* The number a GPU is shown with, an SQL expression over a gpus row named g: NVML's index,
 * else the lowest CUDA ordinal a process gave it; NULL when neither. The lines below,
 * gpu_metrics_sum's GPU column and the HTML page's GPU metrics headings all number GPUs so. */
#define GPU_METRICS_SQL_GPU_INDEX                                                                  \
    "COALESCE(g.nvml_index, (SELECT min(device) FROM process_gpus p WHERE p.gpu_id = g.id))"

/* The lines, each ended by '\n' (malloc'd), or NULL when the session did not ask for GPU
 * metrics (no set, no status, and "gpu_metrics" not in meta.trace) or out of memory. One line
 * per GPU with metrics or a status, then one per status that names no GPU:
 *   "GPU 0 NVIDIA H200: CUPTI PM sampling, 10 kHz, 15 metrics; 7 samples lost (buffer full)"
 *   "GPU 1 NVIDIA H100: not recorded: not permitted: profiling needs admin rights"
 *   "every GPU: unavailable: no CUPTI PM sampling or NVML GPM on this driver" */
char *gpu_metrics_sources_lines(sqlite3 *db);

#endif
