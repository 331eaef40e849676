/* The GPU sampling engine (src/energy/gpu_sampling.h) over the fake NVML, run on the test's
 * own thread with a sink that records every reading and every wait, and says when to stop:
 * the schedule's rules (both ends, the stop before any read, a failed counter read tried again
 * 100 ms later, resuming behind schedule) are then checked exactly. */
#include "energy/gpu_sampling.h"
#include "harness.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull

static char script_path[] = "/tmp/lantern-fake-nvml-XXXXXX";

/* Loads the fake NVML with one GPU drawing 250 W, then body. */
static void open_fake(struct nvml *n, const char *body)
{
    FILE *f = fopen(script_path, "w");
    ASSERT(f);
    fprintf(f, "gpu GPU-sampling-0000 Fake-H100\npower 0 0 250000\n%s", body);
    fclose(f);
    setenv("LANTERN_FAKE_NVML_SCRIPT", script_path, 1);
    setenv("LANTERN_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    ASSERT_EQ(nvml_open(n), 0);
    ASSERT_EQ(n->gpu_count, 1);
}

/* What the engine handed the sink, and the waits it asked for. */
struct recorder {
    struct gpu_power_sample power[64];
    struct gpu_counter_read counter[64];
    uint64_t rounds[64], deadlines[64];
    int power_count, counter_count, round_count, waits;
    int stop_at_wait;      /* wait_until returns -EINTR from this call on (1-based) */
    uint64_t oversleep_ns; /* each wait sleeps until its deadline plus this */
};

static void on_power(void *ctx, unsigned int gpu, const struct gpu_power_sample *p)
{
    struct recorder *r = ctx;
    ASSERT_EQ(gpu, 3);
    ASSERT(r->power_count < 64);
    r->power[r->power_count++] = *p;
}

static void on_counter(void *ctx, unsigned int gpu, const struct gpu_counter_read *c)
{
    struct recorder *r = ctx;
    ASSERT_EQ(gpu, 5);
    ASSERT(r->counter_count < 64);
    r->counter[r->counter_count++] = *c;
}

static void on_round(void *ctx, uint64_t now)
{
    struct recorder *r = ctx;
    ASSERT(r->round_count < 64);
    r->rounds[r->round_count++] = now;
}

static int wait_until(void *ctx, uint64_t deadline)
{
    struct recorder *r = ctx;
    ASSERT(r->waits < 64);
    r->deadlines[r->waits++] = deadline;
    if (r->waits >= r->stop_at_wait)
        return -EINTR;
    uint64_t until = deadline + r->oversleep_ns;
    struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
    return 0;
}

static struct gpu_sampling plan(const struct nvml *n, struct recorder *r)
{
    return (struct gpu_sampling){
        .nvml = n,
        .sink = {.ctx = r,
                 .power = on_power,
                 .counter = on_counter,
                 .round = on_round,
                 .wait_until = wait_until},
        .power_gpus = {&n->gpus[0]},
        .power_slots = {3},
        .counter_slot = 5,
    };
}

static void both_ends_reads_power_and_state_before_any_wait_and_after_the_stop(void)
{
    struct nvml n;
    open_fake(&n, "");
    static struct recorder r = {.stop_at_wait = 1};
    struct gpu_sampling w = plan(&n, &r);
    w.power_count = 1;
    w.power_period_ns = 10 * MS;
    w.power_read = GPU_POWER_BOTH;
    w.state_period_ns = 100 * MS;
    w.both_ends = 1;
    gpu_sampling_thread(&w);
    ASSERT_EQ(r.power_count, 2); /* stopped at once: still a round at each end */
    ASSERT_EQ(r.round_count, 1); /* the one at the stop is not a round of the schedule */
    ASSERT_EQ(r.counter_count, 0);
    for (int i = 0; i < 2; i++) {
        const struct gpu_power_sample *p = &r.power[i];
        ASSERT(p->instant_ok && p->average_ok && p->power_ok && p->with_state);
        ASSERT_EQ(p->instant_mw, 250000);
        ASSERT_EQ(p->power_mw, 250000);
        ASSERT(p->ts <= p->power_end_ns && p->power_end_ns <= p->state_end_ns);
        ASSERT(p->state.values[0] != 0); /* the SM clock, + 1 */
    }
    nvml_close(&n);
}

static void a_stopped_engine_without_both_ends_reads_nothing(void)
{
    struct nvml n;
    open_fake(&n, "");
    static struct recorder r = {.stop_at_wait = 1};
    struct counter_reader reader;
    struct gpu_sampling w = plan(&n, &r);
    w.power_count = 1;
    w.power_period_ns = 10 * MS;
    w.power_read = GPU_POWER_ONE;
    w.counter_gpu = &n.gpus[0];
    w.reader = &reader;
    gpu_sampling_thread(&w);
    ASSERT_EQ(r.waits, 1);
    ASSERT_EQ(r.deadlines[0], 0); /* asked whether it was stopped, before any read */
    ASSERT_EQ(r.power_count + r.counter_count + r.round_count, 0);
    nvml_close(&n);
}

static void a_failed_counter_read_is_tried_again_100_ms_later(void)
{
    struct nvml n;
    open_fake(&n, "fail nvmlDeviceGetTotalEnergyConsumption 2\n"); /* 1: nvml_open's probe */
    static struct recorder r = {.stop_at_wait = 3};
    struct counter_reader reader;
    struct gpu_sampling w = plan(&n, &r);
    w.counter_gpu = &n.gpus[0];
    w.reader = &reader;
    gpu_sampling_thread(&w);
    ASSERT_EQ(r.power_count, 0);
    ASSERT_EQ(r.counter_count, 2);
    ASSERT(!r.counter[0].ok && r.counter[1].ok && !r.counter[1].updated);
    ASSERT_EQ(r.deadlines[0], 0);
    ASSERT_EQ(r.deadlines[1], r.counter[0].t1 + 100 * MS);
    ASSERT(r.counter[1].t0 >= r.deadlines[1]);
    /* then the reader's schedule: while acquiring, a read every 35 ms */
    ASSERT_EQ(r.deadlines[2], r.counter[1].t1 + 35 * MS);
    nvml_close(&n);
}

/* Behind schedule (each wait overslept by 25 ms with a 10 ms period): the next round is at
 * once (resume_now) or a period after the late one, never a burst catching up. */
static void behind_schedule_resumes_at_once_or_a_period_later(void)
{
    for (int resume_now = 0; resume_now <= 1; resume_now++) {
        struct nvml n;
        open_fake(&n, "");
        static struct recorder r;
        r = (struct recorder){.stop_at_wait = 4, .oversleep_ns = 25 * MS};
        struct gpu_sampling w = plan(&n, &r);
        w.power_count = 1;
        w.power_period_ns = 10 * MS;
        w.power_read = GPU_POWER_ONE;
        w.resume_now = resume_now;
        gpu_sampling_thread(&w);
        ASSERT_EQ(r.round_count, 3);
        ASSERT_EQ(r.power_count, 3);
        ASSERT_EQ(r.deadlines[0], 0); /* the stop asked for before the first round */
        ASSERT(r.deadlines[1] <= r.rounds[0] + 10 * MS);
        for (int i = 1; i < 3; i++) {
            ASSERT_EQ(r.power[i].ts, r.rounds[i]); /* one reading, stamped with its round */
            ASSERT_EQ(r.deadlines[i + 1], r.rounds[i] + (resume_now ? 0 : 10 * MS));
        }
        nvml_close(&n);
    }
}

int main(int argc, char **argv)
{
    int fd = mkstemp(script_path);
    ASSERT(fd >= 0);
    close(fd);
    static const struct test_case tests[] = {
        {"both_ends_reads_power_and_state_before_any_wait_and_after_the_stop",
         both_ends_reads_power_and_state_before_any_wait_and_after_the_stop},
        {"a_stopped_engine_without_both_ends_reads_nothing",
         a_stopped_engine_without_both_ends_reads_nothing},
        {"a_failed_counter_read_is_tried_again_100_ms_later",
         a_failed_counter_read_is_tried_again_100_ms_later},
        {"behind_schedule_resumes_at_once_or_a_period_later",
         behind_schedule_resumes_at_once_or_a_period_later},
        {NULL, NULL},
    };
    int rc = test_main(tests, argc, argv);
    unlink(script_path);
    return rc;
}
