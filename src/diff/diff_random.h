/* The one source of randomness of `lantern diff`: our own generator (xoshiro256**, seeded by
 * splitmix64) started from a fixed seed and each row's name, so that a diff prints the same
 * intervals on every machine, in every run, whatever order its rows are computed in; and the
 * draws the bootstraps need (uniform, normal, gamma, beta). */
#ifndef LANTERN_DIFF_RANDOM_H
#define LANTERN_DIFF_RANDOM_H

#include <stddef.h>
#include <stdint.h>

struct diff_random {
    uint64_t s[4];
};

/* Starts the generator from seed (any value). */
void diff_random_seed(struct diff_random *r, uint64_t seed);
uint64_t diff_random_next(struct diff_random *r);
/* Uniform in [0, 1), 53 bits. */
double diff_random_uniform(struct diff_random *r);
/* Uniform in {0, ..., n - 1} (n > 0). */
size_t diff_random_below(struct diff_random *r, size_t n);
/* Standard normal. */
double diff_random_normal(struct diff_random *r);
/* Gamma(shape, 1) for shape >= 1. */
double diff_random_gamma(struct diff_random *r, double shape);
/* Beta(a, b) for a, b >= 1. */
double diff_random_beta(struct diff_random *r, double a, double b);

/* FNV-1a of a string folded into h: the per-row part of a seed. */
uint64_t diff_hash_text(uint64_t h, const char *s);

#endif
