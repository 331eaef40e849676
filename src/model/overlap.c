/* overlap.h: the time each interval shares with others. The set of instants where two or more
 * intervals are open is built once by a sweep over the starts (sorted) and the ends (sorted
 * here); an interval's shared time is its intersection with that set, read from the set's
 * running length. */
#include "model/overlap.h"

#include <errno.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The measure of the shared set before t. The set is pieces [from[k], to[k]), sorted and
 * disjoint; lengths[k] is the total length of the pieces before piece k. */
static int64_t shared_before(const int64_t *from, const int64_t *to, const int64_t *lengths,
                             size_t pieces, int64_t t)
{
    size_t lo = 0, hi = pieces; /* pieces starting before t: [0, lo) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (from[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    int64_t last_end = to[lo - 1] < t ? to[lo - 1] : t;
    return lengths[lo - 1] + (last_end - from[lo - 1]);
}

int overlap_with_others(const int64_t *start, const int64_t *end, size_t n, int64_t *overlapped)
{
    int64_t *ends = malloc((n ? n : 1) * sizeof *ends);
    int64_t *from = malloc((n ? n : 1) * sizeof *from);
    int64_t *to = malloc((n ? n : 1) * sizeof *to);
    int64_t *lengths = malloc((n ? n : 1) * sizeof *lengths);
    if (!ends || !from || !to || !lengths) {
        free(ends);
        free(from);
        free(to);
        free(lengths);
        return -ENOMEM;
    }
    size_t nends = 0; /* intervals of zero length share no time: left out of the sweep */
    for (size_t i = 0; i < n; i++)
        if (end[i] > start[i])
            ends[nends++] = end[i];
    qsort(ends, nends, sizeof *ends, by_value);
    /* sweep: at equal times ends come first (half-open intervals that touch do not overlap) */
    size_t si = 0, ei = 0, pieces = 0;
    int64_t open = 0, total = 0;
    for (;;) {
        while (si < n && end[si] <= start[si])
            si++;
        if (si == n && ei == nends)
            break;
        int is_start = si < n && (ei == nends || start[si] < ends[ei]);
        int64_t t = is_start ? start[si++] : ends[ei++];
        open += is_start ? 1 : -1;
        if (is_start && open == 2) {
            from[pieces] = t;
        } else if (!is_start && open == 1) {
            to[pieces] = t;
            if (t > from[pieces]) {
                lengths[pieces] = total;
                total += t - from[pieces];
                pieces++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        overlapped[i] = end[i] <= start[i] ? 0
                                           : shared_before(from, to, lengths, pieces, end[i]) -
                                                 shared_before(from, to, lengths, pieces, start[i]);
    free(ends);
    free(from);
    free(to);
    free(lengths);
    return 0;
}
