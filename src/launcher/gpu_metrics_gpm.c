/* NVML GPM sampling of one GPU (gpu_metrics.h): where CUPTI PM sampling cannot run, NVML's GPU
 * Performance Monitoring (Hopper and later) gives most of the same metrics from two snapshots
 * of the GPU's counters. The driver refreshes what a snapshot returns only every 100 ms (NVML's
 * documentation; on an H200, driver 580, snapshots 2 ms apart read identical counters for
 * 98 ms, then all change at once), and a snapshot holds the driver ~2 ms. So the metrics
 * between two snapshots describe the interval between the two refreshes they saw, not the
 * interval between the calls: this sampler learns the refresh grid with the energy counter's
 * reader (src/energy/counter_reader.h: about one snapshot per refresh, aimed reads narrow its
 * time to ~2 ms) and writes one sample per refresh, placed from the refresh before to this
 * one. A refresh shows as any metric changing; PCIe traffic, which the driver's own polling
 * keeps above zero on an idle GPU, is asked for to see it then. The metrics GPM lacks
 * (sm_issue, dram_read, dram_write) are not in its set; --gpu-metrics-frequency does not apply
 * (the refresh sets the rate). */
#include "launcher/gpu_metrics.h"
#include "energy/counter_reader.h"
#include "nvml/nvml_iface.h"
#include "trace/format.h"
#include "trace/gpu_metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The driver's refresh period, as announced in the set (the reader learns the real one). */
#define GPM_REFRESH_NS 100000000ull
/* Before the program starts, snapshots this far apart until two refreshes are seen (or
 * GPM_ACQUIRE_MAX_NS passes), so that the first samples' edges are known within a few ms (the
 * reader alone reads every 35 ms and takes several refreshes to narrow that). */
#define GPM_ACQUIRE_GAP_NS 4000000ull
#define GPM_ACQUIRE_MAX_NS 350000000ull
/* The GPM metric ids that mark a refresh on an idle GPU (PCIe rx and tx per second). */
static const unsigned int gpm_markers[] = {21, 20};

struct gpm_gpu {
    struct gpu_metrics_target t;
    const struct nvml_api *api;
    nvml_device_t device;
    uint32_t mask; /* the metrics GPM gives on this GPU */
    /* the ids asked for: the metrics, then markers not among them (metric_of -1) */
    unsigned int ids[GPU_METRIC_COUNT + 2];
    int metric_of[GPU_METRIC_COUNT + 2]; /* the gpu_metrics.def row of each id */
    unsigned int count;
    nvml_gpm_sample_t samples[2];
    int newer;                        /* the index of the last snapshot */
    struct nvml_gpm_metrics_get *got; /* the metrics between the last two */
    struct counter_reader reader; /* when to snapshot; when each refresh happened */
    uint64_t refreshes;           /* refreshes seen: the reader's "counter" */
    uint64_t refreshed_ns;        /* when the last one happened (0: none yet) */
    struct gpu_metrics_thread th;
};

/* Takes a snapshot into samples[slot]; when the call ran in *t0, *t1. An NVML code. */
static nvml_return_t snapshot(struct gpm_gpu *g, int slot, uint64_t *t0, uint64_t *t1)
{
    *t0 = nvml_now_ns();
    nvml_return_t rc = g->api->gpm_sample_get(g->device, g->samples[slot]);
    *t1 = nvml_now_ns();
    g->th.reads++;
    g->th.read_ns += *t1 - *t0;
    return rc;
}

/* The metrics between the two snapshots, older first, into g->got. An NVML code. */
static nvml_return_t metrics(struct gpm_gpu *g)
{
    struct nvml_gpm_metrics_get *m = g->got;
    memset(m, 0, sizeof *m);
    m->version = NVML_GPM_METRICS_GET_VERSION;
    m->num_metrics = g->count;
    m->sample1 = g->samples[!g->newer];
    m->sample2 = g->samples[g->newer];
    for (unsigned int i = 0; i < g->count; i++)
        m->metrics[i].metric_id = g->ids[i];
    return g->api->gpm_metrics_get(m);
}

