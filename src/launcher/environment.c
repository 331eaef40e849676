/* The environment that points the profiled program at the agent and tells the agent what to
 * record: the variables of docs/architecture.md's "Launcher ↔ agent environment" table, set
 * in the launcher before the fork, so every process the program starts inherits them. */
#include "trace/environment.h"
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
    const char *source;      /* its name in src/trace/sources.def */
    enum trace_env variable; /* set to the agent's path when the -t list names the source */
    int append;              /* a list: the agent goes after the entries already there */
} agent_loaders[] = {
    {"cuda", TRACE_ENV_CUDA_INJECTION,
     0}, /* the CUDA driver calls the agent's InitializeInjection */
    {"osrt", TRACE_ENV_LD_PRELOAD,
     1}, /* the dynamic loader: the agent's libc functions come first */
};

/* Sets the variable to the agent's path, or adds it to the list the variable holds (the user's
 * preloads keep their place before it: a sanitizer's runtime must stay first). */
static int set_agent_loader(enum trace_env id, const char *agent, int append)
{
    const char *variable = trace_env_name(id);
    const char *old = getenv(variable);
    if (!append || !old || !*old)
        return setenv(variable, agent, 1) < 0 ? -errno : 0;
    char *list = NULL;
    if (asprintf(&list, "%s:%s", old, agent) < 0)
        return -ENOMEM;
    int rc = setenv(variable, list, 1) < 0 ? -errno : 0;
    free(list);
    return rc;
}

/* $LANTERN_AGENT, else ../lib/liblantern-agent.so beside this executable. */
char *environment_find_agent(void)
{
    const char *env = getenv(trace_env_name(TRACE_ENV_AGENT));
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

/* ---- the variables of `lantern profile`'s options (src/launcher/profile_options.def) ------ */

/* The variable's value for the option's field (a string field itself, else written into buf);
 * NULL when the option was not given: the variable is not set. launch_ns: the program's
 * launch, CLOCK_MONOTONIC. */
typedef const char *(*env_render)(const struct launcher_options *o, const void *field,
                                  uint64_t launch_ns, char *buf, size_t size);

static const char *env_string(const struct launcher_options *o, const void *field,
                              uint64_t launch_ns, char *buf, size_t size)
{
    (void)o, (void)launch_ns, (void)buf, (void)size;
    return *(const char *const *)field;
}

static const char *env_one(const struct launcher_options *o, const void *field, uint64_t launch_ns,
                           char *buf, size_t size)
{
    (void)o, (void)launch_ns, (void)buf, (void)size;
    return *(const int *)field ? "1" : NULL;
}

static const char *env_unsigned(const struct launcher_options *o, const void *field,
                                uint64_t launch_ns, char *buf, size_t size)
{
    (void)o, (void)launch_ns;
    unsigned value = *(const unsigned *)field;
    snprintf(buf, size, "%u", value);
    return value ? buf : NULL;
}

/* seconds as ns */
static const char *env_ns(const struct launcher_options *o, const void *field, uint64_t launch_ns,
                          char *buf, size_t size)
{
    (void)o, (void)launch_ns;
    double seconds = *(const double *)field;
    snprintf(buf, size, "%llu", (unsigned long long)(seconds * 1e9));
    return seconds > 0 ? buf : NULL;
}

/* --delay, --duration: the CUDA capture window, CLOCK_MONOTONIC ns counted from the program's
 * launch (src/agent/cupti.c) */
static const char *env_capture_from(const struct launcher_options *o, const void *field,
                                    uint64_t launch_ns, char *buf, size_t size)
{
    (void)field;
    uint64_t from_ns = launch_ns + (uint64_t)(o->delay_s * 1e9);
    snprintf(buf, size, "%llu", (unsigned long long)from_ns);
    return o->delay_s > 0 ? buf : NULL;
}

static const char *env_capture_until(const struct launcher_options *o, const void *field,
                                     uint64_t launch_ns, char *buf, size_t size)
{
    (void)field;
    uint64_t from_ns = launch_ns + (uint64_t)(o->delay_s * 1e9);
    snprintf(buf, size, "%llu", (unsigned long long)(from_ns + (uint64_t)(o->duration_s * 1e9)));
    return o->duration_s > 0 ? buf : NULL;
}

/* The rows that hand the agent a variable. */
#define LAUNCH(member) offsetof(struct launcher_options, member), 1
#define PROFILE(member) 0, 0 /* cmd_profile.c's own: never a variable */
#define NO_FIELD 0, 0
#define ENV(id, render) TRACE_ENV_##id, render, 0
#define ENV_EARLY(id, render) TRACE_ENV_##id, render, 1
#define NO_ENV TRACE_ENV_COUNT, NULL, 0
#define PROFILE_OPTION(source, short_flag, long_flag, argument, value_name, check, field, env,     \
                       help_text, doc)                                                             \
    {long_flag, field, env},
