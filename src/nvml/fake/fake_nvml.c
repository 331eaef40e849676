/* A test double for NVML: a shared library exporting the NVML functions Lantern uses, with
 * GPUs, power over time and faults read from the script named by $LANTERN_FAKE_NVML_SCRIPT.
 * The energy counter integrates the scripted power exactly and, like H100/H200, changes only
 * every energy_period_ms (100 by default), so tests know the exact joules to expect.
 *
 * Script lines ('#' starts a comment; times in ms after the epoch):
 *   epoch_ns N                 CLOCK_MONOTONIC ns of time 0 (default: when the library loads)
 *   gpu UUID NAME [mig] [no_energy] [no_instant]
 *   power GPU T_MS MW          from T_MS on, GPU (0-based, script order) draws MW milliwatts
 *   energy_period_ms N         counter update period (default 100)
 *   power_hold_ms N            the power readings hold the instantaneous power of the last
 *                              multiple of N ms (H200's sensor: one reading per ~100 ms);
 *                              default 0: the power at the call
 *   energy_start_mj N          counter value at time 0 (default 1000000)
 *   fail FUNCTION N [CODE]     the Nth call of FUNCTION (1-based) returns CODE (default 999)
 *   init_error CODE            nvmlInit_v2 returns CODE (4: no permission, 9: no driver)
 *   latency FUNCTION MS        each call of FUNCTION takes MS milliseconds (a real energy
 *                              counter read takes 2.7-4.6 ms on an H100), holding the driver
 *                              lock meanwhile, and returns values as of its end
 *   driver_lock PATH           the driver lock: a file that slow calls lock (flock) for their
 *                              whole duration; a test program takes it around its own
 *                              "driver calls" to measure how long it waits behind NVML
 *   gpm GPU METRIC T_MS VALUE  from T_MS on, GPM metric METRIC (nvmlGpmMetricId_t) of GPU
 *                              reads VALUE: nvmlGpmMetricsGet gives its exact time-weighted
 *                              mean between the refreshes the two samples saw (0 when they
 *                              saw the same one); metrics never scripted answer
 *                              NVML_ERROR_NOT_SUPPORTED
 *   gpm_refresh_ms N           a GPM sample holds the counters of the last refresh, every N ms
 *                              on a grid from time 0, like H100/H200's driver (default 100),
 *                              and at byte 8 the refresh's CLOCK_REALTIME ns, as driver 580
 *   gpm_no_stamp               ... and 0 there instead (another driver)
 *   gpm_unsupported GPU        nvmlGpmQueryDeviceSupport says GPU has no GPM */
#include "nvml/nvml_iface.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_STEPS 256
#define FAKE_MAX_FAULTS 16
#define FAKE_MAX_LATENCIES 8
#define FAKE_MAX_GPM_STEPS 256

struct fake_step {
    double t_ms;
    double mw;
};

struct fake_gpm_step {
    unsigned int metric;
    double t_ms, value;
};

struct fake_gpu {
    char uuid[NVML_UUID_LEN];
    char name[NVML_NAME_LEN];
    int mig, no_energy, no_instant, no_gpm;
    struct fake_step steps[FAKE_MAX_STEPS];
    int step_count;
    struct fake_gpm_step gpm[FAKE_MAX_GPM_STEPS];
    int gpm_count;
};

struct fake_gpm_sample { /* what nvmlGpmSampleGet keeps */
    const struct fake_gpu *gpu;
    uint64_t stamp_ns; /* the refresh's CLOCK_REALTIME ns, where driver 580 keeps it */
    double t_ms;       /* the refresh's time */
};

struct fake_fault {
    char function[64];
    unsigned long nth;
    int code;
    unsigned long calls;
};

struct fake_latency {
    char function[64];
    double ms;
};

