/* The writer: one background thread that copies every thread's event stream into this
 * process's trace file as it is (with the calibration that turns its ticks into ns), and
 * writes chunks; plus the locked interface through which other sources (CUPTI's buffer
 * callback) append records directly. Made of writer.c (the thread) over writer_file.c (the
 * file) and writer_strings.c (the string table), which share writer_file.h. */
#ifndef LANTERN_AGENT_WRITER_H
#define LANTERN_AGENT_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "agent/agent.h"
#include "trace/codec.h"

/* ---- for sources (docs/architecture.md, "Agent internals") ---- */

struct trace_chunk_builder *writer_lock(void); /* takes the writer lock; NULL if inert */
void writer_unlock(void);                      /* may write the chunk to the file */
/* Writes the chunk before unlocking: for definitions the threads' events refer to (domains,
 * categories, long strings), which must be in the file if the process ends without its exit
 * hooks. */
void writer_unlock_durable(void);
/* Writes the chunk built so far and starts an empty one (lock held). 0, or the failed
 * write's negative errno. */
int writer_flush_locked(void);
/* Makes room for a record of up to `bytes` (lock held): flushes, grows the buffer if one
 * record is larger than a whole chunk. 0, or -ENOMEM if memory ran out. */
int writer_reserve_locked(size_t bytes);
uint64_t writer_intern(const char *s,
                       size_t len); /* string id, emits TRACE_STRING if new (lock held) */
/* TRACE_DROPPED: count records of thread_idx (0: not one thread's) lost (lock held); they
 * count in TRACE_PROCESS_END's total too. */
void writer_put_dropped(uint64_t thread_idx, uint64_t count);

/* The chunk being built, for a record appended while the lock is held (a drain hook). */
struct trace_chunk_builder *writer_chunk_locked(void);
/* The writer thread's OS tid (0 before it runs): samplers leave it out. */
uint32_t writer_thread_tid(void);

/* A thread known only by its OS tid (CUPTI's API records): its OS name is read and written
 * the first time (lock held). */
void writer_note_tid_locked(uint32_t os_tid);

/* A new string id of the current file (any thread, lock-free): the threads' STRING events
 * and writer_intern share one numbering. */
uint64_t writer_new_string_id(void);

/* UTF-32 wchar_t -> UTF-8 into out (room for 4 bytes per unit); returns bytes written. */
size_t writer_wide_to_utf8(const wchar_t *w, size_t units, char *out);

/* ---- for agent.c ---- */

/* Opens <dir>/<pid>-<start_ns>.lrt and its buffer file .lrb (the event pool) and writes
 * TRACE_PROCESS. 0 or a negative errno. */
int writer_start(const char *session_dir, uint32_t agent_flags);
/* Starts the thread that drains the threads' buffers: after the sources have written their
 * definitions (domains), so those precede every event that uses them. 0 or a negative
 * errno. */
int writer_run(void);
/* fn runs on the writer thread every period_ms, the writer lock not held (the sources'
 * periodic hooks). */
void writer_set_periodic(void (*fn)(void), unsigned period_ms);
/* fn runs at each drain, the writer lock held (the sources' drain hooks, agent.h). */
void writer_set_drain(void (*fn)(int final));
/* fn runs on the writer thread at every drain (~10 ms), without the writer lock. */
void writer_set_poll(void (*fn)(void));
/* Drains every thread's buffer and writes the chunk now (the writer thread, at a pause: the
 * window's events reach the file before the launcher imports it). */
void writer_flush_now(void);
/* A fork child's writer thread, when it has none yet (writer_fork_child_done wants one). */
void writer_start_wanted(void);
/* Drains everything and writes TRACE_PROCESS_END; later calls do nothing. */
void writer_finish(void);
/* The same from a signal handler about to let the process die: asks the writer thread and
 * waits for it, at most timeout_ms. TRACE_PROCESS_END then says clean = 0. */
void writer_finish_from_signal(int timeout_ms);
void writer_fork_prepare(void);
void writer_fork_parent(void);
void writer_fork_child(void);
/* After every fork-child hook: the child's writer thread starts once the child has filled
 * RING_WAKE_BLOCKS blocks, or at its first locked write, never inside the fork handler (a
 * thread made there hangs sanitized programs). */
void writer_fork_child_done(void);

#endif