static const struct option_variable {
    const char *option;      /* its long flag */
    size_t offset;           /* the field, in struct launcher_options */
    int launcher_field;      /* the field is the launcher's (not cmd_profile.c's own) */
    enum trace_env variable; /* TRACE_ENV_COUNT: none */
    env_render render;
    int early; /* set with PYTHONPATH (launcher_open), not with the others (launcher_run) */
} option_variables[] = {
#include "launcher/profile_options.def"
};
#undef LAUNCH
#undef PROFILE
#undef NO_FIELD
#undef ENV
#undef ENV_EARLY
#undef NO_ENV
#undef PROFILE_OPTION

/* Sets the variables of the options given (early: those set with PYTHONPATH), in the order
 * of src/trace/environment.def. Returns 0 or setenv's -errno (errno set too). */
static int set_option_variables(const struct launcher_options *o, int early)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t launch_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    const size_t count = sizeof option_variables / sizeof option_variables[0];
    for (int id = 0; id < TRACE_ENV_COUNT; id++)
        for (size_t i = 0; i < count; i++) {
            const struct option_variable *v = &option_variables[i];
            char buf[32];
            if ((int)v->variable != id || v->early != early || !v->launcher_field)
                continue;
            const char *value =
                v->render(o, (const char *)o + v->offset, launch_ns, buf, sizeof buf);
            if (value && setenv(trace_env_name(v->variable), value, 1) < 0)
                return -errno;
        }
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
        return o->py_functions
                   ? launcher_fail(l, -errno, "--python-functions: cannot read '%s': %s", probe,
                                   strerror(errno))
                   : 0;
    const char *old = getenv(trace_env_name(TRACE_ENV_PYTHONPATH));
    char *path = NULL;
    if (asprintf(&path, "%s%s%s", folder, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return launcher_fail(l, -ENOMEM, "out of memory");
    int rc = setenv(trace_env_name(TRACE_ENV_PYTHONPATH), path, 1) < 0 ||
                     (o->py_functions &&
                      setenv(trace_env_name(TRACE_ENV_PYTHON_FUNCTIONS), o->py_functions, 1) < 0)
                 ? launcher_fail(l, -errno, "cannot set the environment: %s", strerror(errno))
                 : 0;
    free(path);
    return rc;
}

int environment_set_agent(const struct launcher *l)
{
    const struct launcher_options *o = l->o;
    if (setenv(trace_env_name(TRACE_ENV_NVTX_INJECTION), l->agent, 1) < 0 ||
        setenv(trace_env_name(TRACE_ENV_SESSION_DIR), l->session_dir, 1) < 0 ||
        setenv(trace_env_name(TRACE_ENV_TRACE), o->trace, 1) < 0)
        return -errno;
    for (size_t i = 0; i < sizeof agent_loaders / sizeof agent_loaders[0]; i++) {
        int rc =
            trace_list_has(o->trace, agent_loaders[i].source)
                ? set_agent_loader(agent_loaders[i].variable, l->agent, agent_loaders[i].append)
                : 0;
        if (rc < 0)
            return rc;
    }
    return set_option_variables(o, 0);
}
