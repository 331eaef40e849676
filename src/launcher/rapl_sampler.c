/* The launcher's RAPL sampler (`lantern profile`, source "rapl"): one thread in the launcher
 * reads each CPU package's powercap counters (src/energy/rapl.h) every RAPL_PERIOD_NS and
 * appends TRACE_RAPL_SAMPLE records to launcher.lrt, unwrapped: each holds the energy since
 * the first read. Where nothing can be read it records why (TRACE_RAPL_DISABLED) only when
 * -t named rapl, so that the default run on a host without RAPL stays silent. */
#include "energy/rapl.h"
#include "launcher/samplers.h"
#include "trace/codec.h"
#include "trace/format.h"
#include "trace/list.h"
#include "trace/records.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* powercap's counters update about every 1 ms, and a read costs a few µs: 10 Hz is plenty for
 * per-range energy (interpolated between reads) and costs nothing. */
#define RAPL_PERIOD_NS 100000000ull
#define RAPL_FLUSH_NS 1000000000ull
#define RAPL_BUFFER_BYTES (64u << 10)

/* One zone's counter: the last raw value read and the energy since the first read. */
struct zone_track {
    int present;
    uint64_t last_uj, total_uj;
};

struct rapl_sampler {
    struct launcher_file *file;
    int count;
    struct rapl_package packages[RAPL_MAX_PACKAGES];
    struct zone_track package[RAPL_MAX_PACKAGES], dram[RAPL_MAX_PACKAGES];
    pthread_t thread;
    int stop;             /* set under lock, with wake broadcast */
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t wake;
    uint64_t next_flush;
    struct trace_chunk_builder chunk; /* the thread's, then stop's after the join */
    uint8_t buffer[RAPL_BUFFER_BYTES];
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void flush(struct rapl_sampler *s)
{
    launcher_file_flush(s->file, &s->chunk, s->buffer, sizeof s->buffer, now_ns());
}

/* Reads a zone into its track; 0, or rapl_read's error (the track keeps its total). */
static int zone_update(const struct rapl_zone *z, struct zone_track *t)
{
    uint64_t uj;
    int rc = rapl_read(z, &uj);
    if (rc != 0)
        return rc;
    if (t->present)
        t->total_uj += rapl_uj_between(z, t->last_uj, uj);
    t->present = 1;
    t->last_uj = uj;
    return 0;
}

/* Appends package i's sample at ts from its tracks. */
static void put_sample(struct rapl_sampler *s, int i, uint64_t ts)
{
    struct trace_rapl_sample r = {.package = (uint64_t)s->packages[i].index,
                                  .ts = ts,
                                  .energy_uj = s->package[i].total_uj,
                                  .dram_energy_uj =
                                      s->dram[i].present ? s->dram[i].total_uj + 1 : 0};
    if (trace_put_rapl_sample(&s->chunk, &r) != 0) {
        flush(s);
        trace_put_rapl_sample(&s->chunk, &r);
    }
}

/* One read of every package, one record each (a package whose counter could not be read this
 * time has none; a DRAM zone that could not is left out of that record). */
static void sample(struct rapl_sampler *s)
{
    for (int i = 0; i < s->count; i++) {
        const struct rapl_package *p = &s->packages[i];
        uint64_t ts = now_ns();
        if (zone_update(&p->package, &s->package[i]) != 0)
            continue;
        if (s->dram[i].present && zone_update(&p->dram, &s->dram[i]) != 0)
            s->dram[i].present = 0;
        put_sample(s, i, ts);
    }
}

/* Sleeps until deadline or until the sampler stops; -EINTR when it stopped. */
static int wait_until(struct rapl_sampler *s, uint64_t deadline)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    pthread_mutex_lock(&s->lock);
    while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &ts) != ETIMEDOUT)
        ;
    int stopped = s->stop;
    pthread_mutex_unlock(&s->lock);
    return stopped ? -EINTR : 0;
}

