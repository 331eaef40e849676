/* The energy model shared by the energy windows (live) and the reports (from the database):
 * the GPU's energy counter only changes every ~100 ms (H100/H200, measured), so the energy at
 * an instant between two updates is interpolated linearly in time, and past the last update
 * it is the counter's last value plus the power integral since, scaled by the power sensor's
 * gain against the counter over the last ~1 s. The energy of an interval is the difference of
 * its edges', so disjoint adjacent intervals add up exactly (they telescope), and long
 * intervals rest on the counter alone. */
#ifndef LANTERN_ENERGY_MODEL_H
#define LANTERN_ENERGY_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* How energy_track_at found its answer (bits). */
#define ENERGY_EXTRAPOLATED 0x1u /* no counter update after (or before) the instant yet */
#define ENERGY_POWER_ONLY 0x2u   /* no counter at all (pre-Volta, or forced): power-integrated */
#define ENERGY_NO_DATA 0x4u      /* no power sample: 0 */

struct energy_power_point {
    uint64_t ts;
    double mw;
    double integral_mj; /* trapezoidal integral of power from the first sample */
};

struct energy_update {
    uint64_t ts;             /* middle of the read that first saw the new value */
    uint64_t uncertainty_ns; /* the change happened within ts ± uncertainty_ns */
    double counter_mj;
};

/* One GPU's samples: fixed-capacity rings (the oldest are overwritten), so memory stays
 * bounded in a long-running program. The caller serialises access. */
struct energy_track {
    struct energy_power_point *power;
    size_t power_cap;
    uint64_t power_total; /* samples ever added; the ring holds the last power_cap */
    struct energy_update *updates;
    size_t update_cap;
    uint64_t update_total;
    int power_only; /* ignore the counter: integrate power (the pre-Volta method) */
};

/* Returns 0 or -ENOMEM. */
int energy_track_init(struct energy_track *t, size_t power_cap, size_t update_cap);
void energy_track_release(struct energy_track *t);

/* Adds a power sample; samples come in time order. */
void energy_track_add_power(struct energy_track *t, uint64_t ts, double mw);
/* Adds a counter update (when it happened, within ± uncertainty_ns: src/energy/counter_reader.h
 * finds that out from the reads); updates come in time order. */
void energy_track_add_update(struct energy_track *t, uint64_t ts, uint64_t uncertainty_ns,
                             double counter_mj);

/* Integral of power from the first sample up to ts (extended with the nearest sample's power
 * outside the samples). */
double energy_track_integral_at(const struct energy_track *t, uint64_t ts);

/* The GPU's energy (mJ, on the counter's scale) at instant ts, an error bound for it (mJ) and
 * ENERGY_* flags. */
struct energy_estimate {
    double mj;
    double error_mj;
    unsigned flags;
    uint64_t updates_before; /* counter updates at or before ts */
    uint64_t anchor;         /* the update the estimate starts from */
    double relative_miss;    /* expected relative error of a piece starting at anchor */
};
struct energy_estimate energy_track_at(const struct energy_track *t, uint64_t ts);

/* Energy between two instants with its bound: end - start; flags or-ed; updates = counter
 * updates strictly inside. */
struct energy_interval {
    double mj;
    double error_mj;
    unsigned flags;
    uint64_t updates;
};
struct energy_interval energy_track_between(const struct energy_track *t, uint64_t start,
                                            uint64_t end);
/* The interval between two instants estimated separately (e.g. the start estimated when it
 * happened, because the samples around it may have left the rings since). */
struct energy_interval energy_interval_of(struct energy_estimate start, struct energy_estimate end);
/* Whether ts is still inside the samples the rings hold (1) or older (0). */
int energy_track_holds(const struct energy_track *t, uint64_t ts);

#endif
