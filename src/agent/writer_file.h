/* What the writer's three files share, and no one else: writer.c (the writer thread, the
 * file's opening and end, fork) calls down to writer_file.c (the trace file, its chunks and
 * records, --ring's segments) and writer_strings.c (the string table), which holds its
 * strings in the state below; writer_strings.c writes its records through writer_file.c.
 * Sources use writer.h. */
#ifndef LANTERN_AGENT_WRITER_FILE_H
#define LANTERN_AGENT_WRITER_FILE_H

#include "agent/ring.h"
#include "agent/writer.h"
#include "agent/clock.h"
#include "trace/codec.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* An interned string: a slot of the table (hash 0: empty). */
struct writer_string {
    uint64_t hash;
    uint64_t id;
    char *bytes;
    size_t len;
};

/* The file being written, under its lock. */
struct writer_state {
    pthread_mutex_t lock;
    int open; /* a file is open and records are accepted; 0 once TRACE_PROCESS_END is out */
    int write_failed;
    int write_errno;     /* why the first failed write failed */
    uint64_t file_bytes; /* bytes of the file known whole: its header and whole chunks */
    char path[PATH_MAX + 64];
    int opened; /* the file was made: fd (checked before each use) writes to it */
    int fd;
    dev_t fd_dev; /* the file's identity: the descriptor is ours only while it names it */
    ino_t fd_ino;
    uint32_t agent_flags;
    char session_dir[PATH_MAX];
    struct trace_chunk_builder chunk;
    uint8_t *chunk_buf;
    size_t chunk_cap;
    uint64_t last_flush_ns;
    struct clock_calibration calibration;
    /* strings of the current file */
    struct writer_string *strings;
    size_t strings_cap, strings_used, strings_bytes;
    /* fork children's forgotten tables, kept (reachable, untouched) rather than freed */
    struct writer_string *strings_retired[8];
    size_t strings_retired_cap[8];
    char *cut; /* a string cut to TRACE_STRING_MAX (allocated on first need) */
    uint64_t dropped_total;
    pthread_t thread;
};

/* --ring SEC (LANTERN_RING_NS): the events go to segment files, the definitions to the .lrt
 * (trace/segments.h). number 0: not a ring. */
struct writer_ring_state {
    uint64_t ring_ns, segment_ns, kept;
    uint64_t number;     /* the segment being written (1..) */
    uint64_t started_ns; /* when it began */
    char path[PATH_MAX + 96];
    int fd;
    dev_t fd_dev;
    ino_t fd_ino;
    uint64_t file_bytes;       /* its header and whole chunks */
    uint64_t definition_bytes; /* what the .lrt holds */
    struct trace_chunk_builder defs, events;
    uint8_t *defs_buf, *events_buf;
    size_t split_cap;
};

extern struct writer_state writer;
extern struct writer_ring_state writer_ring;

/* ---- writer_file.c ---- */

/* Moves fd to a high number (closing fd); returns the new one, or fd where none is free. */
int writer_fd_high(int fd);
/* Writes len bytes to the file (its descriptor checked first). 0, or a negative errno with
 * errno set. */
int writer_write_all(const uint8_t *p, size_t len);
/* Keeps WRITER_END_RESERVE bytes allocated past the end of the file (where supported). */
void writer_keep_reserve(void);
/* Cuts the file back to its whole chunks (after a failed write). */
void writer_truncate(void);
/* A write failed: the file is cut back, the chunk's events counted as dropped, writing stops. */
void writer_write_failed(int err);
/* --ring: opens segment number n (lock held); closes the current one; starts segment 1 at the
 * file's start from LANTERN_RING_NS (nothing without it). 0, or a negative errno (errno set
 * where a system call failed). */
int writer_ring_open(uint64_t n);
void writer_ring_close(void);
int writer_ring_start(void);
/* The records that name no string (lock held): one span of a thread's stream (ring_consume's
 * callback), the calibration point, a thread's TRACE_THREAD. */
void writer_put_events(struct agent_thread *t, const uint8_t *bytes, size_t len, void *ctx);
void writer_put_clock(void);
void writer_put_thread(uint64_t thread_idx, uint32_t os_tid, uint64_t first_seen_ns);
/* The last chunk, alone: TRACE_WRITE_ERROR if a write failed, then TRACE_PROCESS_END; then
 * its write (0, or a negative errno with errno set and the file cut back to its whole
 * chunks). */
void writer_put_end(int clean);
int writer_write_end_chunk(void);
/* Closes the file's descriptor if it is still ours. */
void writer_close(void);

/* ---- writer_strings.c ---- */

/* The string table forgotten for a fork child's new file (retired, not freed). */
void writer_strings_forget(void);
/* Forgets the string table, freed (the writer thread, lock held: not in a fork child). */
void writer_strings_clear(void);

#endif
