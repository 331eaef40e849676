/* A process's rank in its job, from the variables job launchers set (torchrun, Open MPI, MPICH's
 * PMI, PMIx, Slurm), read the same way wherever it is needed: the agent records it in
 * TRACE_PROCESS_INFO (src/agent/writer.c), the launcher names `-o run-%r.db` with it
 * (src/launcher/output_name.c). No allocation: the agent reads it inside the profiled program. */
#ifndef LANTERN_TRACE_RANK_H
#define LANTERN_TRACE_RANK_H

/* The variables that hold the rank in the job, then those that hold the rank on the node, in
 * the order they are read; NULL-terminated. */
extern const char *const trace_rank_variables[];
extern const char *const trace_local_rank_variables[];

/* The first of vars whose value is a whole number >= 0, with *which its name; -1 (and *which
 * untouched) when none is. */
long long trace_env_rank(const char *const *vars, const char **which);

#endif
