/* lantern profile's databases of windows of time (docs/long-runs.md): the start-stop windows
 * (--start-paused, lantern start/stop, --single-file) and the instances of a repeated capture
 * range (--capture-range-end=repeat[:N]), each imported from the session's raw files with only
 * what began inside it kept. cmd_profile.c drives them; the launcher calls back for a window
 * that ends while the program runs. */
#ifndef LANTERN_CLI_PROFILE_WINDOWS_H
#define LANTERN_CLI_PROFILE_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/launcher.h"

struct profile_windows {
    const char *pattern; /* -o as given: %n numbers the databases after the first */
    const char *output;  /* FILE: -o expanded at the start, the first database */
    const char *raw_dir; /* FILE.raw */
    int force, single_file;
};

/* launcher_options.window_ended (ctx: a struct profile_windows): writes window w. */
int profile_window_ended(void *ctx, const struct launcher_window *w, char *name, size_t cap);

/* launcher_options.dumped (ctx: a struct profile_windows): --ring's dump number, from the
 * raw folder dir, keeping [from_ns, until_ns], named as the windows are. */
int profile_ring_dumped(void *ctx, uint64_t number, const char *dir, uint64_t from_ns,
                        uint64_t until_ns, char *name, size_t cap);

/* After the run: the windows not written yet (the one the program's end closed), or every
 * window into FILE with single_file; the last database written in last. CLI_EXIT_*. */
int profile_windows_finish(const struct profile_windows *pw, const struct launcher *l, char *last,
                           size_t cap);

/* --capture-range-end=repeat[:max] (max 0: every instance): each instance of the capture
 * range (nvtx:NAME, cudaProfilerApi) its own database, found by a first import of the whole
 * session. CLI_EXIT_*. */
int profile_capture_repeat(const struct profile_windows *pw, const char *capture_range, long max,
                           char *last, size_t cap);

#endif
