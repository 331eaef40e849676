/* The statistics of `lantern diff`, free of any database: quantiles, the Mann-Whitney U test,
 * the bootstrap of a median drawn from its exact distribution, Student's t distribution and
 * Benjamini-Hochberg's false-discovery control. docs/diff.md explains how they are used. */
#ifndef LANTERN_DIFF_STATS_H
#define LANTERN_DIFF_STATS_H

#include <stddef.h>

#include "diff/diff_random.h"

/* qsort's comparison of doubles, ascending (the values are never NaN). */
int diff_compare_doubles(const void *a, const void *b);

/* The q-quantile (0 <= q <= 1) of n > 0 values sorted ascending, interpolated linearly
 * between the two nearest (Hyndman and Fan's type 7, R's and NumPy's default). */
double diff_quantile_sorted(const double *sorted, size_t n, double q);

/* One-sided p-value of the Mann-Whitney U test (Wilcoxon rank-sum) that b is stochastically
 * greater (greater = 1) or smaller (0) than a scaled by scale (> 0), a and b sorted ascending:
 * the normal approximation with the tie correction and a continuity correction. Scaling a by
 * 1 +- the threshold tests a change beyond it. 1 when every value is equal; NaN when a side
 * has fewer than 2 values. */
double diff_mann_whitney_p(const double *a, size_t na, double scale, const double *b, size_t nb,
                           int greater);

/* Fills draws[0..count) with medians of bootstrap resamples of sorted[0..n) (n > 0). A
 * resample's median is the m-th smallest of n indices drawn uniformly, and the m-th smallest
 * of n uniforms is Beta(m, n - m + 1): so each draw costs O(1), not a resample of n values,
 * and follows the exact bootstrap distribution (an even n averages the m-th and the next). */
void diff_bootstrap_medians(const double *sorted, size_t n, struct diff_random *r, double *draws,
                            size_t count);

/* P(Z <= z) for a standard normal Z. */
double diff_normal_cdf(double z);
/* Two-sided p-value of Student's t with df > 0 degrees of freedom: P(|T| >= |t|). */
double diff_t_two_sided_p(double t, double df);
/* The t with P(T <= t) = p (0.5 <= p < 1) for df > 0 degrees of freedom. */
double diff_t_quantile(double p, double df);

/* Benjamini-Hochberg adjusted p-values ("q-values") of the n p-values p, into q: a row is a
 * discovery at false-discovery rate alpha when q <= alpha. NaN p-values (rows not tested) get
 * NaN and do not count among the tests. Returns 0, or -ENOMEM. */
int diff_fdr_adjust(const double *p, size_t n, double *q);

#endif
