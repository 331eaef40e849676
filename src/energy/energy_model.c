/* Interpolation of the GPU energy counter with power samples (see energy_model.h). The
 * counter is exact but coarse in time (one update per ~100 ms); power samples are fine in time
 * but only as accurate as the sensor. Between two counter updates the energy follows the
 * power integral, rescaled so that it meets both counter values exactly. */
#include "energy/energy_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA specifies the power sensor to about ±5 %; used where no counter update bounds us. */
#define ENERGY_SENSOR_TOLERANCE 0.05

int energy_track_init(struct energy_track *t, size_t power_cap, size_t update_cap)
{
    memset(t, 0, sizeof *t);
    t->power = calloc(power_cap ? power_cap : 1, sizeof *t->power);
    t->updates = calloc(update_cap ? update_cap : 1, sizeof *t->updates);
    if (!t->power || !t->updates) {
        energy_track_release(t);
        return -ENOMEM;
    }
    t->power_cap = power_cap ? power_cap : 1;
    t->update_cap = update_cap ? update_cap : 1;
    return 0;
}

void energy_track_release(struct energy_track *t)
{
    free(t->power);
    free(t->updates);
    t->power = NULL;
    t->updates = NULL;
}

/* ---- the rings: absolute indexes, the last *_cap of which are held ------------------------- */

static uint64_t power_first(const struct energy_track *t)
{
    return t->power_total > t->power_cap ? t->power_total - t->power_cap : 0;
}

static const struct energy_power_point *power_get(const struct energy_track *t, uint64_t i)
{
    return &t->power[i % t->power_cap];
}

static uint64_t update_first(const struct energy_track *t)
{
    return t->update_total > t->update_cap ? t->update_total - t->update_cap : 0;
}

static const struct energy_update *update_get(const struct energy_track *t, uint64_t i)
{
    return &t->updates[i % t->update_cap];
}

static uint64_t power_ts(const struct energy_track *t, uint64_t i)
{
    return power_get(t, i)->ts;
}

static uint64_t update_ts(const struct energy_track *t, uint64_t i)
{
    return update_get(t, i)->ts;
}

/* Of the items [first, total) of a ring kept in time order, whose times ts_of gives, the
 * absolute index of the first one after at (so: how many have ts <= at). */
