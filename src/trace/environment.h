/* The environment variables the launcher, the agent and the user share, named once
 * (environment.def): the agent reads getenv(trace_env_name(TRACE_ENV_TRACE)), the launcher
 * sets the same name, and docs/architecture.md's table is generated from the rows. */
#ifndef LANTERN_TRACE_ENVIRONMENT_H
#define LANTERN_TRACE_ENVIRONMENT_H

enum trace_env {
#define TRACE_ENV(id, name, set_by, meaning) TRACE_ENV_##id,
#include "trace/environment.def"
#undef TRACE_ENV
    TRACE_ENV_COUNT
};

struct trace_env_var {
    const char *name;    /* "LANTERN_TRACE" */
    const char *set_by;  /* "launcher", "user", "tests", "launcher, with `-t cuda`" */
    const char *meaning; /* markdown, for the docs table */
};

/* Every row, for the docs and the tests (environment.c, in lantern_trace). */
extern const struct trace_env_var trace_env_vars[TRACE_ENV_COUNT];

/* The variable's name; inline, so the agent's files and their unit tests need no table. */
static inline const char *trace_env_name(enum trace_env id)
{
    static const char *const names[TRACE_ENV_COUNT] = {
#define TRACE_ENV(id, name, set_by, meaning) [TRACE_ENV_##id] = name,
#include "trace/environment.def"
#undef TRACE_ENV
    };
    return names[id];
}

#endif
