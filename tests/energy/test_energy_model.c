/* The energy model: interpolating the 100 ms energy counter with power samples gives exact
 * joules where the power shape is exact, adjacent intervals add up exactly, a biased power
 * sensor is corrected by the counter, and the error bounds follow from the update timing. */
#include "harness.h"
#include "energy/energy_model.h"

#include <math.h>

#define MS 1000000ull

#define ASSERT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (fabs(a_ - b_) > (tol)) {                                                               \
            fprintf(stderr, "%s:%d: %s ~= %s failed: %.6f != %.6f\n", __FILE__, __LINE__, #a, #b,  \
                    a_, b_);                                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Power `gain` times the true power, sampled every 10 ms for `ms`; the counter updates exactly
 * every 100 ms with the true energy, starting at 1e6 mJ. True power: 200 W before 500 ms,
 * then `second_mw`. */
static void fill(struct energy_track *t, double gain, double second_mw, int ms)
{
    double counter = 1e6;
    for (int i = 0; i <= ms; i += 10) {
        double mw = i < 500 ? 200000 : second_mw;
        if (i == 500)
            energy_track_add_power(t, (uint64_t)i * MS, 200000 * gain); /* the step, exactly */
        energy_track_add_power(t, (uint64_t)i * MS, mw * gain);
        if (i % 100 == 0 && i > 0) {
            counter += (i <= 500 ? 200000 : second_mw) * 100 / 1000.0;
            energy_track_add_update(t, (uint64_t)i * MS, 0, counter);
        }
    }
}

static void constant_power_gives_exact_joules_inside_updates(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 1024, 64), 0);
    fill(&t, 1.0, 200000, 1000);
    struct energy_interval r = energy_track_between(&t, 150 * MS, 370 * MS);
    ASSERT_NEAR(r.mj, 200.0 * 220, 1e-6); /* 200 W for 220 ms = 44 J */
    ASSERT_EQ(r.updates, 2);              /* 200 ms and 300 ms */
    ASSERT_EQ(r.flags, 0);
    ASSERT_NEAR(r.error_mj, 0, 1e-9); /* exact update times, flat power */
    energy_track_release(&t);
}

static void biased_sensor_is_corrected_by_the_counter(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 1024, 64), 0);
    fill(&t, 1.1, 200000, 1000); /* the sensor reads 10 % high */
    ASSERT_NEAR(energy_track_between(&t, 120 * MS, 135 * MS).mj, 200.0 * 15, 1e-6);
    /* past the last update (1000 ms) the last interval's gain still corrects it */
    struct energy_interval r = energy_track_between(&t, 990 * MS, 1040 * MS);
    ASSERT_NEAR(r.mj, 200.0 * 50, 1e-6);
    ASSERT(r.flags & ENERGY_EXTRAPOLATED);
    /* the pre-Volta method integrates the sensor as it is */
    t.power_only = 1;
    r = energy_track_between(&t, 120 * MS, 135 * MS);
    ASSERT_NEAR(r.mj, 220.0 * 15, 1e-6);
    ASSERT(r.flags & ENERGY_POWER_ONLY);
    ASSERT_NEAR(r.error_mj, 220.0 * 15 * 0.05, 1e-6);
    energy_track_release(&t);
}

static void power_step_follows_the_counter(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 1024, 64), 0);
    fill(&t, 1.0, 400000, 1000);
    /* 450..550 ms: 50 ms at 200 W then 50 ms at 400 W = 10 J + 20 J */
    struct energy_interval r = energy_track_between(&t, 450 * MS, 550 * MS);
    ASSERT_NEAR(r.mj, 30000, 1e-6);
    /* the intervals beside the step differ from their neighbours by 200 W, so power inside
     * them may vary by half that: min(f, 1 - f) * interval energy * that half, relative to
     * the interval's power: 0.5 * 20 J * 50 % (the 200 W one) + 0.5 * 40 J * 25 % (400 W) */
    ASSERT_NEAR(r.error_mj, 0.5 * 20000 * 0.5 + 0.5 * 40000 * 0.25, 1e-6);
    energy_track_release(&t);
}

static void adjacent_intervals_add_up_to_the_whole(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 1024, 64), 0);
    fill(&t, 0.93, 350000, 2000);
    /* uneven edges, a sensor that disagrees with the counter, a power step: still telescopes */
    uint64_t edges[] = {3 * MS, 77 * MS, 333 * MS, 499 * MS, 502 * MS, 1234 * MS, 1999 * MS};
    double sum = 0;
    for (int i = 0; i + 1 < 7; i++)
        sum += energy_track_between(&t, edges[i], edges[i + 1]).mj;
    ASSERT_NEAR(sum, energy_track_between(&t, edges[0], edges[6]).mj, 1e-6);
    energy_track_release(&t);
}

static void update_timing_uncertainty_bounds_the_error(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 1024, 64), 0);
    for (int i = 0; i <= 400; i += 10)
        energy_track_add_power(&t, (uint64_t)i * MS, 200000);
    /* the counter changed at 100 and 200 ms, each known within 2 ms */
    energy_track_add_update(&t, 100 * MS, 2 * MS, 21000);
    energy_track_add_update(&t, 200 * MS, 2 * MS, 41000);
    ASSERT_EQ(t.update_total, 2);
    /* both edges inside one interval: what is uncertain is the interval's length,
     * (2 + 2 ms) / 100 ms = 4 % of the 10 J */
    struct energy_interval r = energy_track_between(&t, 120 * MS, 170 * MS);
    ASSERT_NEAR(r.mj, 10000, 1e-6);
    ASSERT_NEAR(r.error_mj, 400, 1e-6);
    ASSERT_EQ(r.updates, 0);
    /* edges on either side of the last update: the first, inside an interval, is off by at
     * most 200 W times 2 ms (0.4 J); the second, past the last update, by 200 W times 2 ms
     * plus 4 % (the gain's uncertainty) of its 10 J since the update (0.4 + 0.4 J) */
    r = energy_track_between(&t, 150 * MS, 250 * MS);
    ASSERT_NEAR(r.mj, 20000, 1e-6);
    ASSERT_NEAR(r.error_mj, 1200, 1e-6);
    ASSERT(r.flags & ENERGY_EXTRAPOLATED);
    ASSERT_EQ(r.updates, 1);
    energy_track_release(&t);
}

static void rings_stay_bounded_and_answer_recent_instants(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 16, 4), 0);
    fill(&t, 1.0, 200000, 2000);
    ASSERT_EQ(t.power_total, 202);
    ASSERT_NEAR(energy_track_between(&t, 1850 * MS, 1870 * MS).mj, 4000, 1e-6);
    energy_track_release(&t);
}

static void no_samples_means_no_data(void)
{
    struct energy_track t;
    ASSERT_EQ(energy_track_init(&t, 16, 4), 0);
    ASSERT_EQ(energy_track_between(&t, 0, MS).flags, ENERGY_NO_DATA);
    energy_track_release(&t);
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"constant_power_gives_exact_joules_inside_updates",
         constant_power_gives_exact_joules_inside_updates},
        {"biased_sensor_is_corrected_by_the_counter", biased_sensor_is_corrected_by_the_counter},
        {"power_step_follows_the_counter", power_step_follows_the_counter},
        {"adjacent_intervals_add_up_to_the_whole", adjacent_intervals_add_up_to_the_whole},
        {"update_timing_uncertainty_bounds_the_error", update_timing_uncertainty_bounds_the_error},
        {"rings_stay_bounded_and_answer_recent_instants",
         rings_stay_bounded_and_answer_recent_instants},
        {"no_samples_means_no_data", no_samples_means_no_data},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
