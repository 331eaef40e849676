/* One run of `lantern profile`'s capture side, step by step (launcher.h): each step is in the
 * file of its kind (session.c, environment.c, child.c, launcher_file.c) and the samplers in
 * their own files, listed in the table below. */
#include "launcher/launcher_internal.h"
#include "launcher/samplers.h"
#include "trace/format.h"
#include "trace/list.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* One row per source of src/trace/sources.def whose `where` is "launcher". */
static const struct launcher_sampler *const launcher_samplers[] = {
    &launcher_sampler_nvml,
    &launcher_sampler_gpu_metrics,
    &launcher_sampler_rapl,
};
#define SAMPLER_COUNT (sizeof launcher_samplers / sizeof launcher_samplers[0])
_Static_assert(SAMPLER_COUNT <= LAUNCHER_MAX_SAMPLERS, "LAUNCHER_MAX_SAMPLERS is too small");

/* The row of source in the table, or SAMPLER_COUNT. */
static size_t sampler_index(const char *source)
{
    size_t i = 0;
    while (i < SAMPLER_COUNT && strcmp(launcher_samplers[i]->source, source))
        i++;
    return i;
}

const struct launcher_sampler *launcher_sampler_find(const char *source)
{
    size_t i = sampler_index(source);
    return i < SAMPLER_COUNT ? launcher_samplers[i] : NULL;
}

void launcher_init(struct launcher *l, const struct launcher_options *o)
{
    memset(l, 0, sizeof *l);
    l->o = o;
    l->dir_fd = -1;
}

const char *launcher_error(const struct launcher *l)
{
    return l->error ? l->error : "out of memory";
}

int launcher_open(struct launcher *l)
{
    if (!(l->agent = environment_find_agent()))
        return launcher_fail(
            l, -ENOENT, "cannot find the agent library liblantern-agent.so (set LANTERN_AGENT)");
    int rc = environment_set_python(l);
    if (rc < 0)
        return rc;
    if (asprintf(&l->raw_dir, "%s.raw", l->o->output) < 0) {
        l->raw_dir = NULL;
        return launcher_fail(l, -ENOMEM, "out of memory");
    }
    if ((rc = session_prepare(l)) < 0 || (rc = control_create(l)) < 0)
        return rc;
    l->session_dir = realpath(l->raw_dir, NULL);
    int fd = -1;
    if (!l->session_dir ||
        (fd = openat(l->dir_fd, "launcher.lrt",
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0)
        rc = -errno;
    else
        rc = launcher_file_open(fd, l->dir_fd, (uint64_t)(l->o->ring_s * 1e9), &l->file);
    if (rc == 0)
        rc = launcher_write_start(l->file, l->o->command, l->o->trace);
    if (rc < 0)
        return launcher_fail(l, rc, "cannot write the session folder '%s': %s", l->raw_dir,
                             strerror(-rc));
    return 0;
}

/* Starts the sampler of the source name when the trace list names it, or without -t when the
 * source is on by default; when one that was asked for (named) cannot start, adds why to
 * said. */
static void start_sampler(struct launcher *l, const char *name, int by_default, char *said,
                          size_t size)
{
    const struct launcher_options *o = l->o;
    size_t i = sampler_index(name);
    char why[1024];
    int named = trace_list_has(o->trace, name);
    if (i == SAMPLER_COUNT || !(named || (!o->trace_given && by_default)))
        return;
    if (launcher_samplers[i]->start(l->file, o, &l->sampler_state[i], why, sizeof why) != 0 &&
        named) {
        size_t len = strlen(said);
        snprintf(said + len, size - len, "%s%s not sampled: %s", len ? "; " : "",
                 launcher_samplers[i]->what, why);
    }
}

int launcher_start_samplers(struct launcher *l)
{
    char said[2048] = "";
#define SOURCE(ID, name, flag, first, last, where, needs_gpu, by_default, description)             \
    if (!strcmp(where, "launcher"))                                                                \
        start_sampler(l, name, by_default, said, sizeof said);
#include "trace/sources.def"
#undef SOURCE
    return said[0] ? launcher_fail(l, -ENODEV, "%s", said) : 0;
}

static void stop_samplers(struct launcher *l)
{
    for (size_t i = 0; i < SAMPLER_COUNT; i++) {
        if (l->sampler_state[i])
            launcher_samplers[i]->stop(l->sampler_state[i]);
        l->sampler_state[i] = NULL;
    }
}

int launcher_run(struct launcher *l)
{
    /* Only now, after the samplers started: the launcher's own CUDA (PM sampling's cuInit)
     * must not load the agent, which would trace the launcher and, with CUPTI activity
     * tracing in the process that samples, crashed CUPTI's metric evaluation (H200). */
    int rc = environment_set_agent(l);
    if (rc < 0)
        return launcher_fail(l, rc, "cannot set the environment: %s", strerror(errno));
    if ((rc = control_start(l)) < 0)
        return rc;
    int status = child_run(l);
    if (status >= 0 && launcher_wait_writers(l) < 0)
        l->still_writing = 1; /* unknown: keep the folder */
    control_finish(l);        /* no trigger from here: an open window ends now */
    stop_samplers(l);
    return status;
}

int launcher_finish(struct launcher *l, int exit_status)
{
    int rc = launcher_write_end(l->file, exit_status);
    int closed = launcher_file_close(l->file);
    l->file = NULL;
    if (rc == 0)
        rc = closed;
    if (rc < 0)
        return launcher_fail(l, rc, "cannot write '%s/launcher.lrt': %s", l->raw_dir,
                             strerror(-rc));
    return 0;
}

void launcher_release(struct launcher *l)
{
    stop_samplers(l);
    control_release(l);
    launcher_file_close(l->file);
    l->file = NULL;
    if (l->dir_fd >= 0)
        close(l->dir_fd);
    l->dir_fd = -1;
    child_hold_signals(0); /* a signal held since the program ended acts now */
    free(l->raw_dir);
    free(l->session_dir);
    free(l->agent);
    free(l->error);
    free(l->running);
    l->raw_dir = l->session_dir = l->agent = l->error = l->running = NULL;
}
