/* The NVML side of bench/nvml_interference: a process that calls NVML in one named pattern at a
 * time, as a sampler in the launcher would, so that driver_victim can time its own driver calls
 * (cudaMalloc, cudaFree, launches, context creation) against each pattern in alternating blocks.
 *
 *   nvml_pattern serve         read a pattern name per line on stdin, switch to it, answer
 *                              "ok" on stdout; on "stats" print the last pattern's footprint
 *                              (NVML calls by kind, time in flight, CPU time); EOF ends
 *   nvml_pattern probe SECONDS read the energy counter back to back and print every read
 *                              (start, end, value), then the power samples the driver
 *                              buffered meanwhile (nvmlDeviceGetSamples)
 *
 * Patterns: idle, energy_b2b (the sampler before issue #11), energy_Nhz, field83_Nhz,
 * field191_Nhz, power_Nhz (instant field + averaged power), state_Nhz (clocks, utilization,
 * memory, temperature, throttle reasons), memory_Nhz, util_Nhz, samples_Nhz
 * (nvmlDeviceGetSamples), init_Nhz (nvmlInit/nvmlShutdown pairs), and sampler (Lantern's own
 * launcher sampler, nvml_sampler_start with its defaults, writing to /dev/null). */
#include "energy/counter_reader.h"
#include "launcher/nvml_sampler.h"
#include "launcher/samplers.h"
#include "nvml/nvml_iface.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define FIELD_ENERGY_MODULE 191 /* NVML_FI_DEV_ENERGY */
#define SAMPLES_MAX 4096

struct nvml_sample { /* nvmlSample_t */
    unsigned long long timestamp_us;
    union nvml_value value;
};
typedef nvml_return_t (*get_samples_fn)(nvml_device_t, int, unsigned long long, int *,
                                        unsigned int *, struct nvml_sample *);

static struct nvml nvml;
static struct nvml_gpu *gpu;
static get_samples_fn get_samples;

enum { K_ENERGY, K_FIELD, K_POWER, K_STATE, K_SAMPLES, K_INIT, K_COUNT };
static const char *kind_names[K_COUNT] = {"energy", "field", "power", "state", "samples", "init"};

