/* The rank from the job launcher's variables (rank.h). */
#include "trace/rank.h"

#include <stdlib.h>

const char *const trace_rank_variables[] = {"RANK",      "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                            "PMIX_RANK", "SLURM_PROCID",         NULL};
const char *const trace_local_rank_variables[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                  "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};

long long trace_env_rank(const char *const *vars, const char **which)
{
    for (; *vars; vars++) {
        const char *v = getenv(*vars);
        char *end;
        if (!v || !*v)
            continue;
        long long n = strtoll(v, &end, 10);
        if (*end == '\0' && n >= 0) {
            *which = *vars;
            return n;
        }
    }
    return -1;
}
