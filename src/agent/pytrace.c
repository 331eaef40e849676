/* The launching call's stack for `lantern profile --python-backtrace`: CUPTI calls us at the
 * entry of each launch API (cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch, ...) on the
 * launching thread; the stack goes into that thread's event stream, its text once per file
 * for a loop repeating one call site (the thread's string cache). */
#include "agent/pytrace.h"

#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/pystack.h"
#include "agent/ring.h"
#include "agent/thread_events.h"
#include "trace/environment.h"

/* Enough for PYSTACK_USER_FRAMES frames of long paths; longer stacks are truncated. */
#define PYTRACE_TEXT_MAX 2048u

static int pytrace_enabled;
/* Runtime launch calls in progress on this thread: the driver launch a runtime call makes
 * inside shares its correlation id and needs no second stack. */
static __thread int pytrace_runtime_depth __attribute__((tls_model("initial-exec")));

/* CUDA_BACKTRACE (correlation, stack) in the launching thread's stream: a call site the
 * thread has used before costs a compare, not its text. */
static void pytrace_push(uint64_t correlation, const char *text, size_t len)
{
    uint64_t ticks = clock_ticks();
    struct agent_thread *t = ring_self(ticks);
    if (!t)
        return;
    struct thread_message m = {.bytes = text, .len = len};
    thread_message_resolve(t, &m);
    uint8_t *p = thread_event_begin(t, TRACE_EV_CUDA_BACKTRACE, ticks, &m);
    if (!p)
        return;
    p = trace_ev_put_cuda_backtrace(p, (struct trace_ev_cuda_backtrace){correlation, m.id});
    ring_commit(t, p, ticks);
}

void pytrace_on_api(CUpti_CallbackDomain domain, const CUpti_CallbackData *data)
{
    int runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (data->callbackSite == CUPTI_API_EXIT) {
        if (runtime && pytrace_runtime_depth > 0)
            pytrace_runtime_depth--;
        return;
    }
    if (runtime)
        pytrace_runtime_depth++;
    else if (pytrace_runtime_depth > 0)
        return;
    if (agent_paused()) /* lantern stop: no stack walk while paused (docs/long-runs.md) */
        return;
    char text[PYTRACE_TEXT_MAX];
    size_t len = pystack_python(text, sizeof text);
    /* In a Python process a launch with no Python frames (an autograd worker thread's) gets
     * no trace: unwinding libtorch natively costs about a millisecond per launch. */
    if (len == 0 && !pystack_in_python())
        len = pystack_native(text, sizeof text, 0);
    if (len > 0)
        pytrace_push(data->correlationId, text, len);
}

static int pytrace_enable_domain(const struct cupti_api *api, CUpti_SubscriberHandle subscriber,
                                 CUpti_CallbackDomain domain, uint32_t cbid_limit)
{
    int enabled = 0;
    for (uint32_t cbid = 1; cbid < cbid_limit; cbid++) {
        const char *name = NULL;
        if (api->get_callback_name(domain, cbid, &name) == CUPTI_SUCCESS &&
            pystack_is_launch_api(name) &&
            api->enable_callback(1, subscriber, domain, cbid) == CUPTI_SUCCESS)
            enabled++;
    }
    return enabled;
}

void pytrace_start(const struct cupti_api *api, CUpti_SubscriberHandle subscriber)
{
    const char *wanted = getenv(trace_env_name(TRACE_ENV_PYTHON_BACKTRACE));
    if (!wanted || strcmp(wanted, "1") != 0 || pytrace_enabled)
        return;
    if (!subscriber) {
        agent_warn("--python-backtrace: another CUPTI subscriber holds the callbacks; "
                   "launches have no backtrace");
        return;
    }
    /* glibc's backtrace() loads libgcc_s on its first call: do it now, not inside a launch */
    char warm[64];
    pystack_native(warm, sizeof warm, 0);
    int enabled = pytrace_enable_domain(api, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                        CUPTI_RUNTIME_TRACE_CBID_SIZE) +
                  pytrace_enable_domain(api, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                        CUPTI_DRIVER_TRACE_CBID_SIZE);
    if (enabled == 0)
        agent_warn("--python-backtrace: CUPTI refused the launch callbacks; launches have no "
                   "backtrace");
    pytrace_enabled = enabled > 0;
}