struct footprint {
    uint64_t calls[K_COUNT];
    uint64_t busy_ns[K_COUNT];
    uint64_t max_ns[K_COUNT];
    uint64_t start_ns;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char pattern[128] = "idle"; /* guarded by lock */
static unsigned generation;        /* guarded by lock: bumped at each switch */
static struct footprint foot;      /* guarded by lock */

static uint64_t now_ns(void)
{
    return nvml_now_ns();
}

static void sleep_until(uint64_t deadline)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

static void account(int kind, uint64_t t0, uint64_t t1)
{
    pthread_mutex_lock(&lock);
    foot.calls[kind]++;
    foot.busy_ns[kind] += t1 - t0;
    if (t1 - t0 > foot.max_ns[kind])
        foot.max_ns[kind] = t1 - t0;
    pthread_mutex_unlock(&lock);
}

/* One turn of a pattern's calls, timed and counted under its kind. */
static void one_turn(const char *name)
{
    const struct nvml_api *a = &nvml.api;
    unsigned int u;
    unsigned long long ull;
    uint64_t t0 = now_ns();
    int kind;
    if (strncmp(name, "energy", 6) == 0) {
        a->total_energy(gpu->device, &ull);
        kind = K_ENERGY;
    } else if (strncmp(name, "field83", 7) == 0 || strncmp(name, "field191", 8) == 0) {
        struct nvml_field_value v = {.field_id = name[5] == '8' ? NVML_FIELD_TOTAL_ENERGY
                                                                : FIELD_ENERGY_MODULE};
        a->field_values(gpu->device, 1, &v);
        kind = K_FIELD;
    } else if (strncmp(name, "power", 5) == 0) {
        struct nvml_field_value v = {.field_id = NVML_FIELD_POWER_INSTANT};
        a->field_values(gpu->device, 1, &v);
        a->power_usage(gpu->device, &u);
        kind = K_POWER;
    } else if (strncmp(name, "state", 5) == 0) {
        struct nvml_utilization util;
        struct nvml_memory mem;
        a->clock(gpu->device, NVML_CLOCK_KIND_SM, &u);
        a->clock(gpu->device, NVML_CLOCK_KIND_MEM, &u);
        a->utilization(gpu->device, &util);
        a->memory(gpu->device, &mem);
        a->temperature(gpu->device, NVML_TEMPERATURE_SENSOR_GPU, &u);
        if (a->clock_reasons)
            a->clock_reasons(gpu->device, &ull);
        kind = K_STATE;
    } else if (strncmp(name, "memory", 6) == 0) {
        struct nvml_memory mem;
        a->memory(gpu->device, &mem);
        kind = K_STATE;
    } else if (strncmp(name, "util", 4) == 0) {
        struct nvml_utilization util;
        a->utilization(gpu->device, &util);
        kind = K_STATE;
    } else if (strncmp(name, "samples", 7) == 0) {
        static struct nvml_sample buf[SAMPLES_MAX];
        unsigned int count = SAMPLES_MAX;
        int type;
        if (get_samples)
            get_samples(gpu->device, 0 /* NVML_TOTAL_POWER_SAMPLES */, 0, &type, &count, buf);
        kind = K_SAMPLES;
    } else if (strncmp(name, "init", 4) == 0) {
        a->init();
        a->shutdown();
        kind = K_INIT;
    } else {
        return;
    }
    account(kind, t0, now_ns());
}

/* Rate from a pattern's name: "energy_20hz" -> 20; back to back (0) for "_b2b". */
static double pattern_hz(const char *name)
{
    const char *u = strrchr(name, '_');
    return u && strstr(u, "hz") ? atof(u + 1) : 0;
}

static void *pattern_thread(void *arg)
{
    (void)arg;
    struct nvml_sampler *sampler = NULL;
    struct launcher_file *out = NULL;
    unsigned seen = ~0u;
    char name[128] = "idle";
    uint64_t next = now_ns();
    for (;;) {
        pthread_mutex_lock(&lock);
        unsigned gen = generation;
        if (gen != seen)
            snprintf(name, sizeof name, "%s", pattern);
        pthread_mutex_unlock(&lock);
        if (gen != seen) {
            seen = gen;
            if (sampler) {
                nvml_sampler_stop(sampler);
                sampler = NULL;
            }
            if (strcmp(name, "sampler") == 0) {
                char why[256];
                if (!out && launcher_file_open(open("/dev/null", O_WRONLY), -1, 0, &out) < 0)
                    fprintf(stderr, "nvml_pattern: cannot open /dev/null\n");
                else if (nvml_sampler_start(out, NULL, 0, &sampler, why, sizeof why) != 0)
                    fprintf(stderr, "nvml_pattern: sampler: %s\n", why);
            }
            next = now_ns();
        }
        if (strcmp(name, "quit") == 0)
            break;
        if (strcmp(name, "idle") == 0 || strcmp(name, "sampler") == 0) {
            sleep_until(now_ns() + 1000000);
            continue;
        }
        one_turn(name);
        double hz = pattern_hz(name);
        if (hz > 0) {
            next += (uint64_t)(1e9 / hz);
            if (next < now_ns())
                next = now_ns();
            sleep_until(next);
        }
    }
    if (sampler)
        nvml_sampler_stop(sampler);
    launcher_file_close(out);
    return NULL;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static int serve(void)
{
    pthread_t t;
    pthread_create(&t, NULL, pattern_thread, NULL);
    char line[128];
    uint64_t cpu0 = cpu_ns();
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strcmp(line, "stats") == 0) {
            pthread_mutex_lock(&lock);
            double secs = (double)(now_ns() - foot.start_ns) / 1e9;
            printf("pattern=%s secs=%.3f cpu_ms=%.3f", pattern, secs,
                   (double)(cpu_ns() - cpu0) / 1e6);
            uint64_t busy = 0;
            for (int k = 0; k < K_COUNT; k++) {
                busy += foot.busy_ns[k];
                if (foot.calls[k])
                    printf(" %s_per_s=%.1f %s_mean_ms=%.3f %s_max_ms=%.3f", kind_names[k],
                           (double)foot.calls[k] / secs, kind_names[k],
                           (double)foot.busy_ns[k] / (double)foot.calls[k] / 1e6, kind_names[k],
                           (double)foot.max_ns[k] / 1e6);
            }
            printf(" in_flight=%.4f\n", (double)busy / 1e9 / secs);
            pthread_mutex_unlock(&lock);
            continue;
        }
        pthread_mutex_lock(&lock);
        snprintf(pattern, sizeof pattern, "%s", line);
        generation++;
        memset(&foot, 0, sizeof foot);
        foot.start_ns = now_ns();
        pthread_mutex_unlock(&lock);
        cpu0 = cpu_ns();
        printf("ok\n");
    }
    pthread_mutex_lock(&lock);
    snprintf(pattern, sizeof pattern, "quit");
    generation++;
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    return 0;
}

/* ---- probe: how the counter and the driver's power samples behave ----------------------- */

static int64_t realtime_minus_monotonic_us(void)
{
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000 + (r.tv_nsec - m.tv_nsec) / 1000;
}

