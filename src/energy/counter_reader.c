/* The energy counter's read schedule and update times (see counter_reader.h). A read's value
 * is taken as of the read's end: the driver stamps the value with that instant
 * (nvmlFieldValue_t.timestamp, within 2 us of the call's return on an H100), and with that
 * convention 60 updates seen back to back all fit one 100 ms grid within 1.4 ms. */
#include "energy/counter_reader.h"

#include <string.h>

/* Before the first update: by default a read every 35 ms after the last one ended (about one
 * read in flight out of twelve, for the ~100 ms until the first update is seen); a caller that
 * can afford reads back to back for that long sets acquire_gap_ns lower, and its first update's
 * window is then about one read wide instead of 35 ms. */
#define COUNTER_ACQUIRE_GAP_NS 35000000ull
/* Never a read sooner than this after the last one (the worst case while bisecting). */
#define COUNTER_MIN_GAP_NS 5000000ull
/* The period assumed until the updates' own times say better, and how wrong it may be: 100 ms
 * on H100 and H200 (measured: 100.000 ms, 60 updates within 1.4 ms of one grid, so within
 * ~25 us a period; a host clock 200 ppm off the GPU's moves it 20 us). A wider prior kept the
 * window growing 0.4 ms an update for the first seconds, one aimed read an update; a GPU whose
 * counter keeps another period contradicts the window again and again and is read in free
 * mode. */
#define COUNTER_PRIOR_PERIOD_NS 100000000ull
#define COUNTER_PRIOR_ERROR_NS 50000ull
/* The period is never trusted to better than this (the host clock and the GPU's may drift
 * apart by tens of ppm). */
#define COUNTER_MIN_PERIOD_ERROR_NS 2000ull
/* A window this narrow is narrow enough: bisect no further. */
#define COUNTER_NARROW_NS 2000000ull
/* When the read that takes an update's value starts, after its window: a read started 0-10 ms
 * after an update takes ~15 ms on an H100 (the driver is busy with the update), one started
 * 30-40 ms after it 2.65 ms, the fastest (median of 1560 reads; every 20 ms the driver's own
 * power sampling slows reads again, to ~4 ms). The value stays until the next update. */
#define COUNTER_AFTER_NS 32000000ull
/* How far before the window a check read ends, so that it lands on the right side. */
#define COUNTER_GUARD_NS 1000000ull
/* Tolerance on when a read's value was taken (the driver's own jitter): a read this close to
 * the wrong side of the window does not reset it. */
#define COUNTER_JITTER_NS 500000ull
/* Every so many updates, one read ends just before the window, to catch a grid that drifted
 * earlier (a read after the window alone cannot see that). */
#define COUNTER_CHECK_EVERY 40
/* Resets (a read contradicting the window) COUNTER_FREE_RESETS times within
 * COUNTER_FREE_SPAN updates: there is no grid, read at a fixed rate. */
#define COUNTER_FREE_SPAN 30
#define COUNTER_FREE_PERIOD_NS 100000000ull

