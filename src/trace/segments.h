/* The flight recorder's raw files (lantern profile --ring SEC, docs/long-runs.md): a process's
 * trace file "<pid>-<start_ns>.lrt" keeps the records later records refer to (definitions:
 * strings, threads, domains, devices, ...), never rotated; its events go to segment files
 * "<pid>-<start_ns>.<n>.lrs" that the writer starts every few seconds and deletes once older
 * than the ring; a dump joins the .lrt and the segments kept into one raw file that the
 * importer reads as any other. docs/trace-format.md, "Segments (--ring)". */
#ifndef LANTERN_TRACE_SEGMENTS_H
#define LANTERN_TRACE_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"

#define TRACE_SEGMENT_SUFFIX ".lrs"
/* A segment's length from the ring's: a quarter of it, within [250 ms, 60 s], so that a dump
 * holds the ring with at most a segment more and a rotation rewrites little. */
#define TRACE_SEGMENT_MIN_NS 250000000ull
#define TRACE_SEGMENT_MAX_NS 60000000000ull
uint64_t trace_segment_ns(uint64_t ring_ns);
/* How many finished segments are kept beside the one being written: enough to hold ring_ns
 * before any moment, one more for the threads' streams, which start over at their first
 * event in a segment (docs/trace-format.md). */
uint64_t trace_segments_kept(uint64_t ring_ns);
/* The .lrt keeps at most this many bytes of definitions; past it they go into the segments
 * with the events (which then define again the strings they use). */
#define TRACE_SEGMENT_DEFINITIONS_MAX (64ull << 20)

/* "<pid>-<start_ns>.<n>.lrs" from the trace file's path "<pid>-<start_ns>.lrt"; 0, -EINVAL
 * when the path is not a .lrt, or -ENAMETOOLONG when it does not fit cap. */
int trace_segment_path(char *out, size_t cap, const char *lrt_path, uint64_t number);
/* Creates the segment file at path (relative to dir_fd, which may be AT_FDCWD): exclusively,
 * appended to, close-on-exec, no link followed, with its file header written. The descriptor,
 * or a negative errno with errno set (a file created is removed again). */
int trace_segment_create(int dir_fd, const char *path);
/* Writes len bytes of buf to fd through short and interrupted writes: 0, or write's -errno
 * (errno set), -EIO when a write wrote nothing (errno left as it was). */
int trace_write_all(int fd, const void *buf, size_t len);
/* The segment number of name if it is a segment of the trace file named lrt_name (both
 * without folder), else 0. */
uint64_t trace_segment_number(const char *name, const char *lrt_name);

/* 1: records of this type are definitions (kept in the .lrt); the table is in segments.c. */
int trace_record_is_definition(unsigned type);
/* Whether the chunk being built holds a definition (a walk over its record headers). */
int trace_chunk_has_definition(const struct trace_chunk_builder *b);
/* Moves the records of the chunk being built into defs (definitions) and events (the rest),
 * both begun by the caller with in's base_ts, in order, their timestamps encoded anew
 * (record layouts from records.def). 0, or -ENOSPC when one did not fit, -EBADMSG when one is
 * malformed (then both are partial). */
int trace_chunk_split(const struct trace_chunk_builder *in, struct trace_chunk_builder *defs,
                      struct trace_chunk_builder *events);

/* Writes to out_fd a file header and the whole chunks of the raw files at paths (a process's
 * .lrt and its segments), in the order of their sequence numbers, so that the joined file
 * reads as the process wrote it. A file that is gone (a segment the writer deleted meanwhile)
 * is skipped. 0, or a negative errno (errno set too). */
int trace_files_join(int out_fd, const char *const *paths, size_t count);

#endif
