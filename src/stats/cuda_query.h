/* The CUDA reports (one file each: cuda_api_sum.c, cuda_gpu_kern_sum.c, cuda_gpu_mem_time_sum.c,
 * cuda_gpu_mem_size_sum.c, cuda_gpu_trace.c, nvtx_kern_sum.c, nvtx_gpu_proj_sum.c), modelled
 * on Nsight Systems' stats reports of the same names (docs/reports.md), and the query runner
 * they share. */
#ifndef LANTERN_STATS_CUDA_QUERY_H
#define LANTERN_STATS_CUDA_QUERY_H

#include "stats/stats.h"

/* SQL fragments of the CUDA reports: GPU work comes from the gpu_ops view (src/db/schema.sql),
 * the one definition reports and exports share; these say how the reports group and print it. */

/* CTE ops(kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id, gpu_id): the GPU
 * operations of `view`, "gpu_ops" (all) or "kernel_ops" (kernels only; docs/schema.md). Starts
 * a WITH RECURSIVE clause; CUDA_SQL_OP_RANGES follows. A CTE used twice, so SQLite builds it
 * once. */
#define CUDA_SQL_OPS(view)                                                                         \
    "WITH RECURSIVE ops(kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id, gpu_id) AS ("  \
    " SELECT kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id, gpu_id FROM " view "),"

/* CTE op_ranges(start_ns, end_ns, name_id, gpu_id, range_id): each GPU operation (its times,
 * name and GPU) with every NVTX range it was launched inside, nested ones included (nsys's
 * "projection"). A range holds an operation when it was open on the launching thread as the
 * launching API call began:
 *  - push/pop ranges: the importer's innermost range (nvtx_range_id) and its parents;
 *  - start/end ranges: those started on the launching thread and open at the call's start.
 * Start/end ranges are few: each is set apart first (MATERIALIZED) and walks the API calls
 * of its thread and time span (index cuda_api_by_thread). The other way round, each launch
 * would scan every range its thread ever opened before it (minutes on a long run). */
#define CUDA_SQL_OP_RANGES                                                                         \
    " range_stack(start_ns, end_ns, name_id, gpu_id, range_id) AS ("                               \
    "  SELECT start_ns, end_ns, name_id, gpu_id, nvtx_range_id FROM ops"                           \
    "  WHERE nvtx_range_id IS NOT NULL"                                                            \
    "  UNION ALL SELECT st.start_ns, st.end_ns, st.name_id, st.gpu_id, r.parent_id"                \
    "  FROM range_stack st"                                                                        \
    "  JOIN ranges r ON r.id = st.range_id WHERE r.parent_id IS NOT NULL),"                        \
    " start_end_ranges AS MATERIALIZED (SELECT id, start_thread_id, start_ns, end_ns"              \
    "  FROM ranges WHERE style = 1),"                                                              \
    " op_ranges(start_ns, end_ns, name_id, gpu_id, range_id) AS ("                                 \
    "  SELECT * FROM range_stack"                                                                  \
    "  UNION ALL SELECT o.start_ns, o.end_ns, o.name_id, o.gpu_id, r.id FROM start_end_ranges r"   \
    "  CROSS JOIN cuda_api a ON a.thread_id = r.start_thread_id AND a.start_ns >= r.start_ns"      \
    "  AND (r.end_ns IS NULL OR a.start_ns < r.end_ns)"                                            \
    "  CROSS JOIN ops o ON o.api_id = a.id)"

/* Starts a WITH clause: CTE mem_ops(name, duration, bytes) of every copy and memset. */
#define CUDA_SQL_MEM_OPS                                                                           \
    "WITH mem_ops(name, duration, bytes) AS (SELECT name, end_ns - start_ns, bytes FROM gpu_ops"   \
    " WHERE kind <> 'kernel') "

/* Memory kinds as nsys prints them: 'pageable' -> 'Pageable'. */
#define CUDA_SQL_MEM_KIND(col) "(upper(substr(" col ", 1, 1)) || substr(" col ", 2))"

/* A range's label as nvtx_sum prints it (and nsys): "domain:name", ":name" in the default. */
#define CUDA_SQL_RANGE_NAME(r)                                                                     \
    "(COALESCE((SELECT s.value FROM domains d JOIN strings s ON s.id = d.name_id"                  \
    " WHERE d.id = " r ".domain_id), '') || ':' ||"                                                \
    " COALESCE((SELECT value FROM strings WHERE id = " r ".name_id), '(unnamed)'))"

#define CUDA_SQL_RANGE_STYLE(r) "(CASE " r ".style WHEN 0 THEN 'PushPop' ELSE 'StartEnd' END)"

/* The session's start (meta.start_ns), the origin of the times reports print. */
#define CUDA_SQL_SESSION_START                                                                     \
    "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_ns'), 0)"

/* nsys's device column: "NVIDIA H100 80GB HBM3 (0)", the CUDA ordinal in parentheses. */
#define CUDA_SQL_DEVICE_NAME(o)                                                                    \
    "COALESCE((SELECT name FROM gpus WHERE id = " o ".gpu_id), 'GPU') || ' (' || "                 \
    "COALESCE(" o ".device, '?') || ')'"

int stats_cuda_api_sum(struct stats_ctx *ctx);
int stats_cuda_gpu_kern_sum(struct stats_ctx *ctx);
int stats_cuda_gpu_mem_time_sum(struct stats_ctx *ctx);
int stats_cuda_gpu_mem_size_sum(struct stats_ctx *ctx);
int stats_cuda_gpu_trace(struct stats_ctx *ctx);
int stats_nvtx_kern_sum(struct stats_ctx *ctx);
int stats_nvtx_gpu_proj_sum(struct stats_ctx *ctx);

/* Runs sql on ctx->db and prints every row through table.h as report `name`: result column i
 * is printed as cols[i] says (a NULL value prints an empty cell). Registers the median and
 * stddev aggregates (aggregates.h) first. Returns 0, or -EIO/-ENOMEM with
 * ctx->error set. */
int stats_cuda_query(struct stats_ctx *ctx, const char *name, const struct table_column *cols,
                     int ncols, const char *sql);

#endif
