/* NVML GPM sampling of one GPU (gpu_metrics.h): where CUPTI PM sampling cannot run, NVML's GPU
 * Performance Monitoring (Hopper and later) gives most of the same metrics from two snapshots
 * of the GPU's counters. The driver refreshes what a snapshot returns only every 100 ms (NVML's
 * documentation says to sample no faster; on an H200, driver 580, snapshots 2 ms apart read
 * identical counters for 98 ms, then all change at once), and a snapshot holds the driver
 * ~2 ms. So the metrics between two snapshots describe the interval between the two refreshes
 * they hold, not the interval between the calls, and this sampler writes one sample per
 * refresh, from the refresh before to this one.
 *
 * When was a refresh? Each snapshot carries it: driver 580 keeps the refresh's CLOCK_REALTIME
 * nanoseconds in the sample's first bytes (at offset 8; on an H200 the metrics then line up
 * with CUPTI's kernel times within 1 point of a 40 % duty cycle, and placed 45-90 ms off
 * without it). The stamp is undocumented, so it is used only while it is plausible: between
 * the previous stamp and the call's own end, not older than a few refreshes, never going
 * back. Otherwise (another driver) the refreshes are located from outside, with the energy
 * counter's reader (src/energy/counter_reader.h: aimed snapshots narrow a refresh's time to
 * ~2 ms), a refresh showing as any metric changing (PCIe traffic, which the driver's own
 * polling keeps above zero on an idle GPU, is asked for to see it then).
 *
 * A refresh does not reach every counter at once: a snapshot taken just after it can hold
 * PCIe's new counters and the SMs' old ones (measured on an H200: the SM metrics then read 0
 * for that refresh and twice their share at the next), so one taken within GPM_SETTLE_NS of a
 * refresh is taken again. The metrics GPM lacks (sm_issue, dram_read, dram_write) are not in
 * its set; --gpu-metrics-frequency does not apply (the refresh sets the rate). */
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

/* The driver's refresh period, as announced in the set. */
#define GPM_REFRESH_NS 100000000ull
/* With stamps: a snapshot this long after the next refresh is due (far from it, where no
 * counter is being refreshed), and again this often while it is late. */
#define GPM_AFTER_NS 30000000ull
#define GPM_LATE_NS 10000000ull
/* A stamp older than this at the call is not a refresh time. */
#define GPM_STAMP_MAX_AGE_NS (5 * GPM_REFRESH_NS)
/* Where the driver keeps the refresh's CLOCK_REALTIME ns in a sample (driver 580). */
#define GPM_STAMP_OFFSET 8
/* Without stamps, until the first refresh the reader snapshots this far apart (so that the
 * first samples' edges are known within a few ms; at the reader's default 35 ms it takes
 * several refreshes to narrow that). */
#define GPM_ACQUIRE_GAP_NS 4000000ull
/* How long a refresh may take to reach every counter. */
#define GPM_SETTLE_NS 3000000ull
/* The start waits for the first refresh (and a sample) at most this long. */
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
    int stamped;                      /* refresh times from the samples' stamps */
    uint64_t stamp_real;              /* the last snapshot's stamp (CLOCK_REALTIME ns) */
    struct counter_reader reader;     /* without stamps: when to snapshot, when refreshes were */
    uint64_t refreshes;               /* refreshes seen */
    uint64_t refreshed_ns;            /* when the last one happened (0: none yet) */
    uint64_t next_read;               /* with stamps: when to snapshot next */
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

/* The refresh a snapshot taken in [t0, t1] carries: its stamp in *real, its time on
 * CLOCK_MONOTONIC in *at. 1 when plausible (not after the call, not much older, not before
 * the previous stamp), else 0. */
static int stamp_of(const struct gpm_gpu *g, int slot, uint64_t t0, uint64_t t1, uint64_t *real,
                    uint64_t *at)
{
    memcpy(real, (const unsigned char *)g->samples[slot].handle + GPM_STAMP_OFFSET, sizeof *real);
    int64_t mono = (int64_t)*real - gpu_metrics_realtime_offset();
    if (*real < g->stamp_real || mono > (int64_t)t1 ||
        mono + (int64_t)GPM_STAMP_MAX_AGE_NS < (int64_t)t0)
        return 0;
    *at = (uint64_t)mono;
    return 1;
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

/* Whether the snapshot in [t0, t1] holds a new refresh, and when that was (*at): from its
 * stamp, or (without) from the reader, fed whether any metric changed. */
static int refresh_of(struct gpm_gpu *g, int slot, uint64_t t0, uint64_t t1, uint64_t *at)
{
    uint64_t real;
    if (g->stamped && stamp_of(g, slot, t0, t1, &real, at)) {
        int fresh = real != g->stamp_real;
        g->stamp_real = real;
        return fresh;
    }
    g->stamped = 0; /* for good: the stamps cannot be trusted here */
    int changed = 0;
    for (unsigned int i = 0; i < g->count; i++)
        changed |= g->got->metrics[i].status == NVML_OK && g->got->metrics[i].value != 0;
    g->refreshes += (uint64_t)changed;
    struct counter_update u;
    if (!counter_reader_feed(&g->reader, t0, t1, g->refreshes, &u))
        return 0;
    *at = u.ts;
    return 1;
}

/* Takes the next snapshot and the metrics since the one before; *seen = 1 when it holds a new
 * refresh, made at *at. A snapshot taken within GPM_SETTLE_NS of that refresh is taken again
 * (see the top). An NVML code. */
static nvml_return_t observe(struct gpm_gpu *g, int *seen, uint64_t *at)
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
    *seen = refresh_of(g, slot, t0, t1, at);
    if (*seen && *at + GPM_SETTLE_NS > t0) {
        struct timespec settle = {0, (long)GPM_SETTLE_NS};
        nanosleep(&settle, NULL);
        if ((rc = snapshot(g, slot, &t0, &t1)) != NVML_OK || (rc = metrics(g)) != NVML_OK)
            return rc;
        uint64_t real;
        if (g->stamped && stamp_of(g, slot, t0, t1, &real, at))
            g->stamp_real = real; /* the refresh of what is kept */
    }
    return NVML_OK;
}

