/* What a session lost, said the same way by every report header (stats, analyze, kernels,
 * the HTML page) and both exports: the events the agents dropped (a full buffer, a full disk,
 * a failed write: processes.dropped_events and threads.dropped_events) and the processes whose
 * raw file has no end (processes.end_record = 0: killed before the agent could write it, or
 * still running when imported), whose events after their last write are missing, in a number
 * no one can know; of those, the ones the launcher saw end (processes.exit_status,
 * exit_signal) are said to have ended, and how; and what the importer skipped or had to put
 * right (import_losses: malformed records, duplicated or misordered chunks). docs/schema.md
 * describes the columns. */
#ifndef LANTERN_MODEL_SESSION_LOSSES_H
#define LANTERN_MODEL_SESSION_LOSSES_H

#include <sqlite3.h>
#include <stdint.h>

/* The shared line, malloc'd (NULL when out of memory): "none", or what was lost and where:
 *   "12 events dropped (pid 1234 train.py: 12, tid 1240 worker); 1 process did not end:
 *    pid 99 daemon (no end record: killed, or still running when imported; events after
 *    its last write missing: unknown); 1 process ended without its end record (events after
 *    the last write missing: unknown): pid 98 worker (ended by SIGKILL)"
 * At most a few processes and threads are named, then "and N more". */
char *session_losses_line(sqlite3 *db);

/* The number of processes whose raw file has no end record. */
int64_t session_losses_unfinished(sqlite3 *db);

/* One process's losses, for its track in an export (malloc'd; NULL when it lost nothing):
 * "12 events dropped; did not end (...)", "exited with code 5 without its end record (...)",
 * then its import_losses ("; 2 duplicated chunks skipped (...)"). */
char *session_losses_process(sqlite3 *db, int64_t process_id);

#endif