/* Takes the next snapshot and the metrics since the one before; *seen = 1 with *u when the
 * reader placed a refresh between them: any metric changed. An NVML code. */
static nvml_return_t observe(struct gpm_gpu *g, int *seen, struct counter_update *u)
{
    uint64_t t0, t1;
    int slot = !g->newer;
    *seen = 0;
    nvml_return_t rc = snapshot(g, slot, &t0, &t1);
    if (rc != NVML_OK)
        return rc;
    g->newer = slot;
    if ((rc = metrics(g)) != NVML_OK)
        return rc;
    const struct nvml_gpm_metrics_get *m = g->got;
    int changed = 0;
    for (unsigned int i = 0; i < g->count; i++)
        changed |= m->metrics[i].status == NVML_OK && m->metrics[i].value != 0;
    g->refreshes += (uint64_t)changed;
    *seen = counter_reader_feed(&g->reader, t0, t1, g->refreshes, u);
    return NVML_OK;
}

/* Takes the next snapshot; when it saw a refresh, writes the metrics from the refresh before
 * to this one. An NVML code. */
static nvml_return_t sample_once(struct gpm_gpu *g)
{
    int seen;
    struct counter_update u;
    nvml_return_t rc = observe(g, &seen, &u);
    if (rc != NVML_OK || !seen)
        return rc;
    const struct nvml_gpm_metrics_get *m = g->got;
    uint64_t start = g->refreshed_ns, period = g->reader.period_ns;
    g->refreshed_ns = u.ts;
    if (!start)
        return NVML_OK; /* the first refresh seen: what came before it is unknown */
    /* refreshes between unseen (all zero: an idle GPU without PCIe traffic) leave this one's
     * metrics to the last period alone */
    if (u.ts - start > period + period / 2)
        start = u.ts - period;
    struct trace_gpu_metric_sample r = {.set_id = g->t.set_id, .start = start, .end = u.ts};
    for (int row = 0; row < GPU_METRIC_COUNT; row++) {
        if (!(g->mask & (1u << row)))
            continue;
        double v = 0;
        for (unsigned int i = 0; i < g->count; i++)
            if (g->metric_of[i] == row && m->metrics[i].status == NVML_OK)
                v = m->metrics[i].value * gpu_metrics[row].gpm_scale;
        r.values.values[r.values.count++] = gpu_metric_encode(row, v);
    }
    gpu_metrics_thread_count(&g->th, start, u.ts, period);
    gpu_metrics_put_sample(g->t.sink, &r);
    return NVML_OK;
}

static void *gpm_loop(void *arg)
{
    struct gpm_gpu *g = arg;
    nvml_return_t rc = NVML_OK;
    while (rc == NVML_OK) {
        int stopped = gpu_metrics_thread_sleep(&g->th, counter_reader_next_start(&g->reader));
        rc = sample_once(g); /* at the stop too: a refresh since the last snapshot */
        if (stopped)
            break;
    }
    if (rc != NVML_OK) {
        char why[256];
        snprintf(why, sizeof why, "NVML GPM stopped: %s", g->api->error_string(rc));
        gpu_metrics_put_status(g->t.sink, g->t.uuid, TRACE_GPU_METRICS_GPM,
                               TRACE_GPU_METRICS_FAILED, 0, why);
    }
    gpu_metrics_thread_finish(&g->th, &g->t, TRACE_GPU_METRICS_GPM, NULL);
    return NULL;
}

