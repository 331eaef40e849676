/* The statistics of `lantern diff` (src/diff/diff_stats.c, diff_random.c) on values worked out
 * by hand or by brute force: the generator's sequence (a diff must print the same intervals
 * on every machine), quantiles, the Mann-Whitney U test, the exact bootstrap of a median
 * against resampling, Student's t and the Benjamini-Hochberg adjustment. */
#include "diff/diff_random.h"
#include "diff/diff_stats.h"
#include "harness.h"

#include <math.h>

#define ASSERT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            fprintf(stderr, "%s:%d: %s ~ %s failed: %.9g != %.9g\n", __FILE__, __LINE__, #a, #b,   \
                    a_, b_);                                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* xoshiro256** seeded by splitmix64 from 0: the first outputs, computed independently (in
 * Python) from the two published algorithms. */
static void generator_sequence_is_fixed(void)
{
    struct diff_random r;
    diff_random_seed(&r, 0);
    ASSERT(diff_random_next(&r) == 0x99ec5f36cb75f2b4ull);
    ASSERT(diff_random_next(&r) == 0xbf6e1f784956452aull);
    ASSERT(diff_random_next(&r) == 0x1a5f849d4933e6e0ull);
}

static void quantiles_interpolate_linearly(void)
{
    const double v[] = {1, 2, 3, 4};
    ASSERT_NEAR(diff_quantile_sorted(v, 4, 0.1), 1.3, 1e-12);
    ASSERT_NEAR(diff_quantile_sorted(v, 4, 0.5), 2.5, 1e-12);
    ASSERT_NEAR(diff_quantile_sorted(v, 4, 0.9), 3.7, 1e-12);
    ASSERT_NEAR(diff_quantile_sorted(v, 4, 1.0), 4, 0);
    ASSERT_NEAR(diff_quantile_sorted(v, 1, 0.9), 1, 0);
}

/* The rank-sum's normal approximation with continuity and tie corrections (values computed
 * independently in Python): the textbook case (U = 0 of 5 against 5: two-sided p = 0.01219,
 * twice the one-sided 0.00609), the base scaled by 2 (a change beyond +100 %), and ties. */
static void mann_whitney_matches_hand_computation(void)
{
    const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    ASSERT_NEAR(diff_mann_whitney_p(a, 5, 1, b, 5, 1), 0.006092890178, 1e-10);
    ASSERT_NEAR(diff_mann_whitney_p(a, 5, 1, b, 5, 0), 0.996692324517, 1e-10);
    ASSERT_NEAR(diff_mann_whitney_p(b, 5, 1, a, 5, 0), 0.006092890178, 1e-10);
    ASSERT_NEAR(diff_mann_whitney_p(a, 5, 2, b, 5, 1), 0.171390855574, 1e-10);
    const double c[] = {1, 1, 2, 5}, d[] = {2, 3, 3, 4, 6};
    ASSERT_NEAR(2 * diff_mann_whitney_p(c, 4, 1, d, 5, 1), 0.214846947406, 1e-9);
    const double same[] = {3, 3, 3};
    ASSERT_NEAR(diff_mann_whitney_p(same, 3, 1, same, 3, 1), 1, 0);
    ASSERT(isnan(diff_mann_whitney_p(a, 1, 1, b, 5, 1)));
}

