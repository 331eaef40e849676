/* Thread names beyond a thread's own ring (src/agent/names.c): OS names of threads CUPTI
 * reports by tid, and Python thread names handed over by the Python bootstrap. The writer
 * calls these with its lock held, handing over where to write (struct names_out). */
#ifndef LANTERN_AGENT_NAMES_H
#define LANTERN_AGENT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "agent/ring.h"
#include "trace/codec.h"

/* Where the names go: the writer's chunk and string table (its lock held). names.c writes
 * TRACE_THREAD_OS_NAME and TRACE_THREAD_PYTHON_NAME through it and knows nothing else of the
 * writer. */
struct names_out {
    struct trace_chunk_builder *chunk;
    uint64_t (*intern)(const char *s, size_t len); /* string id; may write TRACE_STRING */
    int (*reserve)(size_t bytes);                  /* room for a record */
};

/* /proc/self/task/<tid>/comm without its newline into out; its length, 0 if none. */
size_t names_read_comm(uint32_t tid, char out[RING_THREAD_NAME_BYTES]);
/* Emits TRACE_THREAD_OS_NAME for tid if name differs from `written`, then remembers it. */
void names_put_os_name(const struct names_out *out, uint32_t tid, const char *name,
                       char written[RING_THREAD_NAME_BYTES]);
/* A tid seen in a CUPTI record: its OS name is read and written the first time. */
void names_note_tid_locked(const struct names_out *out, uint32_t tid);
/* Writes the process's Python name if one is waiting (TRACE_PROCESS_PYTHON_NAME). */
void names_put_process_locked(const struct names_out *out);
/* Writes waiting Python names; with final set, re-reads the OS names of the noted tids. */
void names_drain_locked(const struct names_out *out, int final);
void names_fork_child(void);
/* How the process's Python name is written at once, durably (a fork child that ends by _exit
 * has no other drain): the writer hands its writer_put_names when it starts, so that this file
 * knows nothing of the writer. Before that, nothing is written at once. */
void names_set_flush(void (*flush)(void));

/* Exported for src/agent/python/lantern_threads.py (ctypes): tid's Python thread name. 0,
 * -EINVAL without a tid or name, or -ENOSPC when the name could not be queued. */
int lantern_agent_python_thread_name(uint32_t tid, const char *name);
/* Exported for src/agent/python/lantern_processes.py (ctypes): a multiprocessing child's
 * Process.name and the program it runs (main: main_len bytes, arguments separated by NUL; cut
 * at 1 KiB), written as TRACE_PROCESS_PYTHON_NAME. 0, -EINVAL without main or name, or -EBUSY
 * when one is already being queued. */
int lantern_agent_python_process_name(const char *main, size_t main_len, const char *name);

#endif
