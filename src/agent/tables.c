/* The agent's tables that grow with what the program gives it (NVTX registered strings,
 * category names, domains, payload schemas) each have a cap, so that a program making a new
 * name every step cannot grow the agent's memory without bound: what a full table does not
 * keep is counted here, and the writer writes the counts as TRACE_TABLE_CUT records at its
 * drains (the importer shows them in the "Lost events" line). docs/trace-format.md. */
#include "agent/agent.h"
#include "trace/format.h"
#include "trace/records.h"

#define AGENT_TABLES 7 /* TRACE_TABLE_* are 1..6 */

static _Atomic uint64_t agent_cuts[AGENT_TABLES];
static uint64_t agent_cuts_written[AGENT_TABLES]; /* the writer's (lock held) */

void agent_table_cut(unsigned table)
{
    if (table < AGENT_TABLES)
        __atomic_fetch_add(&agent_cuts[table], 1, __ATOMIC_RELAXED);
}

void agent_tables_put_cuts_locked(struct trace_chunk_builder *b)
{
    for (unsigned t = 1; t < AGENT_TABLES; t++) {
        uint64_t n = __atomic_load_n(&agent_cuts[t], __ATOMIC_RELAXED);
        struct trace_table_cut r = {.table = t, .count = n - agent_cuts_written[t]};
        if (r.count && trace_put_table_cut(b, &r) == 0)
            agent_cuts_written[t] = n;
    }
}
