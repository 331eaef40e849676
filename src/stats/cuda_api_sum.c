/* cuda_api_sum: time spent in each CUDA runtime/driver API function on the CPU, like nsys's
 * report of the same name: Time %, Total, Num Calls, Avg, Med, Min, Max, StdDev, Name,
 * sorted by total time. */
#include "stats/cuda_query.h"

#define DURATION "(a.end_ns - a.start_ns)"

static const char cuda_api_sum_sql[] =
    "SELECT 100.0 * SUM(" DURATION ") / (SELECT SUM(end_ns - start_ns) FROM cuda_api),"
    " SUM(" DURATION "), COUNT(*), AVG(" DURATION "), lantern_median(" DURATION "),"
    " MIN(" DURATION "), MAX(" DURATION "), lantern_stddev(" DURATION "),"
    " COALESCE((SELECT value FROM strings WHERE id = a.name_id), 'cbid ' || a.cbid) AS name"
    " FROM cuda_api a GROUP BY name ORDER BY 2 DESC, name";

static const struct table_column cuda_api_sum_columns[] = {
    {"Time", "time_percent", TABLE_PERCENT},
    {"Total Time", "total_ns", TABLE_NS},
    {"Num Calls", "num_calls", TABLE_INT},
    {"Avg", "avg_ns", TABLE_NS},
    {"Med", "med_ns", TABLE_NS},
    {"Min", "min_ns", TABLE_NS},
    {"Max", "max_ns", TABLE_NS},
    {"StdDev", "stddev_ns", TABLE_NS},
    {"Name", "name", TABLE_TEXT},
};

int stats_cuda_api_sum(struct stats_ctx *ctx)
{
    return stats_cuda_query(ctx, "cuda_api_sum", cuda_api_sum_columns,
                            sizeof cuda_api_sum_columns / sizeof *cuda_api_sum_columns,
                            cuda_api_sum_sql);
}
