/* What the host did while the GPU waited (host_activity.c): for a finding of a "host wait"
 * rule (gpu_idle, gpu_utilization, launch_bound) or a CPU-bound range, the CPU samples taken
 * in its windows on the threads of the processes concerned, their top functions, the blocking
 * calls (-t osrt, when the database has them), the GIL waits of Python threads (when it has
 * them) and the advice a table of patterns draws from them; or, where sampling was off, why. docs/analyze.md, "What the host did". */
#ifndef LANTERN_ANALYZE_HOST_ACTIVITY_H
#define LANTERN_ANALYZE_HOST_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/rule.h"
#include "model/cpu_profile.h"

#define ANALYZE_HOST_TOP 5 /* functions and blocking calls named per finding */

struct analyze_host_function {
    char *function, *module;           /* the leaf: what was running */
    char *user_function, *user_module; /* the nearest caller of the program's own; NULL none */
    int64_t samples;
};

struct analyze_host_call { /* blocking calls of one name (-t osrt) */
    char *name;
    int64_t calls;
    int64_t ns; /* their time inside the windows */
    char *caller;      /* the backtrace with most of that time (first frames), NULL: none */
    int64_t caller_ns; /* its calls' time inside the windows */
};

#define ANALYZE_HOST_GIL_TOP 3 /* Python functions named for the GIL waits */

struct analyze_host_gil_function { /* where the threads waited for the GIL */
    char *function;
    int64_t ns;
};

struct analyze_host {
    char *summary;    /* one line: the samples and top functions, or why there are none */
    char *advice;     /* "<what> (94 % of the gap samples): <advice>", NULL: no pattern */
    int sampled;      /* 0: sampling was off in these processes (the summary says why) */
    int64_t samples;  /* samples in the windows */
    double window_ns; /* the windows' length */
    double on_cpu_ns; /* samples x their process's sampling period */
    struct analyze_host_function top[ANALYZE_HOST_TOP];
    int top_count;
    struct analyze_host_call blocking[ANALYZE_HOST_TOP];
    int blocking_count;
    int64_t blocked_ns;     /* all blocking calls' time inside the windows */
    int64_t gil_wait_ns;    /* the threads' GIL waits (cpu_gil_waits) inside the windows */
    int64_t gil_waits;      /* those waits; 0: none (the summary then says nothing of them) */
    struct analyze_host_gil_function gil_top[ANALYZE_HOST_GIL_TOP];
    int gil_top_count;
    int state_threads;         /* sampled threads with a state in the windows; 0: none known */
    double state_ns;           /* their time in the windows (inside their sampled lives) */
    double state_blocked_ns;   /* of it, blocked (cpu_thread_states) */
    double state_preempted_ns; /* and preempted */
    const char *pattern;    /* the pattern behind the advice, NULL none */
    double pattern_percent; /* its share: of the samples, or of the window time blocked */
};

/* Whose samples, and when: the threads of processes (processes.id), or threads (threads.id)
 * when thread_count > 0; windows sorted, disjoint, absolute ns. `what` names the windows in
 * the summary ("gaps", "windows", "launches", "ranges"). */
struct analyze_host_scope {
    const int64_t *process_ids;
    size_t process_count;
    const int64_t *thread_ids;
    size_t thread_count;
    struct cpu_windows windows;
    const char *what;
};

/* Whether the session asked for CPU sampling (cpu_sampling has rows): only then do findings
 * get a host part, so a session without it reads as before. */
int analyze_host_asked(struct analyze_ctx *ctx);

/* Sets f->host (and f->advice when a pattern matches) from the samples in scope; nothing when
 * the session did not ask for sampling or f is NULL. 0, or a negative errno with ctx->error set. */
int analyze_host_describe(struct analyze_ctx *ctx, struct analyze_finding *f,
                          const struct analyze_host_scope *scope);

void analyze_host_free(struct analyze_host *h);
void analyze_cpu_free(struct analyze_cpu *cpu);

#endif