static uint64_t count_until(const struct energy_track *t, uint64_t first, uint64_t total,
                            uint64_t (*ts_of)(const struct energy_track *, uint64_t), uint64_t at)
{
    uint64_t lo = first, hi = total;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (ts_of(t, mid) <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Number of power samples with ts <= at (absolute index of the first one after it). */
static uint64_t power_count_until(const struct energy_track *t, uint64_t at)
{
    return count_until(t, power_first(t), t->power_total, power_ts, at);
}

static uint64_t update_count_until(const struct energy_track *t, uint64_t at)
{
    return count_until(t, update_first(t), t->update_total, update_ts, at);
}

/* ---- adding samples ------------------------------------------------------------------------ */

static double mw_ns_to_mj(double mw, double ns)
{
    return mw * ns / 1e9;
}

void energy_track_add_power(struct energy_track *t, uint64_t ts, double mw)
{
    struct energy_power_point p = {.ts = ts, .mw = mw};
    if (t->power_total) {
        const struct energy_power_point *last = power_get(t, t->power_total - 1);
        if (ts < last->ts)
            return;
        p.integral_mj =
            last->integral_mj + mw_ns_to_mj((last->mw + mw) / 2, (double)(ts - last->ts));
    }
    t->power[t->power_total % t->power_cap] = p;
    t->power_total++;
}

void energy_track_add_update(struct energy_track *t, uint64_t ts, uint64_t uncertainty_ns,
                             double counter_mj)
{
    if (t->update_total && ts < update_get(t, t->update_total - 1)->ts)
        return;
    t->updates[t->update_total % t->update_cap] = (struct energy_update){
        .ts = ts, .uncertainty_ns = uncertainty_ns, .counter_mj = counter_mj};
    t->update_total++;
}

/* ---- reading --------------------------------------------------------------------------------- */

double energy_track_integral_at(const struct energy_track *t, uint64_t ts)
{
    if (!t->power_total)
        return 0;
    uint64_t n = power_count_until(t, ts);
    if (n == power_first(t)) {
        const struct energy_power_point *first = power_get(t, n);
        return first->integral_mj - mw_ns_to_mj(first->mw, (double)(first->ts - ts));
    }
    const struct energy_power_point *a = power_get(t, n - 1);
    if (n == t->power_total)
        return a->integral_mj + mw_ns_to_mj(a->mw, (double)(ts - a->ts));
    const struct energy_power_point *b = power_get(t, n);
    double f = (double)(ts - a->ts) / (double)(b->ts - a->ts);
    double mw_at = a->mw + f * (b->mw - a->mw);
    return a->integral_mj + mw_ns_to_mj((a->mw + mw_at) / 2, (double)(ts - a->ts));
}

/* The power sensor's gain against the counter (counter mJ per power-integral mJ) over up to
 * ENERGY_GAIN_UPDATES update intervals ending at update k, and the relative error to expect on
 * a piece of an interval: how far, on average, gain times the power integral missed the counter
 * inside one of those intervals, plus the gain's own uncertainty. Over ten intervals the gain no
 * longer depends on when each update was seen (±2 ms of a 100 ms interval is ±2 %; of ten, ±0.2 %).
 */
#define ENERGY_GAIN_UPDATES 10
/* The sensor is steady over an interval when its readings there, and over the interval before
 * (it lags the counter by about one), lie within this share of each other. */
#define ENERGY_STEADY_SPREAD 0.05

struct energy_gain {
    double gain, relative_miss;
};

/* Whether the sensor read steady power over update interval i (and, with lookback, the one
 * before it: the sensor lags the counter by about one interval on H200). The
 * sensor holds one instantaneous reading for ~100 ms: a reading taken in a transient (an idle
 * moment between two busy stretches) stands for a whole interval whose counter says otherwise.
 * Measured on an H200 under a steady fp32 load resumed 20 ms before a monitor opened: the
 * sensor read 217 W for 94 ms while the counter gave 568 W for that interval and 609 W after,
 * and a gain from that interval made the first second's 50 ms windows read up to +25 %. */
static int sensor_steady(const struct energy_track *t, uint64_t i, int lookback)
{
    const struct energy_update *u = update_get(t, i), *v = update_get(t, i + 1);
    uint64_t span = lookback ? v->ts - u->ts : 0, from = u->ts > span ? u->ts - span : 0;
    uint64_t p = power_count_until(t, from), end = power_count_until(t, v->ts);
    if (p > power_first(t))
        p--; /* the reading in force at from */
    double lo = INFINITY, hi = 0;
    for (; p < end; p++) {
        double mw = power_get(t, p)->mw;
        lo = mw < lo ? mw : lo;
        hi = mw > hi ? mw : hi;
    }
    return hi > 0 && hi - lo <= ENERGY_STEADY_SPREAD * hi;
}

/* The gain over the intervals [from, k) that `use` marks: their counter energy over their power
 * integral, their mean miss, and the timing of the runs' first and last updates. */
static struct energy_gain gain_over(const struct energy_track *t, uint64_t from, uint64_t k,
                                    const unsigned char *use)
{
    struct energy_gain g = {1, ENERGY_SENSOR_TOLERANCE};
    double counter = 0, integral = 0, span = 0, timing = 0;
    unsigned int used = 0;
    for (uint64_t i = from; i < k; i++) {
        if (!use[i - from])
            continue;
        const struct energy_update *u = update_get(t, i), *v = update_get(t, i + 1);
        counter += v->counter_mj - u->counter_mj;
        integral += energy_track_integral_at(t, v->ts) - energy_track_integral_at(t, u->ts);
        span += (double)(v->ts - u->ts);
        /* inside a run of intervals the updates' timing cancels; only its ends count */
        if (i == from || !use[i - 1 - from])
            timing += (double)u->uncertainty_ns;
        if (i + 1 == k || !use[i + 1 - from])
            timing += (double)v->uncertainty_ns;
        used++;
    }
    double gain = integral > 0 ? counter / integral : 0;
    if (!used || !(gain > 0.5 && gain < 2)) /* outside that the sensor is not comparable */
        return g;
    double miss = 0;
    for (uint64_t i = from; i < k; i++) {
        if (!use[i - from])
            continue;
        const struct energy_update *u = update_get(t, i), *v = update_get(t, i + 1);
        double delta = v->counter_mj - u->counter_mj;
        double scaled =
            gain * (energy_track_integral_at(t, v->ts) - energy_track_integral_at(t, u->ts));
        miss += delta > 0 ? fabs(delta - scaled) / delta : 0;
    }
    g.gain = gain;
    g.relative_miss = miss / used + timing / span;
    return g;
}

/* The gain from the intervals over which the sensor was steady, with the interval before each,
 * else within each alone, else from all (a load that changes faster than the sensor reads). */
static struct energy_gain counter_gain(const struct energy_track *t, uint64_t k)
{
    uint64_t from = k > ENERGY_GAIN_UPDATES ? k - ENERGY_GAIN_UPDATES : 0;
    from = from < update_first(t) ? update_first(t) : from;
    if (k >= t->update_total || k < from + 1)
        return (struct energy_gain){1, ENERGY_SENSOR_TOLERANCE};
    unsigned char use[ENERGY_GAIN_UPDATES];
    for (int lookback = 1; lookback >= 0; lookback--) {
        int steady = 0;
        for (uint64_t i = from; i < k; i++)
            steady |= use[i - from] = (unsigned char)sensor_steady(t, i, lookback);
        if (steady)
            return gain_over(t, from, k, use);
    }
    memset(use, 1, sizeof use);
    return gain_over(t, from, k, use);
}

/* Past the last update (or before the first) the energy at ts is the counter's value at the
 * nearest update plus the power integral from there, scaled by the sensor's gain against the
 * counter over the last ~1 s. Both edges of a window past the last update share that update,
 * so when it happened cancels out. */
static struct energy_estimate from_anchor(const struct energy_track *t, uint64_t anchor,
                                          uint64_t ts, uint64_t updates_before)
{
    const struct energy_update *u = update_get(t, anchor);
    struct energy_gain g = counter_gain(t, anchor);
    if (g.relative_miss == ENERGY_SENSOR_TOLERANCE && anchor + 1 < t->update_total)
        g = counter_gain(t, anchor + 1); /* no history before the anchor: use what follows */
    double piece = g.gain * (energy_track_integral_at(t, ts) - energy_track_integral_at(t, u->ts));
    /* power at the anchor, from the counter when the interval after it is complete */
    double mw = t->power_total ? power_get(t, t->power_total - 1)->mw : 0;
    if (anchor + 1 < t->update_total) {
        const struct energy_update *v = update_get(t, anchor + 1);
        mw = (v->counter_mj - u->counter_mj) / (double)(v->ts - u->ts) * 1e9;
    }
    struct energy_estimate e = {.mj = u->counter_mj + piece,
                                .updates_before = updates_before,
                                .relative_miss = g.relative_miss,
                                .anchor = anchor};
    e.error_mj = mw_ns_to_mj(mw, (double)u->uncertainty_ns) + fabs(piece) * g.relative_miss;
    if (updates_before == t->update_total || updates_before == update_first(t))
        e.flags = ENERGY_EXTRAPOLATED; /* no update on one side of ts yet */
    return e;
}

/* Counter power (mW) over the update interval starting at update i, or -1 outside the rings. */
static double interval_mw(const struct energy_track *t, uint64_t i)
{
    if (i < update_first(t) || i >= t->update_total || i + 1 >= t->update_total)
        return -1; /* (i is k - 1 wrapped around when k is 0) */
    const struct energy_update *u = update_get(t, i), *v = update_get(t, i + 1);
    return (v->counter_mj - u->counter_mj) / (double)(v->ts - u->ts) * 1e9;
}

/* Between updates k and k+1 the energy grows linearly in time. The power sensor's shape is
 * not used here: on H200 it changes only every ~120 ms and lags the counter by about one
 * update interval (measured, docs/energy.md), so inside an interval it would misplace energy
 * more than a straight line does. How much power may vary inside the interval is judged from
 * how its counter power differs from its neighbours'. */
static struct energy_estimate interpolate(const struct energy_track *t, uint64_t k, uint64_t ts)
{
    const struct energy_update *a = update_get(t, k), *b = update_get(t, k + 1);
    double span = (double)(b->ts - a->ts), f = (double)(ts - a->ts) / span;
    double delta = b->counter_mj - a->counter_mj, mw = delta / span * 1e9;
    double spread = 0;
    for (int side = -1; side <= 1; side += 2) {
        double other = interval_mw(t, k + (uint64_t)side);
        if (other >= 0 && mw > 0 && fabs(other - mw) / (2 * mw) > spread)
            spread = fabs(other - mw) / (2 * mw);
    }
    spread = spread > 1 ? 1 : spread;
    struct energy_estimate e = {
        .mj = a->counter_mj + f * delta, .updates_before = k + 1, .anchor = k};
    /* a window inside this interval: its length over the interval's, both ends uncertain */
    e.relative_miss = (double)(a->uncertainty_ns + b->uncertainty_ns) / span + spread;
    e.error_mj =
        mw_ns_to_mj(mw, (1 - f) * (double)a->uncertainty_ns + f * (double)b->uncertainty_ns) +
        delta * (f < 1 - f ? f : 1 - f) * spread;
    return e;
}

struct energy_estimate energy_track_at(const struct energy_track *t, uint64_t ts)
{
    struct energy_estimate e = {0};
    if (!t->power_total && !t->update_total) {
        e.flags = ENERGY_NO_DATA;
        return e;
    }
    uint64_t n = update_count_until(t, ts);
    if (t->power_only || t->update_total == 0) {
        e.mj = energy_track_integral_at(t, ts);
        e.flags = ENERGY_POWER_ONLY;
        e.updates_before = n;
        return e;
    }
    if (n > update_first(t) && n < t->update_total)
        return interpolate(t, n - 1, ts);
    return from_anchor(t, n == update_first(t) ? n : n - 1, ts, n);
}

int energy_track_holds(const struct energy_track *t, uint64_t ts)
{
    if (t->power_total > t->power_cap && ts < power_get(t, power_first(t))->ts)
        return 0;
    return !(t->update_total > t->update_cap && ts < update_get(t, update_first(t))->ts);
}

struct energy_interval energy_track_between(const struct energy_track *t, uint64_t start,
                                            uint64_t end)
{
    return energy_interval_of(energy_track_at(t, start), energy_track_at(t, end));
}

struct energy_interval energy_interval_of(struct energy_estimate a, struct energy_estimate b)
{
    struct energy_interval r = {.mj = b.mj - a.mj, .flags = a.flags | b.flags};
    r.updates = b.updates_before - a.updates_before;
    r.error_mj = a.error_mj + b.error_mj;
    if (r.flags & ENERGY_POWER_ONLY)
        r.error_mj = fabs(r.mj) * ENERGY_SENSOR_TOLERANCE;
    else if (a.anchor == b.anchor && a.flags == b.flags) /* one anchor: its timing cancels */
        r.error_mj = fabs(r.mj) * b.relative_miss;
    return r;
}
