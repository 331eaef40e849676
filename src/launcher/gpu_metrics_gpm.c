/* NVML GPM sampling of one GPU from the launcher (gpu_metrics.h): where CUPTI PM sampling
 * cannot run, NVML's GPU Performance Monitoring (Hopper and later) gives most of the same
 * metrics from two snapshots of the GPU's counters. A thread per GPU takes a snapshot every
 * period (at most GPM_MAX_HZ: a snapshot costs ~0.1 ms of the driver's time) and writes the
 * metrics between it and the one before. The metrics GPM lacks (sm_issue, dram_read,
 * dram_write) are not in its set. */
#include "launcher/gpu_metrics.h"
#include "nvml/nvml_iface.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPM_MAX_HZ 1000.0

struct gpm_gpu {
    struct gpu_metrics_target t;
    const struct nvml_api *api;
    nvml_device_t device;
    uint32_t mask; /* the metrics GPM gives on this GPU */
    unsigned int ids[GPU_METRIC_COUNT];
    int metric_of[GPU_METRIC_COUNT]; /* the gpu_metrics.def row of each id */
    unsigned int count;
    nvml_gpm_sample_t samples[2];
    int newer;         /* the index of the last snapshot */
    uint64_t newer_ns; /* when it was taken (the middle of the call) */
    uint64_t period_ns;
    struct gpu_metrics_thread th;
};

/* Takes a snapshot into samples[slot]; its time in *at. An NVML code. */
static nvml_return_t snapshot(struct gpm_gpu *g, int slot, uint64_t *at)
{
    uint64_t t0 = nvml_now_ns();
    nvml_return_t rc = g->api->gpm_sample_get(g->device, g->samples[slot]);
    uint64_t t1 = nvml_now_ns();
    g->th.reads++;
    g->th.read_ns += t1 - t0;
    *at = t0 + (t1 - t0) / 2;
    return rc;
}

/* The metrics between the two snapshots, older first. An NVML code. */
static nvml_return_t metrics(struct gpm_gpu *g, struct nvml_gpm_metrics_get *m)
{
    memset(m, 0, sizeof *m);
    m->version = NVML_GPM_METRICS_GET_VERSION;
    m->num_metrics = g->count;
    m->sample1 = g->samples[!g->newer];
    m->sample2 = g->samples[g->newer];
    for (unsigned int i = 0; i < g->count; i++)
        m->metrics[i].metric_id = g->ids[i];
    return g->api->gpm_metrics_get(m);
}

/* Takes the next snapshot and writes the sample since the last one. An NVML code. */
static nvml_return_t sample_once(struct gpm_gpu *g, struct nvml_gpm_metrics_get *m)
{
    uint64_t at;
    int slot = !g->newer;
    nvml_return_t rc = snapshot(g, slot, &at);
    if (rc != NVML_OK)
        return rc;
    uint64_t start = g->newer_ns;
    g->newer = slot;
    g->newer_ns = at;
    if ((rc = metrics(g, m)) != NVML_OK)
        return rc;
    struct trace_gpu_metric_sample r = {.set_id = g->t.set_id, .start = start, .end = at};
    for (int row = 0; row < GPU_METRIC_COUNT; row++) {
        if (!(g->mask & (1u << row)))
            continue;
        double v = 0;
        for (unsigned int i = 0; i < g->count; i++)
            if (g->metric_of[i] == row && m->metrics[i].status == NVML_OK)
                v = m->metrics[i].value * gpu_metrics[row].gpm_scale;
        r.values.values[r.values.count++] = gpu_metric_encode(row, v);
    }
    gpu_metrics_thread_count(&g->th, start, at, g->period_ns);
    gpu_metrics_put_sample(g->t.sink, &r);
    return NVML_OK;
}

static void *gpm_loop(void *arg)
{
    struct gpm_gpu *g = arg;
    struct nvml_gpm_metrics_get *m = malloc(sizeof *m);
    nvml_return_t rc = m ? NVML_OK : NVML_ERR_UNKNOWN;
    uint64_t next = g->newer_ns;
    while (rc == NVML_OK) {
        next += g->period_ns;
        int stopped = gpu_metrics_thread_sleep(&g->th, next);
        rc = sample_once(g, m); /* at the stop too: a last sample up to it */
        if (stopped)
            break;
        uint64_t now = nvml_now_ns();
        if (next + g->period_ns < now)
            next = now; /* late: keep the period from here, the gap counts as lost */
    }
    if (rc != NVML_OK) {
        char why[256];
        snprintf(why, sizeof why, "NVML GPM stopped: %s", g->api->error_string(rc));
        gpu_metrics_put_status(g->t.sink, g->t.uuid, TRACE_GPU_METRICS_GPM,
                               TRACE_GPU_METRICS_FAILED, 0, why);
    }
    gpu_metrics_thread_finish(&g->th, &g->t, TRACE_GPU_METRICS_GPM, NULL);
    free(m);
    return NULL;
}

static void gpm_free(struct gpm_gpu *g)
{
    gpu_metrics_thread_stop(&g->th);
    for (int i = 0; i < 2; i++)
        if (g->samples[i].handle)
            g->api->gpm_sample_free(g->samples[i]);
    free(g);
}

