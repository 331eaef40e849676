/* cuda_gpu_kern_sum: GPU time of each CUDA kernel, like nsys's report of the same name:
 * Time %, Total, Instances, Avg, Med, Min, Max, StdDev, Name (demangled when known),
 * sorted by total time. */
#include "stats/cuda_query.h"

#define DURATION "(k.end_ns - k.start_ns)"

// clang-format off
/* Grouped by kernel_ops' name, but sorted on a small key: each distinct (demangled_id, name_id)
 * pair of kernels (a few hundred) gets the name kernel_ops gives it and the rank of that name
 * among them (equal names, equal keys), so the GROUP BY sorts millions of (key, start, end)
 * instead of rows carrying long demangled names, and each group's name is looked up once; the
 * groups and their rows are those of GROUP BY name (docs/benchmarks.md: 2x faster on 10 M). */
static const char cuda_gpu_kern_sum_sql[] =
    "WITH names AS (SELECT p.demangled_id, p.name_id,"
    "  COALESCE(dn.value, mn.value, '(unnamed kernel)') AS name FROM"
    "  (SELECT DISTINCT demangled_id, name_id FROM kernels) p"
    "  LEFT JOIN strings dn ON dn.id = p.demangled_id LEFT JOIN strings mn ON mn.id = p.name_id),"
    " keyed AS (SELECT *, dense_rank() OVER (ORDER BY name) AS key FROM names),"
    " sums AS (SELECT n.key,"
    "  100.0 * SUM(" DURATION ") / (SELECT SUM(end_ns - start_ns) FROM kernels) AS percent,"
    "  SUM(" DURATION ") AS total, COUNT(*) AS instances, AVG(" DURATION ") AS average,"
    "  lantern_median(" DURATION ") AS median, MIN(" DURATION ") AS shortest,"
    "  MAX(" DURATION ") AS longest, lantern_stddev(" DURATION ") AS stddev"
    "  FROM kernels k CROSS JOIN keyed n ON n.demangled_id IS k.demangled_id"
    "  AND n.name_id IS k.name_id GROUP BY n.key)"
    " SELECT percent, total, instances, average, median, shortest, longest, stddev,"
    " (SELECT name FROM keyed WHERE key = s.key LIMIT 1) AS name FROM sums s"
    " ORDER BY total DESC, name";
// clang-format on

static const struct table_column cuda_gpu_kern_sum_columns[] = {
    STATS_DURATION_COLUMNS("Instances", "instances"),
    {"Name", "name", TABLE_TEXT},
};

int stats_cuda_gpu_kern_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "cuda_gpu_kern_sum", cuda_gpu_kern_sum_columns,
                            sizeof cuda_gpu_kern_sum_columns / sizeof *cuda_gpu_kern_sum_columns,
                            cuda_gpu_kern_sum_sql);
}
