/* libcupti loaded at run time with dlopen, behind a struct of function pointers, so the
 * agent links without CUDA and a machine without CUPTI just leaves CUDA tracing off.
 * Search order: $LANTERN_CUPTI_PATH, libcupti.so.13, $CUDA_HOME's, /usr/local/cuda's. */
#ifndef LANTERN_AGENT_CUPTI_LOADER_H
#define LANTERN_AGENT_CUPTI_LOADER_H

#include <cupti.h>
#include <stddef.h>

struct cupti_api {
    void *handle;
    CUptiResult (*activity_enable)(CUpti_ActivityKind kind);
    CUptiResult (*activity_disable)(CUpti_ActivityKind kind);
    CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                               CUpti_BuffersCallbackCompleteFunc completed);
    CUptiResult (*activity_register_timestamp_callback)(CUpti_TimestampCallbackFunc now);
    CUptiResult (*activity_get_next_record)(uint8_t *buffer, size_t valid_size,
                                            CUpti_Activity **record);
    CUptiResult (*activity_get_num_dropped_records)(CUcontext context, uint32_t stream,
                                                    size_t *dropped);
    CUptiResult (*activity_flush_all)(uint32_t flag);
    CUptiResult (*activity_enable_runtime_api)(CUpti_CallbackId cbid, uint8_t enable);
    CUptiResult (*activity_enable_driver_api)(CUpti_CallbackId cbid, uint8_t enable);
    CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType type);
    CUptiResult (*get_callback_name)(CUpti_CallbackDomain domain, uint32_t cbid, const char **name);
    CUptiResult (*get_result_string)(CUptiResult result, const char **text);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata);
    CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
    CUptiResult (*get_context_id)(CUcontext context, uint32_t *id);
    CUptiResult (*get_stream_id_ex)(CUcontext context, CUstream stream, uint8_t per_thread,
                                    uint32_t *id);
};

/* Loads libcupti and every entry point above. 0, or -ENOENT (not loaded) or -ENOSYS (an entry
 * point missing) with why[] saying what failed. */
int cupti_load(struct cupti_api *api, char *why, size_t why_len);

#endif
