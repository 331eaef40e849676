/* The environment that points the profiled program at the agent and tells the agent what to
 * record: the variables of docs/architecture.md's "Launcher ↔ agent environment" table, set
 * in the launcher before the fork, so every process the program starts inherits them. */
#include "launcher/launcher_internal.h"
#include "trace/list.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The variables that make a library load the agent for one source, besides
 * NVTX_INJECTION64_PATH, which is always set (NVTX is how every process finds the agent). */
static const struct {
    const char *source;   /* its name in src/trace/sources.def */
    const char *variable; /* set to the agent's path when the -t list names the source */
    int append;           /* a list: the agent goes after the entries already there */
} agent_loaders[] = {
    {"cuda", "CUDA_INJECTION64_PATH", 0}, /* the CUDA driver calls the agent's InitializeInjection */
    {"osrt", "LD_PRELOAD", 1}, /* the dynamic loader: the agent's libc functions come first */
};

/* Sets the variable to the agent's path, or adds it to the list the variable holds (the user's
 * preloads keep their place before it: a sanitizer's runtime must stay first). */
static int set_agent_loader(const char *variable, const char *agent, int append)
{
    const char *old = getenv(variable);
    if (!append || !old || !*old)
        return setenv(variable, agent, 1);
    char *list = NULL;
    if (asprintf(&list, "%s:%s", old, agent) < 0)
        return -1;
    int rc = setenv(variable, list, 1);
    free(list);
    return rc;
}

/* $LANTERN_AGENT, else ../lib/liblantern-agent.so beside this executable. */
char *environment_find_agent(void)
{
    const char *env = getenv("LANTERN_AGENT");
    char exe[PATH_MAX], candidate[PATH_MAX + 64];
    if (env && *env)
        return realpath(env, NULL);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return NULL;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    snprintf(candidate, sizeof candidate, "%s/../lib/liblantern-agent.so", exe);
    return realpath(candidate, NULL);
}

/* The CUDA capture range for the agent (src/agent/cupti.c): the mode, and --delay/--duration
 * as a CLOCK_MONOTONIC window counted from now, the program's launch. */
static int set_cuda_capture_environment(const struct launcher_options *o)
{
    struct timespec now;
    char from[32], until[32];
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t launch_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    uint64_t from_ns = launch_ns + (uint64_t)(o->delay_s * 1e9);
    snprintf(from, sizeof from, "%llu", (unsigned long long)from_ns);
    snprintf(until, sizeof until, "%llu",
             (unsigned long long)(from_ns + (uint64_t)(o->duration_s * 1e9)));
    if (o->capture_range && setenv("LANTERN_CAPTURE", o->capture_range, 1) < 0)
        return -1;
    if (o->cuda_api && setenv("LANTERN_CUDA_API", o->cuda_api, 1) < 0)
        return -1;
    if (o->cuda_memory_usage && setenv("LANTERN_CUDA_MEMORY", "1", 1) < 0)
        return -1;
    if (o->python_backtrace && setenv("LANTERN_PYTHON_BACKTRACE", "1", 1) < 0)
        return -1;
    char hz[16];
    snprintf(hz, sizeof hz, "%u", o->sampling_hz);
    if (o->sampling_hz && setenv("LANTERN_SAMPLING_HZ", hz, 1) < 0)
        return -1;
    if (o->osrt_threshold && setenv("LANTERN_OSRT_THRESHOLD_NS", o->osrt_threshold, 1) < 0)
        return -1;
    if (o->delay_s > 0 && setenv("LANTERN_CAPTURE_FROM_NS", from, 1) < 0)
        return -1;
    if (o->duration_s > 0 && setenv("LANTERN_CAPTURE_UNTIL_NS", until, 1) < 0)
        return -1;
    char ring[32];
    snprintf(ring, sizeof ring, "%llu", (unsigned long long)(o->ring_s * 1e9));
    if (o->ring_s > 0 && setenv("LANTERN_RING_NS", ring, 1) < 0)
        return -1;
    if (o->ring_trigger && setenv("LANTERN_RING_TRIGGER", o->ring_trigger, 1) < 0)
        return -1;
    return 0;
}

/* The Python bootstrap folder beside the agent (lib/lantern-python/, from src/agent/python/)
 * goes first on PYTHONPATH: its sitecustomize.py names threads from threading.Thread.name
 * (lantern_threads.py) and, with --python-functions, records the functions whose patterns
 * it reads from LANTERN_PYTHON_FUNCTIONS (lantern_pyfunctions.py). Without the folder (an
 * agent moved alone) threads keep their OS names, and --python-functions is an error. */
int environment_set_python(struct launcher *l)
{
    const struct launcher_options *o = l->o;
    char lib[PATH_MAX], folder[PATH_MAX + 32], probe[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s", l->agent); /* realpath: absolute, so it has a '/' */
    *strrchr(lib, '/') = '\0';
    snprintf(folder, sizeof folder, "%s/lantern-python", lib);
    snprintf(probe, sizeof probe, "%s/sitecustomize.py", folder);
    if (access(probe, R_OK) != 0)
        return o->py_functions ? launcher_fail(l, "--python-functions: cannot read '%s': %s", probe,
                                               strerror(errno))
                               : 0;
    const char *old = getenv("PYTHONPATH");
    char *path = NULL;
    if (asprintf(&path, "%s%s%s", folder, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return launcher_fail(l, "out of memory");
    int rc = setenv("PYTHONPATH", path, 1) < 0 ||
                     (o->py_functions && setenv("LANTERN_PYTHON_FUNCTIONS", o->py_functions, 1) < 0)
                 ? launcher_fail(l, "cannot set the environment: %s", strerror(errno))
                 : 0;
    free(path);
    return rc;
}

int environment_set_agent(const struct launcher *l)
{
    const struct launcher_options *o = l->o;
    if (setenv("NVTX_INJECTION64_PATH", l->agent, 1) < 0 ||
        setenv("LANTERN_SESSION_DIR", l->session_dir, 1) < 0 ||
        setenv("LANTERN_TRACE", o->trace, 1) < 0)
        return -1;
    for (size_t i = 0; i < sizeof agent_loaders / sizeof agent_loaders[0]; i++)
        if (trace_list_has(o->trace, agent_loaders[i].source) &&
            set_agent_loader(agent_loaders[i].variable, l->agent, agent_loaders[i].append) < 0)
            return -1;
    return set_cuda_capture_environment(o);
}