static void gpm_free(struct gpm_gpu *g)
{
    gpu_metrics_thread_stop(&g->th);
    for (int i = 0; i < 2; i++)
        if (g->samples[i].handle)
            g->api->gpm_sample_free(g->samples[i]);
    free(g->got);
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

/* Asks for the metrics of the set and the refresh markers; takes the first two snapshots (the
 * reader's first reads) and keeps the metrics NVML answers for. An NVML code. */
static nvml_return_t gpm_first(struct gpm_gpu *g)
{
    for (int row = 0; row < GPU_METRIC_COUNT; row++)
        if ((g->t.mask & (1u << row)) && gpu_metrics[row].gpm_id) {
            g->ids[g->count] = gpu_metrics[row].gpm_id;
            g->metric_of[g->count++] = row;
        }
    if (!g->count)
        return NVML_ERR_NOT_SUPPORTED;
    for (size_t k = 0; k < sizeof gpm_markers / sizeof gpm_markers[0]; k++) {
        unsigned int i = 0;
        while (i < g->count && g->ids[i] != gpm_markers[k])
            i++;
        if (i == g->count) {
            g->ids[g->count] = gpm_markers[k];
            g->metric_of[g->count++] = -1;
        }
    }
    if (!(g->got = malloc(sizeof *g->got)))
        return NVML_ERR_UNKNOWN;
    nvml_return_t rc = NVML_OK;
    for (int i = 0; i < 2 && rc == NVML_OK; i++)
        rc = g->api->gpm_sample_alloc(&g->samples[i]);
    uint64_t t0, t1;
    if (rc != NVML_OK || (rc = snapshot(g, 0, &t0, &t1)) != NVML_OK)
        return rc;
    counter_reader_init(&g->reader);
    counter_reader_feed(&g->reader, t0, t1, 0, &(struct counter_update){0});
    struct timespec pause = {0, 1000000}; /* metrics need two distinct snapshots */
    nanosleep(&pause, NULL);
    int seen;
    struct counter_update u;
    if ((rc = observe(g, &seen, &u)) != NVML_OK)
        return rc;
    if (seen)
        g->refreshed_ns = u.ts;
    for (unsigned int i = 0; i < g->count; i++)
        if (g->got->metrics[i].status == NVML_OK && g->metric_of[i] >= 0)
            g->mask |= 1u << g->metric_of[i];
    return g->mask ? NVML_OK : NVML_ERR_NOT_SUPPORTED;
}

/* Snapshots GPM_ACQUIRE_GAP_NS apart until the reader has seen two refreshes, writing the
 * sample between them. An NVML code. */
static nvml_return_t gpm_acquire(struct gpm_gpu *g)
{
    uint64_t give_up = nvml_now_ns() + GPM_ACQUIRE_MAX_NS;
    uint64_t before = g->refreshes;
    nvml_return_t rc = NVML_OK;
    while (rc == NVML_OK && g->refreshes < before + 2 && nvml_now_ns() < give_up) {
        struct timespec gap = {0, (long)GPM_ACQUIRE_GAP_NS};
        nanosleep(&gap, NULL);
        rc = sample_once(g);
    }
    return rc;
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
        if (g->metric_of[i] >= 0 && (g->mask & (1u << g->metric_of[i])))
            len += (size_t)snprintf(hardware + len, sizeof hardware - len, "%u", g->ids[i]) + 1;
    struct trace_gpu_metric_set set = {
        .set_id = t->set_id,
        .gpu_uuid = trace_cstr(t->uuid),
        .gpu_name = trace_cstr(t->name),
        .source = TRACE_GPU_METRICS_GPM,
        .period_ns = GPM_REFRESH_NS,
        .metrics = g->mask,
        .hardware = {(const uint8_t *)hardware, len},
        .nvml_index = t->gpu->nvml_index + 1,
    };
    gpu_metrics_put_set(t->sink, &set);
    if ((rc = gpm_acquire(g)) != NVML_OK) {
        *code = TRACE_GPU_METRICS_FAILED;
        snprintf(why, why_len, "NVML GPM: %s", g->api->error_string(rc));
        gpm_free(g);
        return NULL;
    }
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