void counter_reader_init(struct counter_reader *r)
{
    memset(r, 0, sizeof *r);
    r->mode = COUNTER_ACQUIRE;
    r->period_ns = COUNTER_PRIOR_PERIOD_NS;
    r->period_err_ns = COUNTER_PRIOR_ERROR_NS;
    r->read_ns = 3000000; /* replaced by the first read's own duration */
    r->acquire_gap_ns = COUNTER_ACQUIRE_GAP_NS;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Narrow enough: COUNTER_NARROW_NS, or wider when reads vary in length so much that a read
 * cannot be made to end inside a narrower window (twice how much longer a typical read is
 * than a fast one). */
static uint64_t straddle_ns(const struct counter_reader *r)
{
    return r->straddle_ns > 0 ? (uint64_t)r->straddle_ns : 0;
}

static uint64_t narrow_ns(const struct counter_reader *r)
{
    uint64_t spread = r->read_ns > r->fast_read_ns ? r->read_ns - r->fast_read_ns : 0;
    return max_u64(max_u64(COUNTER_NARROW_NS, 2 * spread), 2 * straddle_ns(r));
}

/* Where an aimed read should end. A read during which the counter updates takes longer (by
 * ~1.2 ms on an H100, learned as straddle_ns), so when it sees the update it ends that much
 * past its aim: aimed at lo + (w - straddle) / 2, it ends near the middle of what is left
 * either way (before the update: the window keeps (end, hi]; across it: (lo, end]), where
 * aiming at the middle would end past the window and learn nothing. Measured on an H100
 * under a matmul load: aimed at the middle, ~4.5 aimed reads a second, most wasted. */
static uint64_t aim_ns(const struct counter_reader *r)
{
    uint64_t w = r->win_hi - r->win_lo, x = straddle_ns(r);
    return r->win_lo + (w > x ? (w - x) / 2 : 0);
}

/* The next read should end in the window's middle: the window is wide, and no read has aimed
 * at this update's window yet (reads vary in length, 2-30 ms under load on an H100, so many
 * miss the middle; one try per update keeps that from doubling the reads). */
static int bisecting(const struct counter_reader *r)
{
    return r->win_hi - r->win_lo > narrow_ns(r) && r->bisected_for != r->index + 1;
}
uint64_t counter_reader_next_start(const struct counter_reader *r)
{
    if (!r->have_read)
        return 0; /* now */
    uint64_t earliest = r->last_end + COUNTER_MIN_GAP_NS;
    uint64_t end; /* when the read should end */
    switch (r->mode) {
    case COUNTER_ACQUIRE:
        return r->last_end + r->acquire_gap_ns;
    case COUNTER_FREE:
        end = r->last_end + COUNTER_FREE_PERIOD_NS;
        break;
    default:
        if (bisecting(r))
            end = aim_ns(r);
        else if (r->since_check >= COUNTER_CHECK_EVERY)
            end = r->win_lo > COUNTER_GUARD_NS ? r->win_lo - COUNTER_GUARD_NS : 0;
        else /* well after the update: reads there are fastest */
            return max_u64(earliest, r->win_hi + COUNTER_AFTER_NS);
        break;
    }
    return max_u64(earliest, end > r->read_ns ? end - r->read_ns : 0);
}

/* The period from an anchor (the first update located since the grid last moved) and each
 * update located since: update k's window [lo, hi] and the anchor's [lo0, hi0] bound the
 * period to [(lo - hi0) / k, (hi - lo0) / k], which narrows as 1/k; the bounds of all updates
 * are intersected. A bound that contradicts the others starts a new anchor. */
static void refine_period(struct counter_reader *r, uint64_t lo, uint64_t hi)
{
    if (!r->anchor_set) {
        r->anchor_set = 1;
        r->anchor_index = r->index;
        r->anchor_lo = lo;
        r->anchor_hi = hi;
        return;
    }
    uint64_t k = r->index - r->anchor_index;
    if (k == 0 || lo < r->anchor_hi)
        return;
    if (hi - lo < (r->anchor_hi - r->anchor_lo) / 2) {
        /* a much narrower window than the anchor's (the first update is located within the
         * acquisition's 35 ms, later ones within ~2 ms): it anchors from now on, and the
         * bounds learned so far stay */
        r->anchor_index = r->index;
        r->anchor_lo = lo;
        r->anchor_hi = hi;
        return;
    }
    uint64_t p_lo = (lo - r->anchor_hi) / k, p_hi = (hi - r->anchor_lo) / k;
    uint64_t a = max_u64(p_lo, r->period_ns - r->period_err_ns);
    uint64_t b = min_u64(p_hi, r->period_ns + r->period_err_ns);
    if (a > b) { /* the grid moved: start again from here */
        r->anchor_index = r->index;
        r->anchor_lo = lo;
        r->anchor_hi = hi;
        return;
    }
    r->period_ns = a + (b - a) / 2;
    r->period_err_ns = max_u64((b - a) / 2, COUNTER_MIN_PERIOD_ERROR_NS);
}

static void reset_window(struct counter_reader *r, uint64_t lo, uint64_t hi)
{
    r->win_lo = lo;
    r->win_hi = hi;
    /* the oldest of the last COUNTER_FREE_RESETS resets, if recent enough: no grid */
    uint64_t *oldest = &r->reset_index[r->resets % COUNTER_FREE_RESETS];
    if (r->resets >= COUNTER_FREE_RESETS && r->index - *oldest < COUNTER_FREE_SPAN)
        r->mode = COUNTER_FREE;
    *oldest = r->index;
    r->resets++;
    r->anchor_set = 0; /* the grid moved: the period is found again from here */
    r->period_err_ns = max_u64(r->period_err_ns, COUNTER_PRIOR_ERROR_NS);
}

int counter_reader_feed(struct counter_reader *r, uint64_t start, uint64_t end, uint64_t mj,
                        struct counter_update *u)
{
    r->reads++;
    uint64_t took = end > start ? end - start : 0, typical = r->read_ns;
    r->read_ns = r->reads == 1 ? took : (r->read_ns * 7 + took) / 8;
    /* the fastest reads: follows a faster one at once, a slower one slowly */
    r->fast_read_ns = r->reads == 1 || took < r->fast_read_ns
                          ? took
                          : r->fast_read_ns + (took - r->fast_read_ns) / 64;
    if (!r->have_read) {
        r->have_read = 1;
        r->last_end = end;
        r->last_mj = mj;
        return 0;
    }
    uint64_t prev = r->last_end;
    int changed = mj != r->last_mj;
    if (r->mode == COUNTER_LOCKED && bisecting(r)) {
        r->bisected_for = r->index + 1;
        if (changed && start < r->win_lo) { /* the update happened during this read */
            int64_t extra = (int64_t)took - (int64_t)typical;
            r->straddle_ns = r->straddled++ ? (r->straddle_ns * 3 + extra) / 4 : extra;
        }
    }
    r->last_end = end;
    r->last_mj = mj;
    if (!changed) {
        if (r->mode != COUNTER_LOCKED)
            return 0;
        if (end < r->win_lo) {
            r->since_check = 0; /* a check before the window, as expected */
        } else if (end < r->win_hi) {
            r->win_lo = end; /* not yet: later than this read */
        } else if (end - r->win_hi <= COUNTER_JITTER_NS) {
            r->win_lo = end; /* just past the window: the driver's jitter, it is imminent */
            r->win_hi = end + COUNTER_JITTER_NS;
        } else {
            reset_window(r, end, end + r->period_ns); /* due by now, not seen: the grid moved */
        }
        return 0;
    }

    /* an update happened in (prev, end]: in locked mode, the one of the window, or, when the
     * read ends whole periods past it (a stalled caller), the last of those, whose window is
     * the grid's n periods on */
    uint64_t lo = prev, hi = end, seen = 1;
    if (r->mode == COUNTER_LOCKED && end > r->win_hi + r->period_ns) {
        uint64_t n = (end - r->win_hi) / r->period_ns; /* surely past; the next may be too */
        r->win_lo += n * (r->period_ns - r->period_err_ns);
        r->win_hi += n * (r->period_ns + r->period_err_ns);
        seen += n;
    }
    if (r->mode == COUNTER_LOCKED && end < r->win_lo + r->period_ns - r->period_err_ns) {
        uint64_t a = max_u64(r->win_lo, prev), b = min_u64(r->win_hi, end);
        if (a <= b) {
            lo = a;
            hi = b;
        } else if (a - b <= 2 * COUNTER_JITTER_NS) {
            lo = b; /* just outside the window: the driver's jitter */
            hi = a;
        } else {
            reset_window(r, prev, end); /* not where the grid said */
        }
    } else if (r->mode == COUNTER_LOCKED) {
        reset_window(r, prev, end);
    }
    u->ts = lo + (hi - lo) / 2;
    u->uncertainty_ns = (hi - lo) / 2;
    u->mj = mj;
    r->index += seen;
    if (r->mode == COUNTER_FREE)
        return 1;
    if (r->mode == COUNTER_LOCKED)
        refine_period(r, lo, hi);
    if (r->mode == COUNTER_ACQUIRE)
        r->mode = COUNTER_LOCKED;
    r->since_check++;
    r->win_lo = lo + r->period_ns - r->period_err_ns;
    r->win_hi = hi + r->period_ns + r->period_err_ns;
    return 1;
}
