/* The table of environment.def's variables (environment.h). */
#include "trace/environment.h"

const struct trace_env_var trace_env_vars[TRACE_ENV_COUNT] = {
#define TRACE_ENV(id, name, set_by, meaning) [TRACE_ENV_##id] = {name, set_by, meaning},
#include "trace/environment.def"
#undef TRACE_ENV
};