static int probe(double seconds)
{
    const struct nvml_api *a = &nvml.api;
    int64_t offset_us = realtime_minus_monotonic_us();
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
    unsigned long long first_ts_us = (unsigned long long)((int64_t)(start / 1000) + offset_us);
    int changes = 0;
    unsigned long long last = 0;
    printf("# read start_ms end_ms value_mj (CLOCK_MONOTONIC since the probe began)\n");
    while (now_ns() < end) {
        unsigned long long mj;
        uint64_t t0 = now_ns();
        int rc = a->total_energy(gpu->device, &mj);
        uint64_t t1 = now_ns();
        if (rc != NVML_OK) {
            printf("energy read failed: %d\n", rc);
            return 1;
        }
        printf("read %.3f %.3f %llu\n", (double)(t0 - start) / 1e6, (double)(t1 - start) / 1e6, mj);
        changes += last && mj != last;
        last = mj;
    }
    printf("changes=%d over %.1f s\n", changes, seconds);
    if (get_samples) {
        static struct nvml_sample buf[SAMPLES_MAX];
        unsigned int count = SAMPLES_MAX;
        int type = -1;
        uint64_t t0 = now_ns();
        int rc = get_samples(gpu->device, 0, first_ts_us, &type, &count, buf);
        uint64_t t1 = now_ns();
        printf("getsamples rc=%d type=%d count=%u cost_ms=%.3f\n", rc, type, count,
               (double)(t1 - t0) / 1e6);
        for (unsigned int i = 0; rc == 0 && i < count; i++)
            printf("sample %.3f %u\n",
                   ((double)((int64_t)buf[i].timestamp_us - offset_us) * 1e3 - (double)start) / 1e6,
                   buf[i].value.ui);
    }
    return 0;
}

/* ---- schedule: the counter reader's reads against the real counter ------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int schedule(double seconds)
{
    enum { ACQUIRE, AIMED, CHECK, AFTER, FREE, PURPOSES };
    static const char *purpose_names[PURPOSES] = {"acquire", "aimed", "check", "after", "free"};
    static uint64_t took[1 << 16];
    uint64_t count[PURPOSES] = {0}, updates = 0, n = 0;
    struct counter_reader r;
    counter_reader_init(&r);
    uint64_t begin = now_ns(), end_at = begin + (uint64_t)(seconds * 1e9);
    printf("# read purpose start_ms took_ms changed window_lo_ms window_hi_ms mode resets\n");
    while (now_ns() < end_at && n < sizeof took / sizeof took[0]) {
        uint64_t at = counter_reader_next_start(&r);
        if (at > now_ns())
            sleep_until(at);
        int purpose = r.mode == COUNTER_ACQUIRE ? ACQUIRE : r.mode == COUNTER_FREE ? FREE : AFTER;
        uint64_t lo = r.win_lo, hi = r.win_hi;
        unsigned long long mj;
        uint64_t t0 = now_ns();
        if (nvml.api.total_energy(gpu->device, &mj) != NVML_OK) {
            printf("energy read failed\n");
            return 1;
        }
        uint64_t t1 = now_ns();
        if (purpose == AFTER && t1 < lo)
            purpose = CHECK;
        else if (purpose == AFTER && t0 < hi)
            purpose = AIMED;
        struct counter_update u;
        int changed = counter_reader_feed(&r, t0, t1, mj, &u);
        updates += changed;
        count[purpose]++;
        took[n++] = t1 - t0;
        printf("read %s %.3f %.3f %d %.3f %.3f %d %llu\n", purpose_names[purpose],
               (double)(t0 - begin) / 1e6, (double)(t1 - t0) / 1e6, changed,
               lo ? ((double)lo - (double)begin) / 1e6 : 0, hi ? ((double)hi - (double)begin) / 1e6 : 0,
               (int)r.mode, (unsigned long long)r.resets);
    }
    double secs = (double)(now_ns() - begin) / 1e9;
    qsort(took, n, sizeof took[0], cmp_u64);
    printf("schedule seconds=%.1f reads/s=%.2f updates/s=%.2f", secs, n / secs, updates / secs);
    for (int i = 0; i < PURPOSES; i++)
        printf(" %s/s=%.2f", purpose_names[i], count[i] / secs);
    printf(" resets=%llu mode=%d took_ms p25=%.2f p50=%.2f p75=%.2f p95=%.2f\n",
           (unsigned long long)r.resets, (int)r.mode, n ? took[n / 4] / 1e6 : 0,
           n ? took[n / 2] / 1e6 : 0, n ? took[3 * n / 4] / 1e6 : 0, n ? took[95 * n / 100] / 1e6 : 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nvml_pattern serve | probe SECONDS | schedule SECONDS\n");
        return 2;
    }
    if (nvml_open(&nvml) != 0) {
        fprintf(stderr, "nvml_pattern: %s\n", nvml.disabled_reason);
        return 77;
    }
    gpu = &nvml.gpus[0];
    get_samples = (get_samples_fn)dlsym(nvml.library, "nvmlDeviceGetSamples");
    double seconds = argc > 2 ? atof(argv[2]) : 5;
    int rc = strcmp(argv[1], "probe") == 0      ? probe(seconds)
             : strcmp(argv[1], "schedule") == 0 ? schedule(seconds)
                                                : serve();
    nvml_close(&nvml);
    return rc;
}
