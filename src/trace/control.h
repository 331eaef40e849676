/* The session's control file "session.lrc" in the session folder: the launcher's word on
 * whether the program records now (lantern profile --start-paused, lantern start/stop,
 * SIGUSR1/SIGUSR2 to the launcher). The launcher creates it and maps it read-write; each
 * agent maps it read-only and reads `recording` on its hot path (one load of a page that
 * changes only at a start or a stop); `lantern start|stop` find a session by it (a process
 * that maps it, /proc/PID/maps) and read its state to know when a trigger took effect.
 * docs/long-runs.md. */
#ifndef LANTERN_TRACE_CONTROL_H
#define LANTERN_TRACE_CONTROL_H

#include <stdint.h>

#define TRACE_CONTROL_FILE "session.lrc"
#define TRACE_CONTROL_MAGIC "LNTRCTL1"
#define TRACE_CONTROL_BYTES 4096u

struct trace_control {
    char magic[8];
    uint32_t version, bytes;
    _Atomic uint32_t recording; /* 1: the agents record; 0: paused (their handlers return) */
    uint32_t launcher_pid;      /* the launcher that owns the session (the triggers' target) */
    _Atomic uint64_t window;    /* the number of the current window, or of the last one */
    _Atomic uint64_t window_start_ns; /* CLOCK_MONOTONIC at the current window's start */
    _Atomic uint64_t written;         /* windows whose database is written (or failed: see below) */
    _Atomic uint64_t failed;          /* of them, windows whose import failed */
    _Atomic uint64_t triggers; /* triggers handled (start, stop; one already in effect too) */
    _Atomic uint32_t ended;    /* the program ended: no trigger is taken any more */
    uint32_t single_file;      /* --single-file: the windows are imported at the end */
    _Atomic uint32_t windowed; /* the run is cut into windows (--start-paused, or a stop came):
                                  a fork child starts its writer at its first event, so that
                                  what it records reaches its trace file at each pause */
    char last_output[1024];    /* the database the last window was written to */
    /* --ring SEC, the flight recorder (docs/long-runs.md): each agent writes what it holds
     * when `dump` passes the number it last wrote for (it says so in its buffer file,
     * pool_header.dumped); the launcher then joins the segments into a dump's database */
    uint64_t ring_ns;                    /* SEC in ns (0: not a --ring session) */
    _Atomic uint64_t dump;               /* the dump asked for last (1..) */
    _Atomic uint64_t dumps_written;      /* dumps done (written, or failed: below) */
    _Atomic uint64_t dumps_failed;       /* of them, dumps whose import failed */
    _Atomic uint64_t triggers_in_dump;   /* triggers that came while a dump was written */
    char last_dump[1024];                /* the database the last dump was written to */
};

_Static_assert(sizeof(struct trace_control) <= TRACE_CONTROL_BYTES, "control file too small");

#endif
