/* SQL fragments shared by the CUDA reports (cuda_*.c, nvtx_kern_sum.c, nvtx_gpu_proj_sum.c):
 * one definition of "a GPU operation", of nsys's operation names, and of which NVTX ranges a
 * GPU operation was launched inside, so every report agrees. */
#ifndef LANTERN_REPORT_CUDA_SQL_H
#define LANTERN_REPORT_CUDA_SQL_H

/* nsys's name for a copy kind: "[CUDA memcpy Host-to-Device]". */
#define CUDA_SQL_COPY_NAME(kind)                                                                   \
    "'[CUDA memcpy ' || CASE " kind " WHEN 'HtoD' THEN 'Host-to-Device'"                           \
    " WHEN 'DtoH' THEN 'Device-to-Host' WHEN 'DtoD' THEN 'Device-to-Device'"                       \
    " WHEN 'HtoH' THEN 'Host-to-Host' WHEN 'PtoP' THEN 'Peer-to-Peer'"                             \
    " WHEN 'HtoA' THEN 'Host-to-Array' WHEN 'AtoH' THEN 'Array-to-Host'"                           \
    " WHEN 'AtoA' THEN 'Array-to-Array' WHEN 'AtoD' THEN 'Array-to-Device'"                        \
    " WHEN 'DtoA' THEN 'Device-to-Array' ELSE COALESCE(" kind ", 'Unknown') END || ']'"

/* A kernel's name as reports show it: demangled when the importer has it. */
#define CUDA_SQL_KERNEL_NAME(k)                                                                    \
    "COALESCE((SELECT value FROM strings WHERE id = " k ".demangled_id),"                          \
    " (SELECT value FROM strings WHERE id = " k ".name_id), '(unnamed kernel)')"

/* Memory kinds as nsys prints them: 'pageable' -> 'Pageable'. */
#define CUDA_SQL_MEM_KIND(col) "(upper(substr(" col ", 1, 1)) || substr(" col ", 2))"

/* CTE gpu_ops(kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id): every GPU
 * operation (kernels, copies, memsets); name_id is the kernel's demangled name when known,
 * else its mangled one (NULL for copies and memsets). Starts a WITH RECURSIVE clause;
 * CUDA_SQL_OP_RANGES follows. */
#define CUDA_SQL_GPU_OPS_ALL                                                                       \
    "WITH RECURSIVE gpu_ops(kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id) AS ("      \
    " SELECT 'kernel', id, start_ns, end_ns, nvtx_range_id, api_id,"                               \
    " COALESCE(demangled_id, name_id) FROM kernels"                                                \
    " UNION ALL SELECT 'memcpy', id, start_ns, end_ns, nvtx_range_id, api_id, NULL"                \
    " FROM memcpys"                                                                                \
    " UNION ALL SELECT 'memset', id, start_ns, end_ns, nvtx_range_id, api_id, NULL"                \
    " FROM memsets),"

/* The same CTE holding kernels only. */
#define CUDA_SQL_GPU_OPS_KERNELS                                                                   \
    "WITH RECURSIVE gpu_ops(kind, id, start_ns, end_ns, nvtx_range_id, api_id, name_id) AS ("      \
    " SELECT 'kernel', id, start_ns, end_ns, nvtx_range_id, api_id,"                               \
    " COALESCE(demangled_id, name_id) FROM kernels),"

/* CTE op_ranges(start_ns, end_ns, name_id, range_id): each GPU operation (its times and
 * name) with every NVTX range it was launched inside, nested ones included (nsys's
 * "projection"). A range holds an operation when it was open on the launching thread as the
 * launching API call began:
 *  - push/pop ranges: the importer's innermost range (nvtx_range_id) and its parents;
 *  - start/end ranges: those started on the launching thread and open at the call's start.
 * Start/end ranges are few: each is set apart first (MATERIALIZED) and walks the API calls
 * of its thread and time span (index cuda_api_by_thread). The other way round, each launch
 * would scan every range its thread ever opened before it (minutes on a long run). */
#define CUDA_SQL_OP_RANGES                                                                         \
    " range_stack(start_ns, end_ns, name_id, range_id) AS ("                                       \
    "  SELECT start_ns, end_ns, name_id, nvtx_range_id FROM gpu_ops"                               \
    "  WHERE nvtx_range_id IS NOT NULL"                                                            \
    "  UNION ALL SELECT st.start_ns, st.end_ns, st.name_id, r.parent_id FROM range_stack st"       \
    "  JOIN ranges r ON r.id = st.range_id WHERE r.parent_id IS NOT NULL),"                        \
    " start_end_ranges AS MATERIALIZED (SELECT id, start_thread_id, start_ns, end_ns"              \
    "  FROM ranges WHERE style = 1),"                                                              \
    " op_ranges(start_ns, end_ns, name_id, range_id) AS ("                                         \
    "  SELECT * FROM range_stack"                                                                  \
    "  UNION ALL SELECT o.start_ns, o.end_ns, o.name_id, r.id FROM start_end_ranges r"             \
    "  CROSS JOIN cuda_api a ON a.thread_id = r.start_thread_id AND a.start_ns >= r.start_ns"      \
    "  AND (r.end_ns IS NULL OR a.start_ns < r.end_ns)"                                            \
    "  CROSS JOIN gpu_ops o ON o.api_id = a.id)"

/* A range's label as nvtx_sum prints it (and nsys): "domain:name", ":name" in the default. */
#define CUDA_SQL_RANGE_NAME(r)                                                                     \
    "(COALESCE((SELECT s.value FROM domains d JOIN strings s ON s.id = d.name_id"                  \
    " WHERE d.id = " r ".domain_id), '') || ':' ||"                                                \
    " COALESCE((SELECT value FROM strings WHERE id = " r ".name_id), '(unnamed)'))"

#define CUDA_SQL_RANGE_STYLE(r) "(CASE " r ".style WHEN 0 THEN 'PushPop' ELSE 'StartEnd' END)"

/* Starts a WITH clause: CTE mem_ops(name, duration, bytes) of every copy and memset. */
#define CUDA_SQL_MEM_OPS                                                                           \
    "WITH mem_ops(name, duration, bytes) AS ("                                                     \
    " SELECT " CUDA_SQL_COPY_NAME(                                                                 \
        "copy_kind") ", end_ns - start_ns, bytes FROM memcpys"                                     \
                     " UNION ALL SELECT '[CUDA memset]', end_ns - start_ns, bytes FROM memsets) "

/* The session's start (meta.start_ns), the origin of the times reports print. */
#define CUDA_SQL_SESSION_START                                                                     \
    "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_ns'), 0)"

/* nsys's device column: "NVIDIA H100 80GB HBM3 (0)", the CUDA ordinal in parentheses. */
#define CUDA_SQL_DEVICE_NAME(o)                                                                    \
    "COALESCE((SELECT name FROM gpus WHERE id = " o ".gpu_id), 'GPU') || ' (' || "                 \
    "COALESCE(" o ".device, '?') || ')'"

#endif
