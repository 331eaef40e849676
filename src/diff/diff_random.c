/* xoshiro256** and the draws built on it (see diff_random.h). The generator is Blackman and
 * Vigna's (2018): four 64-bit words of state, seeded through splitmix64 so that any seed,
 * even 0, gives a well-mixed state. */
#include "diff/diff_random.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void diff_random_seed(struct diff_random *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t diff_random_next(struct diff_random *r)
{
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double diff_random_uniform(struct diff_random *r)
{
    return (double)(diff_random_next(r) >> 11) * 0x1.0p-53;
}

size_t diff_random_below(struct diff_random *r, size_t n)
{
    /* the top bits times n (Lemire): a bias of at most n / 2^64, far below what any bootstrap
     * of ours can see */
    return (size_t)(((unsigned __int128)diff_random_next(r) * n) >> 64);
}

double diff_random_normal(struct diff_random *r)
{
    /* Box-Muller; 1 - u is in (0, 1], so the logarithm is finite */
    double u = 1.0 - diff_random_uniform(r), v = diff_random_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

double diff_random_gamma(struct diff_random *r, double shape)
{
    /* Marsaglia and Tsang (2000), "A simple method for generating gamma variables": exact for
     * shape >= 1, about 1.03 normal draws per value */
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = diff_random_normal(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = 1.0 - diff_random_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v;
    }
}

double diff_random_beta(struct diff_random *r, double a, double b)
{
    double x = diff_random_gamma(r, a), y = diff_random_gamma(r, b);
    return x / (x + y);
}

uint64_t diff_hash_text(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* the end of a text: "a" + "b" differs from "ab" */
}
