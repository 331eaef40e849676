/* The statistics of `lantern diff` (see diff_stats.h). */
#include "diff/diff_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int diff_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double diff_quantile_sorted(const double *sorted, size_t n, double q)
{
    double at = q * (double)(n - 1);
    size_t i = (size_t)at;
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + (at - (double)i) * (sorted[i + 1] - sorted[i]);
}

double diff_mann_whitney_p(const double *a, size_t na, double scale, const double *b, size_t nb,
                           int greater)
{
    if (na < 2 || nb < 2)
        return NAN;
    /* one merge of the two sorted sides: the rank sum of b, ties given their mean rank */
    double rank_sum_b = 0, ties = 0;
    size_t i = 0, j = 0, rank = 0;
    while (i < na || j < nb) {
        double v = j >= nb || (i < na && a[i] * scale <= b[j]) ? a[i] * scale : b[j];
        size_t in_a = 0, in_b = 0;
        while (i < na && a[i] * scale == v)
            i++, in_a++;
        while (j < nb && b[j] == v)
            j++, in_b++;
        double t = (double)(in_a + in_b), mean_rank = (double)rank + (t + 1) / 2;
        rank_sum_b += mean_rank * (double)in_b;
        ties += t * t * t - t;
        rank += in_a + in_b;
    }
    double n1 = (double)na, n2 = (double)nb, n = n1 + n2;
    double u = rank_sum_b - n2 * (n2 + 1) / 2, mean = n1 * n2 / 2;
    double variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
    if (variance <= 0)
        return 1;
    double z = greater ? (u - mean - 0.5) / sqrt(variance) : (mean - u - 0.5) / sqrt(variance);
    return diff_normal_cdf(-z);
}

void diff_bootstrap_medians(const double *sorted, size_t n, struct diff_random *r, double *draws,
                            size_t count)
{
    /* the sample median is the m-th smallest (odd n) or the mean of the m-th and (m+1)-th */
    size_t m = (n + 1) / 2;
    double dn = (double)n;
    for (size_t k = 0; k < count; k++) {
        double u = diff_random_beta(r, (double)m, (double)(n - m + 1));
        size_t lo = (size_t)(u * dn);
        double median = sorted[lo < n ? lo : n - 1];
        if (n % 2 == 0) {
            /* the next of n uniforms after u: u + (1 - u) Beta(1, n - m), by inversion */
            double next = u + (1 - u) * (1 - pow(1 - diff_random_uniform(r), 1.0 / (dn - m)));
            size_t hi = (size_t)(next * dn);
            median = (median + sorted[hi < n ? hi : n - 1]) / 2;
        }
        draws[k] = median;
    }
}

double diff_normal_cdf(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

/* The continued fraction of the regularized incomplete beta function I_x(a, b), by the
 * modified Lentz method; it converges fast for x < (a + 1) / (a + b + 2). */
static double beta_fraction(double x, double a, double b)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = 1 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 300; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            c = 1 + num / c;
            d = 1 / (fabs(d) < tiny ? tiny : d);
            c = fabs(c) < tiny ? tiny : c;
            h *= d * c;
        }
        if (fabs(d * c - 1) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b): P(X <= x) for X ~ Beta(a, b). */
static double incomplete_beta(double x, double a, double b)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_fraction(x, a, b) / a;
    return 1 - front * beta_fraction(1 - x, b, a) / b;
}

double diff_t_two_sided_p(double t, double df)
{
    if (!isfinite(t))
        return isnan(t) ? NAN : 0;
    return incomplete_beta(df / (df + t * t), df / 2, 0.5);
}

double diff_t_quantile(double p, double df)
{
    double lo = 0, hi = 1;
    while (diff_t_two_sided_p(hi, df) > 2 * (1 - p) && hi < 1e12)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (diff_t_two_sided_p(mid, df) > 2 * (1 - p))
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

struct ranked_p {
    double p;
    size_t row;
};

static int compare_ranked(const void *a, const void *b)
{
    const struct ranked_p *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

int diff_fdr_adjust(const double *p, size_t n, double *q)
{
    struct ranked_p *ranked = malloc((n ? n : 1) * sizeof *ranked);
    if (!ranked)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        q[i] = NAN;
        if (!isnan(p[i]))
            ranked[m++] = (struct ranked_p){p[i], i};
    }
    qsort(ranked, m, sizeof *ranked, compare_ranked);
    double running = 1; /* q of rank k: the least of p(j) m / j over j >= k */
    for (size_t k = m; k-- > 0;) {
        double v = ranked[k].p * (double)m / (double)(k + 1);
        running = v < running ? v : running;
        q[ranked[k].row] = running;
    }
    free(ranked);
    return 0;
}