/* When to take the next snapshot. */
static uint64_t next_read(const struct gpm_gpu *g)
{
    return g->stamped ? g->next_read : counter_reader_next_start(&g->reader);
}

/* Takes the next snapshot; when it holds a refresh, writes the metrics from the refresh before
 * to this one. An NVML code. */
static nvml_return_t sample_once(struct gpm_gpu *g)
{
    int seen;
    uint64_t at;
    nvml_return_t rc = observe(g, &seen, &at);
    g->next_read = seen ? at + GPM_REFRESH_NS + GPM_AFTER_NS : nvml_now_ns() + GPM_LATE_NS;
    if (rc != NVML_OK || !seen)
        return rc;
    const struct nvml_gpm_metrics_get *m = g->got;
    uint64_t start = g->refreshed_ns, period = g->stamped ? GPM_REFRESH_NS : g->reader.period_ns;
    if (start && at < start + period / 2)
        return NVML_OK; /* the same refresh, placed again (without stamps) */
    g->refreshed_ns = at;
    if (!start)
        return NVML_OK; /* the first refresh seen: what came before it is unknown */
    /* refreshes between unseen (without stamps, all zero: an idle GPU without PCIe traffic)
     * leave this one's metrics to the last period alone */
    if (at - start > period + period / 2)
        start = at - period;
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
    gpu_metrics_thread_count(&g->th, start, at, period);
    gpu_metrics_put_sample(g->t.sink, &r);
    return NVML_OK;
}

static void *gpm_loop(void *arg)
{
    struct gpm_gpu *g = arg;
    nvml_return_t rc = NVML_OK;
    while (rc == NVML_OK) {
        int stopped = gpu_metrics_thread_sleep(&g->th, next_read(g));
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
    uint64_t t0, t1, at;
    if (rc != NVML_OK || (rc = snapshot(g, 0, &t0, &t1)) != NVML_OK)
        return rc;
    counter_reader_init(&g->reader);
    g->reader.acquire_gap_ns = GPM_ACQUIRE_GAP_NS;
    counter_reader_feed(&g->reader, t0, t1, 0, &(struct counter_update){0});
    /* the first snapshot holds the last refresh: with a plausible stamp, its time */
    uint64_t real;
    if ((g->stamped = stamp_of(g, 0, t0, t1, &real, &at)) != 0) {
        g->stamp_real = real;
        g->refreshed_ns = at;
    }
    struct timespec pause = {0, 1000000}; /* metrics need two distinct snapshots */
    nanosleep(&pause, NULL);
    int seen;
    if ((rc = observe(g, &seen, &at)) != NVML_OK)
        return rc;
    if (seen)
        g->refreshed_ns = at;
    g->next_read = g->refreshed_ns ? g->refreshed_ns + GPM_REFRESH_NS + GPM_AFTER_NS : t1;
    for (unsigned int i = 0; i < g->count; i++)
        if (g->got->metrics[i].status == NVML_OK && g->metric_of[i] >= 0)
            g->mask |= 1u << g->metric_of[i];
    return g->mask ? NVML_OK : NVML_ERR_NOT_SUPPORTED;
}

/* Snapshots until the first sample is written (two refreshes known), before the program
 * starts. An NVML code. */
static nvml_return_t gpm_acquire(struct gpm_gpu *g)
{
    uint64_t give_up = nvml_now_ns() + GPM_ACQUIRE_MAX_NS;
    nvml_return_t rc = NVML_OK;
    while (rc == NVML_OK && !g->th.samples && nvml_now_ns() < give_up) {
        uint64_t at = next_read(g), now = nvml_now_ns();
        if (at > now)
            nanosleep(&(struct timespec){(time_t)((at - now) / 1000000000u),
                                        (long)((at - now) % 1000000000u)},
                      NULL);
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
