/* The agent's buffer file "<pid>-<start_ns>.lrb", beside the process's trace file
 * "<pid>-<start_ns>.lrt" in the session folder: the per-thread event buffers of
 * src/agent/ring.h live in a shared mapping of this file, so that what a thread has committed
 * is in the page cache the moment it is committed, whatever happens to the process next
 * (_exit, exec, SIGKILL, a crash, NVTX calls after the agent's exit hooks). The writer thread
 * copies the buffers into the .lrt as before and records here how far the .lrt holds each
 * thread's stream; after the process is gone, the launcher (or `lantern import`) appends
 * whatever the .lrt does not hold yet (pool_salvage.c). docs/trace-format.md, "Buffer file".
 *
 * Layout: the header (POOL_HEADER_BYTES), the thread slots (slots x POOL_SLOT_BYTES), the
 * block meta (blocks x struct pool_block_meta), then the blocks (blocks x block_bytes), each
 * part at the offset the header gives. Block and slot numbers are 1-based (0: none). A
 * cursor is (block << 32 | bytes into it); cursor 0 is "the stream's first byte". */
#ifndef LANTERN_TRACE_POOL_FILE_H
#define LANTERN_TRACE_POOL_FILE_H

#include <stddef.h>
#include <stdint.h>

#define POOL_FILE_MAGIC "LNTRPOOL"
#define POOL_FILE_VERSION 1u
#define POOL_HEADER_BYTES 4096u
#define POOL_SLOT_BYTES 128u
#define POOL_NAME_BYTES 16u /* an OS thread name: 15 bytes and a NUL */

struct pool_header {
    char magic[8];
    uint32_t version, block_bytes;
    uint32_t blocks, slots;
    uint64_t slot_offset, meta_offset, block_offset, file_bytes;
    uint32_t ticks_are_tsc; /* 0: the streams' ticks are CLOCK_MONOTONIC ns */
    uint32_t pid;
    uint64_t first_ticks, first_ns;  /* a (ticks, CLOCK_MONOTONIC ns) pair from the start */
    _Atomic uint64_t next_string_id; /* the file's string ids: threads and writer share them */
    /* While the writer writes a chunk: the .lrt's length once that chunk is whole; 0
     * otherwise. A salvager that finds the .lrt that long takes the slots' pending cursors. */
    _Atomic uint64_t commit_end;
    _Atomic uint64_t lost;               /* events of threads that found no free slot */
    uint64_t lost_durable, lost_pending; /* ... that the .lrt reports (as the slots' drops) */
    _Atomic uint32_t ended;  /* TRACE_PROCESS_END is in the .lrt: the process ran its exit */
    _Atomic uint32_t backed; /* blocks whose disk space is allocated (the pool grows in steps) */
    /* The session's window (trace/control.h) at whose end the agent last paused, once what it
     * had buffered then is in the .lrt: the launcher waits for it before importing the window
     * (docs/long-runs.md). */
    _Atomic uint64_t paused_window;
    /* --ring: the dump (trace/control.h) for which the agent last wrote everything it held
     * into its current segment */
    _Atomic uint64_t dumped;
    /* 1 once the agent's writer thread runs: it answers a pause itself (paused_window), after
     * CUPTI's records, which no thread's stream holds, are flushed into the .lrt. */
    _Atomic uint32_t writer_running;
};

/* One thread's stream. The owning thread writes head, first_block and dropped; the writer
 * thread the rest. */
struct pool_slot {
    _Atomic uint64_t head;        /* cursor of the end of what the thread committed */
    _Atomic uint32_t first_block; /* set before head first names a block */
    _Atomic uint32_t used;        /* 1 from the thread's first event until the writer frees it */
    uint64_t thread_idx;          /* TRACE_THREAD's */
    uint64_t first_ticks;
    _Atomic uint64_t dropped; /* events the thread could not buffer, in all */
    uint32_t os_tid;
    uint32_t pad;
    /* what the .lrt holds of the stream (durable) and what the chunk being written adds
     * (pending, valid while the header's commit_end is set and reached) */
    uint64_t durable, pending;
    uint64_t durable_dropped, pending_dropped;     /* drops the .lrt reports */
    uint32_t durable_announced, pending_announced; /* TRACE_THREAD is in the .lrt */
    char name[POOL_NAME_BYTES];                    /* the OS name at the first event */
    uint8_t spare[POOL_SLOT_BYTES - 104];
};
_Static_assert(sizeof(struct pool_slot) == POOL_SLOT_BYTES, "pool_slot size");

struct pool_block_meta {
    _Atomic uint32_t next;      /* the thread's next block, set when the thread leaves it */
    uint32_t end;               /* bytes written in it, set before next */
    _Atomic uint32_t free_next; /* the free list (the agent's) */
};

/* The sizes of a pool of `blocks` blocks and `slots` slots; fills the header's layout. */
static inline void pool_layout(struct pool_header *h, uint32_t blocks, uint32_t slots,
                               uint32_t block_bytes)
{
    h->block_bytes = block_bytes;
    h->blocks = blocks;
    h->slots = slots;
    h->slot_offset = POOL_HEADER_BYTES;
    h->meta_offset = h->slot_offset + (uint64_t)slots * POOL_SLOT_BYTES;
    uint64_t meta_end = h->meta_offset + (uint64_t)blocks * sizeof(struct pool_block_meta);
    h->block_offset = (meta_end + 4095u) & ~(uint64_t)4095u;
    h->file_bytes = h->block_offset + (uint64_t)blocks * block_bytes;
}

static inline uint64_t pool_cursor(uint32_t block, uint32_t pos)
{
    return (uint64_t)block << 32 | pos;
}

/* Appends what the .lrt of every dead process in the session folder dir lacks of its buffer
 * file, then removes the buffer file. alive(pid, start_ns) says whether a process still owns
 * its file (then it is left alone). Warnings go to stderr as "lantern:" lines. Returns how
 * many trace files were appended to. (pool_salvage.c) */
int pool_salvage_session(const char *dir, int (*alive)(long pid, uint64_t start_ns));

#endif
