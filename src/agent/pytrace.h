/* `lantern profile --python-backtrace`: on the launching thread, at the entry of each kernel
 * launch API call, the caller's stack (pystack.h) goes through the thread's ring as a
 * TRACE_CUDA_BACKTRACE record keyed by the call's correlation id. Driven by cupti.c, whose
 * CUPTI subscriber (one per process) delivers the API callbacks. */
#ifndef LANTERN_AGENT_PYTRACE_H
#define LANTERN_AGENT_PYTRACE_H

#include <cupti.h>

#include "agent/cupti_loader.h"

/* Enables the launch callbacks when LANTERN_PYTHON_BACKTRACE=1. subscriber is NULL when
 * cupti.c could not subscribe (then one warning says backtraces are off). */
void pytrace_start(const struct cupti_api *api, CUpti_SubscriberHandle subscriber);

/* The subscriber's runtime and driver API callbacks. */
void pytrace_on_api(CUpti_CallbackDomain domain, const CUpti_CallbackData *data);

#endif