static struct {
    uint64_t epoch_ns;
    double period_ms;
    double gpm_refresh_ms;
    int gpm_no_stamp;
    int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, once per script: the stamps'
                                   clock, which stays put for one refresh */
    double start_mj;
    double power_hold_ms;
    int init_error;
    struct fake_gpu gpus[8];
    unsigned int gpu_count;
    struct fake_fault faults[FAKE_MAX_FAULTS];
    int fault_count;
    struct fake_latency latencies[FAKE_MAX_LATENCIES];
    int latency_count;
    int lock_fd; /* the driver lock's file, -1: none */
} fake = {.lock_fd = -1};

static uint64_t fake_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void parse_line(char *line)
{
    char word[64], a[NVML_UUID_LEN], b[NVML_NAME_LEN];
    unsigned long long n;
    double t, mw;
    int code;
    if (sscanf(line, "%63s", word) != 1 || word[0] == '#')
        return;
    if (!strcmp(word, "epoch_ns") && sscanf(line, "%*s %llu", &n) == 1)
        fake.epoch_ns = n;
    else if (!strcmp(word, "energy_period_ms"))
        sscanf(line, "%*s %lf", &fake.period_ms);
    else if (!strcmp(word, "gpm_no_stamp"))
        fake.gpm_no_stamp = 1;
    else if (!strcmp(word, "gpm_refresh_ms"))
        sscanf(line, "%*s %lf", &fake.gpm_refresh_ms);
    else if (!strcmp(word, "energy_start_mj"))
        sscanf(line, "%*s %lf", &fake.start_mj);
    else if (!strcmp(word, "power_hold_ms"))
        sscanf(line, "%*s %lf", &fake.power_hold_ms);
    else if (!strcmp(word, "init_error"))
        sscanf(line, "%*s %d", &fake.init_error);
    else if (!strcmp(word, "gpu") && fake.gpu_count < 8 &&
             sscanf(line, "%*s %95s %95s", a, b) == 2) {
        struct fake_gpu *g = &fake.gpus[fake.gpu_count++];
        snprintf(g->uuid, sizeof g->uuid, "%s", a);
        snprintf(g->name, sizeof g->name, "%s", b);
        g->mig = strstr(line, " mig") != NULL;
        g->no_energy = strstr(line, "no_energy") != NULL;
        g->no_instant = strstr(line, "no_instant") != NULL;
    } else if (!strcmp(word, "power") && sscanf(line, "%*s %llu %lf %lf", &n, &t, &mw) == 3 &&
               n < fake.gpu_count && fake.gpus[n].step_count < FAKE_MAX_STEPS) {
        struct fake_gpu *g = &fake.gpus[n];
        g->steps[g->step_count++] = (struct fake_step){t, mw};
    } else if (!strcmp(word, "gpm") &&
               sscanf(line, "%*s %llu %d %lf %lf", &n, &code, &t, &mw) == 4 && n < fake.gpu_count &&
               fake.gpus[n].gpm_count < FAKE_MAX_GPM_STEPS) {
        struct fake_gpu *g = &fake.gpus[n];
        g->gpm[g->gpm_count++] = (struct fake_gpm_step){(unsigned int)code, t, mw};
    } else if (!strcmp(word, "gpm_unsupported") && sscanf(line, "%*s %llu", &n) == 1 &&
               n < fake.gpu_count) {
        fake.gpus[n].no_gpm = 1;
    } else if (!strcmp(word, "latency") && fake.latency_count < FAKE_MAX_LATENCIES) {
        struct fake_latency *l = &fake.latencies[fake.latency_count];
        if (sscanf(line, "%*s %63s %lf", l->function, &l->ms) == 2)
            fake.latency_count++;
    } else if (!strcmp(word, "driver_lock") && sscanf(line, "%*s %95s", a) == 1) {
        fake.lock_fd = open(a, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    } else if (!strcmp(word, "fail") && fake.fault_count < FAKE_MAX_FAULTS) {
        struct fake_fault *f = &fake.faults[fake.fault_count];
        f->code = NVML_ERR_UNKNOWN;
        int fields = sscanf(line, "%*s %63s %lu %d", f->function, &f->nth, &code);
        if (fields == 3)
            f->code = code;
        if (fields >= 2)
            fake.fault_count++;
    }
}

/* Each nvmlInit_v2 reads the script afresh, so one test process can run several scripts. */
static void load_script(void)
{
    uint64_t loaded_at = fake.epoch_ns;
    if (fake.lock_fd >= 0)
        close(fake.lock_fd);
    memset(&fake, 0, sizeof fake);
    fake.lock_fd = -1;
    fake.epoch_ns = loaded_at;
    fake.period_ms = 100;
    fake.gpm_refresh_ms = 100;
    fake.start_mj = 1000000;
    struct timespec mono, real;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    fake.realtime_offset_ns =
        ((int64_t)real.tv_sec - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
    const char *path = getenv("LANTERN_FAKE_NVML_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        parse_line(line);
    fclose(f);
}

__attribute__((constructor)) static void fake_loaded(void)
{
    fake.epoch_ns = fake_now_ns();
}

/* A scripted slow call: holds the driver lock for its latency. */
static void delay(const char *function)
{
    for (int i = 0; i < fake.latency_count; i++) {
        if (strcmp(fake.latencies[i].function, function) != 0)
            continue;
        if (fake.lock_fd >= 0)
            flock(fake.lock_fd, LOCK_EX);
        uint64_t ns = (uint64_t)(fake.latencies[i].ms * 1e6);
        struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                              .tv_nsec = (long)(ns % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0)
            ;
        if (fake.lock_fd >= 0)
            flock(fake.lock_fd, LOCK_UN);
    }
}

/* Returns the scripted error for this call of `function`, or NVML_OK, after the call's
 * scripted latency. */
static nvml_return_t injected(const char *function)
{
    delay(function);
    for (int i = 0; i < fake.fault_count; i++) {
        struct fake_fault *f = &fake.faults[i];
        if (strcmp(f->function, function) != 0)
            continue;
        if (__atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED) == f->nth)
            return f->code;
    }
    return NVML_OK;
}

static double now_ms(void)
{
    return (double)(int64_t)(fake_now_ns() - fake.epoch_ns) / 1e6;
}

static double power_at(const struct fake_gpu *g, double t_ms)
{
    double mw = 0;
    for (int i = 0; i < g->step_count && g->steps[i].t_ms <= t_ms; i++)
        mw = g->steps[i].mw;
    return mw;
}

/* Exact integral of the step function from 0 to t_ms, in mJ. */
static double energy_until(const struct fake_gpu *g, double t_ms)
{
    double mj = 0;
    for (int i = 0; i < g->step_count && g->steps[i].t_ms < t_ms; i++) {
        double end =
            i + 1 < g->step_count && g->steps[i + 1].t_ms < t_ms ? g->steps[i + 1].t_ms : t_ms;
        mj += g->steps[i].mw * (end - g->steps[i].t_ms) / 1000.0;
    }
    return mj;
}

/* What the power sensor reads now (power_hold_ms). */
static double sensor_mw(const struct fake_gpu *g)
{
    double t = now_ms();
    if (fake.power_hold_ms > 0 && t > 0)
        t = floor(t / fake.power_hold_ms) * fake.power_hold_ms;
    return power_at(g, t);
}

static struct fake_gpu *gpu_of(nvml_device_t d)
{
    uintptr_t i = (uintptr_t)d;
    return i >= 1 && i <= fake.gpu_count ? &fake.gpus[i - 1] : NULL;
}

#define FAULT(fn)                                                                                  \
    do {                                                                                           \
        nvml_return_t rc_ = injected(fn);                                                          \
        if (rc_ != NVML_OK)                                                                        \
            return rc_;                                                                            \
    } while (0)

EXPORT nvml_return_t nvmlInit_v2(void)
{
    load_script();
    FAULT("nvmlInit_v2");
    return fake.init_error;
}

EXPORT nvml_return_t nvmlShutdown(void)
{
    return NVML_OK;
}

EXPORT const char *nvmlErrorString(nvml_return_t rc)
{
    switch (rc) {
    case NVML_OK:
        return "Success";
    case NVML_ERR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

EXPORT nvml_return_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    FAULT("nvmlDeviceGetCount_v2");
    *count = fake.gpu_count;
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_device_t *d)
{
    FAULT("nvmlDeviceGetHandleByIndex_v2");
    if (i >= fake.gpu_count)
        return NVML_ERR_INVALID_ARGUMENT;
    *d = (nvml_device_t)(uintptr_t)(i + 1);
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetUUID(nvml_device_t d, char *out, unsigned int len)
{
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    snprintf(out, len, "%s", g->uuid);
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetName(nvml_device_t d, char *out, unsigned int len)
{
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    snprintf(out, len, "%s", g->name);
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetMigMode(nvml_device_t d, unsigned int *cur, unsigned int *pend)
{
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    *cur = *pend = (unsigned int)g->mig;
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetPowerUsage(nvml_device_t d, unsigned int *mw)
{
    FAULT("nvmlDeviceGetPowerUsage");
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    *mw = (unsigned int)sensor_mw(g);
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetFieldValues(nvml_device_t d, int count,
                                              struct nvml_field_value *values)
{
    FAULT("nvmlDeviceGetFieldValues");
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        struct nvml_field_value *v = &values[i];
        v->status = NVML_ERR_NOT_SUPPORTED;
        if (v->field_id != NVML_FIELD_POWER_INSTANT || g->no_instant)
            continue;
        v->status = NVML_OK;
        v->value_type = NVML_VALUE_KIND_UINT;
        v->value.ui = (unsigned int)sensor_mw(g);
    }
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetTotalEnergyConsumption(nvml_device_t d, unsigned long long *mj)
{
    FAULT("nvmlDeviceGetTotalEnergyConsumption");
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    if (g->no_energy)
        return NVML_ERR_NOT_SUPPORTED;
    double t = now_ms();
    double last_update = t < 0 ? 0 : floor(t / fake.period_ms) * fake.period_ms;
    *mj = (unsigned long long)floor(fake.start_mj + energy_until(g, last_update));
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetEnforcedPowerLimit(nvml_device_t d, unsigned int *mw)
{
    *mw = 700000;
    return gpu_of(d) ? NVML_OK : NVML_ERR_INVALID_ARGUMENT;
}

EXPORT nvml_return_t nvmlDeviceGetClockInfo(nvml_device_t d, int type, unsigned int *mhz)
{
    FAULT("nvmlDeviceGetClockInfo");
    *mhz = type == NVML_CLOCK_KIND_SM ? 1980 : 2619;
    return gpu_of(d) ? NVML_OK : NVML_ERR_INVALID_ARGUMENT;
}

EXPORT nvml_return_t nvmlDeviceGetUtilizationRates(nvml_device_t d, struct nvml_utilization *u)
{
    struct fake_gpu *g = gpu_of(d);
    if (!g)
        return NVML_ERR_INVALID_ARGUMENT;
    u->gpu = power_at(g, now_ms()) > 200000 ? 100 : 0; /* busy when drawing over 200 W */
    u->memory = u->gpu / 2;
    return NVML_OK;
}

EXPORT nvml_return_t nvmlDeviceGetMemoryInfo(nvml_device_t d, struct nvml_memory *m)
{
    m->total = 80ull << 30;
    m->used = 1ull << 30;
    m->free = m->total - m->used;
    return gpu_of(d) ? NVML_OK : NVML_ERR_INVALID_ARGUMENT;
}

EXPORT nvml_return_t nvmlDeviceGetTemperature(nvml_device_t d, int sensor, unsigned int *c)
{
    *c = sensor == NVML_TEMPERATURE_SENSOR_GPU ? 45 : 0;
    return gpu_of(d) ? NVML_OK : NVML_ERR_INVALID_ARGUMENT;
}

EXPORT nvml_return_t nvmlDeviceGetCurrentClocksEventReasons(nvml_device_t d,
                                                            unsigned long long *reasons)
{
    *reasons = 0;
    return gpu_of(d) ? NVML_OK : NVML_ERR_INVALID_ARGUMENT;
}

/* ---- GPM ---------------------------------------------------------------------------------- */

EXPORT nvml_return_t nvmlGpmQueryDeviceSupport(nvml_device_t d, struct nvml_gpm_support *s)
{
    FAULT("nvmlGpmQueryDeviceSupport");
    struct fake_gpu *g = gpu_of(d);
    if (!g || s->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERR_INVALID_ARGUMENT;
    s->is_supported_device = !g->no_gpm;
    return NVML_OK;
}

EXPORT nvml_return_t nvmlGpmSampleAlloc(nvml_gpm_sample_t *sample)
{
    sample->handle = calloc(1, sizeof(struct fake_gpm_sample));
    return sample->handle ? NVML_OK : NVML_ERR_UNKNOWN;
}

EXPORT nvml_return_t nvmlGpmSampleFree(nvml_gpm_sample_t sample)
{
    free(sample.handle);
    return NVML_OK;
}

EXPORT nvml_return_t nvmlGpmSampleGet(nvml_device_t d, nvml_gpm_sample_t sample)
{
    FAULT("nvmlGpmSampleGet");
    struct fake_gpu *g = gpu_of(d);
    struct fake_gpm_sample *s = sample.handle;
    if (!g || !s)
        return NVML_ERR_INVALID_ARGUMENT;
    s->gpu = g;
    double t = now_ms();
    s->t_ms = t < 0 ? 0 : floor(t / fake.gpm_refresh_ms) * fake.gpm_refresh_ms;
    s->stamp_ns = fake.gpm_no_stamp ? 0
                                    : (uint64_t)((int64_t)fake.epoch_ns +
                                                 (int64_t)(s->t_ms * 1e6) + fake.realtime_offset_ns);
    return NVML_OK;
}

/* The metric's exact mean over [a, b] ms (0 when a = b: nothing counted between); -1 when the
 * script never sets it. */
static double gpm_mean(const struct fake_gpu *g, unsigned int metric, double a, double b)
{
    double acc = 0, value = 0, at = a;
    int seen = 0;
    for (int i = 0; i < g->gpm_count; i++) {
        const struct fake_gpm_step *st = &g->gpm[i];
        if (st->metric != metric)
            continue;
        seen = 1;
        if (st->t_ms > at && st->t_ms < b) {
            acc += value * (st->t_ms - at);
            at = st->t_ms;
        }
        if (st->t_ms <= b)
            value = st->value;
    }
    acc += value * (b - at);
    return !seen ? -1 : b > a ? acc / (b - a) : 0;
}

EXPORT nvml_return_t nvmlGpmMetricsGet(struct nvml_gpm_metrics_get *m)
{
    FAULT("nvmlGpmMetricsGet");
    const struct fake_gpm_sample *s1 = m->sample1.handle, *s2 = m->sample2.handle;
    if (m->version != NVML_GPM_METRICS_GET_VERSION || !s1 || !s2 || !s1->gpu ||
        s1->gpu != s2->gpu || m->num_metrics > NVML_GPM_METRICS_MAX)
        return NVML_ERR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < m->num_metrics; i++) {
        double v = gpm_mean(s1->gpu, m->metrics[i].metric_id, s1->t_ms, s2->t_ms);
        m->metrics[i].status = v < 0 ? NVML_ERR_NOT_SUPPORTED : NVML_OK;
        m->metrics[i].value = v < 0 ? 0 : v;
    }
    return NVML_OK;
}