/* Why GPM cannot sample the GPU, or "" when it can. */
static unsigned int gpm_support(struct gpm_gpu *g, char *why, size_t why_len)
{
    const struct nvml_api *a = g->api;
    why[0] = 0;
    if (!a->gpm_query_support || !a->gpm_sample_alloc || !a->gpm_sample_free ||
        !a->gpm_sample_get || !a->gpm_metrics_get) {
        snprintf(why, why_len, "this NVML has no GPM (driver 520 or newer is needed)");
        return TRACE_GPU_METRICS_UNAVAILABLE;
    }
    struct nvml_gpm_support s = {.version = NVML_GPM_SUPPORT_VERSION};
    nvml_return_t rc = a->gpm_query_support(g->device, &s);
    if (rc == NVML_OK && s.is_supported_device)
        return 0;
    snprintf(why, why_len, "NVML GPM is not supported on this GPU (%s)",
             rc != NVML_OK ? a->error_string(rc) : "Hopper or later, not a virtual GPU");
    return rc == NVML_ERR_NO_PERMISSION ? TRACE_GPU_METRICS_NOT_PERMITTED
                                        : TRACE_GPU_METRICS_UNAVAILABLE;
}

/* Takes the first two snapshots and keeps the metrics NVML answers for. An NVML code. */
static nvml_return_t gpm_first(struct gpm_gpu *g)
{
    for (int row = 0; row < GPU_METRIC_COUNT; row++)
        if ((g->t.mask & (1u << row)) && gpu_metrics[row].gpm_id) {
            g->ids[g->count] = gpu_metrics[row].gpm_id;
            g->metric_of[g->count++] = row;
        }
    if (!g->count)
        return NVML_ERR_NOT_SUPPORTED;
    nvml_return_t rc = NVML_OK;
    for (int i = 0; i < 2 && rc == NVML_OK; i++)
        rc = g->api->gpm_sample_alloc(&g->samples[i]);
    uint64_t at;
    if (rc != NVML_OK || (rc = snapshot(g, 0, &at)) != NVML_OK)
        return rc;
    struct timespec pause = {0, 1000000}; /* metrics need two distinct snapshots */
    nanosleep(&pause, NULL);
    g->newer_ns = at;
    if ((rc = snapshot(g, 1, &at)) != NVML_OK)
        return rc;
    g->newer = 1;
    g->newer_ns = at;
    struct nvml_gpm_metrics_get *m = malloc(sizeof *m);
    if (!m)
        return NVML_ERR_UNKNOWN;
    if ((rc = metrics(g, m)) == NVML_OK)
        for (unsigned int i = 0; i < g->count; i++)
            if (m->metrics[i].status == NVML_OK)
                g->mask |= 1u << g->metric_of[i];
    free(m);
    return rc == NVML_OK && !g->mask ? NVML_ERR_NOT_SUPPORTED : rc;
}

static void *gpm_start(const struct gpu_metrics_target *t, unsigned int *code, char *why,
                       size_t why_len)
{
    struct gpm_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        *code = TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    g->t = *t;
    g->api = &t->nvml->api;
    g->device = t->gpu->device;
    uint64_t min_period = (uint64_t)(1e9 / GPM_MAX_HZ);
    g->period_ns = t->period_ns < min_period ? min_period : t->period_ns;
    gpu_metrics_thread_init(&g->th);
    if ((*code = gpm_support(g, why, why_len)) != 0) {
        gpm_free(g);
        return NULL;
    }
    nvml_return_t rc = gpm_first(g);
    if (rc != NVML_OK) {
        *code = rc == NVML_ERR_NO_PERMISSION   ? TRACE_GPU_METRICS_NOT_PERMITTED
                : rc == NVML_ERR_NOT_SUPPORTED ? TRACE_GPU_METRICS_UNAVAILABLE
                                               : TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "NVML GPM: %s", g->api->error_string(rc));
        gpm_free(g);
        return NULL;
    }
    char hardware[GPU_METRIC_COUNT * 8];
    size_t len = 0;
    for (unsigned int i = 0; i < g->count; i++)
        if (g->mask & (1u << g->metric_of[i]))
            len += (size_t)snprintf(hardware + len, sizeof hardware - len, "%u", g->ids[i]) + 1;
    struct trace_gpu_metric_set set = {
        .set_id = t->set_id,
        .gpu_uuid = trace_cstr(t->uuid),
        .gpu_name = trace_cstr(t->name),
        .source = TRACE_GPU_METRICS_GPM,
        .period_ns = g->period_ns,
        .metrics = g->mask,
        .hardware = {(const uint8_t *)hardware, len},
        .nvml_index = t->gpu->nvml_index + 1,
    };
    gpu_metrics_put_set(t->sink, &set);
    if (gpu_metrics_thread_start(&g->th, gpm_loop, g) < 0) {
        *code = TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "cannot start a thread");
        gpm_free(g);
        return NULL;
    }
    return g;
}

static void gpm_stop(void *handle)
{
    gpm_free(handle); /* stops the thread first */
}

const struct gpu_metrics_backend gpu_metrics_gpm_backend = {
    .name = "NVML GPM",
    .option = "gpm",
    .source = TRACE_GPU_METRICS_GPM,
    .start = gpm_start,
    .stop = gpm_stop,
};