/* n = 7: the resample's median is x_k with P(median <= x_k) = P(Bin(7, k/7) >= 4). */
static void bootstrap_median_follows_the_exact_distribution(void)
{
    const double x[] = {1, 2, 3, 4, 5, 6, 7};
    enum { DRAWS = 200000 };
    static double draws[DRAWS];
    struct diff_random r;
    diff_random_seed(&r, 42);
    diff_bootstrap_medians(x, 7, &r, draws, DRAWS);
    for (int k = 1; k <= 7; k++) {
        double p = k / 7.0, exact = 0;
        for (int j = 4; j <= 7; j++) /* P(Bin(7, p) >= 4) */
            exact += tgamma(8) / (tgamma(j + 1) * tgamma(8 - j)) * pow(p, j) * pow(1 - p, 7 - j);
        size_t below = 0;
        for (size_t i = 0; i < DRAWS; i++)
            below += draws[i] <= k;
        ASSERT_NEAR((double)below / DRAWS, exact, 0.005);
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n = 6 (the median averages two): the draws' mean and spread against plain resampling. */
static void bootstrap_median_of_even_count_matches_resampling(void)
{
    const double x[] = {1, 2, 4, 8, 16, 32};
    enum { DRAWS = 100000 };
    static double exact[DRAWS], brute[DRAWS];
    struct diff_random r;
    diff_random_seed(&r, 7);
    diff_bootstrap_medians(x, 6, &r, exact, DRAWS);
    for (size_t i = 0; i < DRAWS; i++) {
        double resample[6];
        for (int j = 0; j < 6; j++)
            resample[j] = x[diff_random_below(&r, 6)];
        qsort(resample, 6, sizeof *resample, compare_doubles);
        brute[i] = (resample[2] + resample[3]) / 2;
    }
    double mean[2] = {0, 0}, square[2] = {0, 0};
    for (size_t i = 0; i < DRAWS; i++) {
        mean[0] += exact[i] / DRAWS;
        mean[1] += brute[i] / DRAWS;
        square[0] += exact[i] * exact[i] / DRAWS;
        square[1] += brute[i] * brute[i] / DRAWS;
    }
    ASSERT_NEAR(mean[0], mean[1], 0.05);
    ASSERT_NEAR(sqrt(square[0] - mean[0] * mean[0]), sqrt(square[1] - mean[1] * mean[1]), 0.05);
}

static void beta_draws_have_their_mean(void)
{
    struct diff_random r;
    diff_random_seed(&r, 1);
    double sum = 0;
    for (int i = 0; i < 100000; i++)
        sum += diff_random_beta(&r, 3, 5);
    ASSERT_NEAR(sum / 100000, 3.0 / 8, 0.003);
}

static void student_t_matches_tables(void)
{
    ASSERT_NEAR(diff_t_quantile(0.975, 4), 2.776445105, 1e-6);
    ASSERT_NEAR(diff_t_quantile(0.975, 1), 12.70620474, 1e-5);
    ASSERT_NEAR(diff_t_quantile(0.975, 1000), 1.962339, 1e-5);
    ASSERT_NEAR(diff_t_two_sided_p(2.776445105, 4), 0.05, 1e-8);
    ASSERT_NEAR(diff_t_two_sided_p(1, 1), 0.5, 1e-12);
    ASSERT_NEAR(diff_t_two_sided_p(0, 3), 1, 1e-12);
    ASSERT_NEAR(diff_normal_cdf(1.959963985), 0.975, 1e-9);
}

static void benjamini_hochberg_adjusts_and_skips_untested(void)
{
    const double p[] = {0.01, 0.04, 0.03, 0.005, NAN};
    double q[5];
    ASSERT_EQ(diff_fdr_adjust(p, 5, q), 0);
    ASSERT_NEAR(q[0], 0.02, 1e-12);
    ASSERT_NEAR(q[1], 0.04, 1e-12);
    ASSERT_NEAR(q[2], 0.04, 1e-12);
    ASSERT_NEAR(q[3], 0.02, 1e-12);
    ASSERT(isnan(q[4]));
}

int main(int argc, char **argv)
{
    static const struct test_case tests[] = {
        {"generator_sequence_is_fixed", generator_sequence_is_fixed},
        {"quantiles_interpolate_linearly", quantiles_interpolate_linearly},
        {"mann_whitney_matches_hand_computation", mann_whitney_matches_hand_computation},
        {"bootstrap_median_follows_the_exact_distribution",
         bootstrap_median_follows_the_exact_distribution},
        {"bootstrap_median_of_even_count_matches_resampling",
         bootstrap_median_of_even_count_matches_resampling},
        {"beta_draws_have_their_mean", beta_draws_have_their_mean},
        {"student_t_matches_tables", student_t_matches_tables},
        {"benjamini_hochberg_adjusts_and_skips_untested",
         benjamini_hochberg_adjusts_and_skips_untested},
        {NULL, NULL},
    };
    return test_main(tests, argc, argv);
}
