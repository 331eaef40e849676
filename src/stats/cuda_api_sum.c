/* cuda_api_sum: time spent in each CUDA runtime/driver API function on the CPU, like nsys's
 * report of the same name: Time %, Total, Num Calls, Avg, Med, Min, Max, StdDev, Name,
 * sorted by total time. */
#include "stats/cuda_query.h"

#define DURATION "(a.end_ns - a.start_ns)"

static const char cuda_api_sum_sql[] =
    "SELECT " STATS_DURATION_SQL(DURATION, "SELECT SUM(end_ns - start_ns) FROM cuda_api") ","
    " COALESCE((SELECT value FROM strings WHERE id = a.name_id), 'cbid ' || a.cbid) AS name"
    " FROM cuda_api a GROUP BY name ORDER BY 2 DESC, name";

static const struct table_column cuda_api_sum_columns[] = {
    STATS_DURATION_COLUMNS("Num Calls", "num_calls"),
    {"Name", "name", TABLE_TEXT},
};

int stats_cuda_api_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "cuda_api_sum", cuda_api_sum_columns,
                            sizeof cuda_api_sum_columns / sizeof *cuda_api_sum_columns,
                            cuda_api_sum_sql);
}
