/* Test-side decoder: reads a whole raw trace file (src/trace/codec.h) into an in-memory
 * list of records with their fields decoded by type (each event of a TRACE_THREAD_EVENTS
 * record listed after it as the record it stands for), and a string table, so tests can
 * count and compare records with plain loops. */
#ifndef LANTERN_TESTS_TRACE_LOG_H
#define LANTERN_TESTS_TRACE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "trace/codec.h"
#include "trace/events.h"

#define TRACE_LOG_MAX_FIELDS 12

struct trace_log_record {
    unsigned type;
    uint64_t u[TRACE_LOG_MAX_FIELDS];       /* numeric fields (u, i, ts) in order */
    const uint8_t *s[TRACE_LOG_MAX_FIELDS]; /* string fields, by the same index */
    size_t s_len[TRACE_LOG_MAX_FIELDS];
};

struct trace_log {
    struct trace_reader reader;
    struct trace_log_record *records;
    size_t count, cap;
    size_t events; /* records that came out of TRACE_THREAD_EVENTS (listed after it) */
    int damaged; /* the reader stopped at damage */
    /* strings by id */
    const uint8_t **strings;
    size_t *string_lens;
    size_t strings_cap;
    /* the thread event streams */
    struct trace_clock_line clock;
    uint64_t *ticks;
    size_t ticks_cap;
    uint8_t **owned;
    size_t owned_count;
};

/* 0, or -1 if the file cannot be opened. */
int trace_log_load(struct trace_log *log, const char *path);
void trace_log_free(struct trace_log *log);

/* A string by id as a NUL-terminated copy (caller frees); NULL if unknown. */
char *trace_log_string(const struct trace_log *log, uint64_t id, size_t *len);
size_t trace_log_count(const struct trace_log *log, unsigned type);
/* The n-th record of a type, or NULL. */
const struct trace_log_record *trace_log_nth(const struct trace_log *log, unsigned type, size_t n);

/* Field indexes, per docs/trace-format.md. */
enum {
    PROCESS_PID = 0,
    PROCESS_PPID,
    PROCESS_START,
    PROCESS_WALL,
    PROCESS_EXE,
    PROCESS_CMDLINE,
    PROCESS_HOST,
    PROCESS_FLAGS,
    PROCESS_VERSION,
    END_TS = 0,
    END_DROPPED,
    END_CLEAN,
    THREAD_IDX = 0,
    THREAD_TID,
    THREAD_FIRST_SEEN,
    EV_THREAD = 0,
    EV_TS,
    /* PUSH/POP/MARK/UNBALANCED: */ EV_DOMAIN = 2,
    EV_DEPTH = 3,
    PUSH_NAME = 4,
    PUSH_CATEGORY,
    PUSH_COLOR,
    PUSH_PAYLOAD_TYPE,
    PUSH_PAYLOAD,
    MARK_NAME = 3,
    MARK_CATEGORY,
    MARK_COLOR,
    MARK_PAYLOAD_TYPE,
    MARK_PAYLOAD,
    START_ID = 2,
    START_DOMAIN,
    START_NAME,
    START_CATEGORY,
    START_COLOR,
    END_ID = 2,
};

#endif