static void *sampler_thread(void *arg)
{
    struct rapl_sampler *s = arg;
    uint64_t next = now_ns() + RAPL_PERIOD_NS;
    while (wait_until(s, next) == 0) {
        sample(s);
        uint64_t now = now_ns();
        if (now >= s->next_flush || s->chunk.len > sizeof s->buffer / 2) {
            flush(s);
            s->next_flush = now + RAPL_FLUSH_NS;
        }
        next += RAPL_PERIOD_NS;
        if (next < now) /* the launcher was not scheduled for a while: no burst to catch up */
            next = now + RAPL_PERIOD_NS;
    }
    return NULL;
}

/* The packages whose counter reads, described in the chunk; why[] says why there is none. */
static int open_packages(struct rapl_sampler *s, char *why, size_t why_len)
{
    struct rapl_package found[RAPL_MAX_PACKAGES];
    int n = rapl_discover(NULL, found, RAPL_MAX_PACKAGES);
    if (n <= 0) {
        snprintf(why, why_len, "no RAPL package in %s (no intel-rapl:N zone)",
                 rapl_powercap_root());
        return 0;
    }
    for (int i = 0; i < n; i++) {
        struct zone_track t = {0};
        uint64_t ts = now_ns();
        errno = 0;
        if (zone_update(&found[i].package, &t) != 0) {
            int e = errno;
            snprintf(why, why_len, "cannot read %s: %s%s", found[i].package.energy_path,
                     e ? strerror(e) : "not a number",
                     e == EACCES || e == EPERM
                         ? " (only root may, since Linux's fix of CVE-2020-8694)"
                         : "");
            continue;
        }
        int c = s->count++;
        s->packages[c] = found[i];
        s->package[c] = t;
        zone_update(&found[i].dram, &s->dram[c]);
        struct trace_rapl_package r = {.package = (uint64_t)found[i].index,
                                       .max_range_uj = found[i].package.max_range_uj,
                                       .dram_max_range_uj =
                                           s->dram[c].present ? found[i].dram.max_range_uj + 1 : 0};
        trace_put_rapl_package(&s->chunk, &r);
        put_sample(s, c, ts); /* the first sample: energy 0 at the start */
    }
    return s->count;
}

static void write_disabled(struct launcher_file *f, const char *why)
{
    uint8_t buf[512];
    struct trace_chunk_builder b;
    trace_chunk_begin(&b, buf, sizeof buf, now_ns());
    struct trace_rapl_disabled r = {.reason = trace_cstr(why)};
    if (trace_put_rapl_disabled(&b, &r) == 0) /* a failed write: the caller says it too */
        launcher_file_write(f, buf, trace_chunk_finish(&b));
}

static void sampler_free(struct rapl_sampler *s)
{
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void rapl_sampler_stop(void *state)
{
    struct rapl_sampler *s = state;
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    sample(s); /* the last read: the run's energy up to its end */
    flush(s);
    sampler_free(s);
}

static int rapl_sampler_start(struct launcher_file *f, const struct launcher_options *o,
                              void **state, char *why, size_t why_len)
{
    *state = NULL;
    struct rapl_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    s->file = f;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    trace_chunk_begin(&s->chunk, s->buffer, sizeof s->buffer, now_ns());
    if (open_packages(s, why, why_len) == 0) {
        if (trace_list_has(o->trace, "rapl")) /* unasked, a host without RAPL says nothing */
            write_disabled(f, why);
        sampler_free(s);
        return -ENODEV;
    }
    s->next_flush = now_ns() + RAPL_FLUSH_NS;
    int rc = pthread_create(&s->thread, NULL, sampler_thread, s);
    if (rc != 0) {
        snprintf(why, why_len, "cannot start the sampling thread");
        write_disabled(f, why);
        sampler_free(s);
        return -rc;
    }
    *state = s;
    return 0;
}

const struct launcher_sampler launcher_sampler_rapl = {"rapl", "CPU package energy",
                                                       rapl_sampler_start, rapl_sampler_stop};
