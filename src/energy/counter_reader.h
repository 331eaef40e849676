/* When to read a GPU's energy counter, and when each update happened. Reading the counter is
 * slow inside the driver (2.6-15 ms on an H100, driver 580) and the profiled program's own
 * driver calls wait behind it: read back to back, it made a cudaMalloc loop 600x slower
 * (bench/nvml_interference, docs/benchmarks.md). The counter changes on a fixed grid (every
 * 100.000 ms on H100, the updates' phase stable to under 1.4 ms over 6 s, measured), so this
 * reader reads about once per update, 32 ms after it is due, and learns the grid's phase from
 * which reads saw a change: each read tells whether the update had happened by then, and the
 * window where the next update must fall narrows by bisection to ~2 ms. A GPU whose counter
 * does not follow a grid is read at a fixed 10 Hz instead (free mode).
 *
 * Pure logic, no NVML call and no clock read: the caller reads the counter when told to and
 * feeds what it read, so tests can drive it with a simulated counter. */
#ifndef LANTERN_ENERGY_COUNTER_READER_H
#define LANTERN_ENERGY_COUNTER_READER_H

#include <stdint.h>

/* One update, as recorded: when (the middle of the window it is known to lie in), how
 * uncertain that is (half the window), and the counter's new value. */
struct counter_update {
    uint64_t ts;
    uint64_t uncertainty_ns;
    uint64_t mj;
};

enum counter_mode {
    COUNTER_ACQUIRE, /* no update seen yet: a read every acquire_gap_ns */
    COUNTER_LOCKED,  /* the grid is known: about one read per update */
    COUNTER_FREE,    /* no grid: one read every COUNTER_FREE_PERIOD_NS */
};

#define COUNTER_FREE_RESETS 6

struct counter_reader {
    enum counter_mode mode;
    int have_read;
    uint64_t last_end;       /* when the last read ended (its value's time) */
    uint64_t last_mj;        /* its value */
    uint64_t read_ns;        /* a recent read's duration, to start a read so it ends on time */
    uint64_t fast_read_ns;   /* a fast read's duration: how much reads vary, how narrow a
                                window can get */
    uint64_t win_lo, win_hi; /* the next update happens in (win_lo, win_hi] (locked mode) */
    uint64_t period_ns;      /* the grid's period, learned */
    uint64_t period_err_ns;  /* how wrong period_ns may be, per period */
    int since_check;         /* updates since the last read placed before a window */
    int anchor_set;          /* the period's anchor: an update's index and window */
    uint64_t anchor_index, anchor_lo, anchor_hi;
    uint64_t index;        /* updates seen */
    uint64_t bisected_for; /* index + 1 of the update a read last aimed at the middle of */
    int64_t straddle_ns;   /* how much longer than read_ns a read takes when the counter
                              updates during it (an average; <= 0: not slower) */
    uint64_t straddled;    /* aimed reads that saw their update (straddle_ns's samples) */
    uint64_t reset_index[COUNTER_FREE_RESETS]; /* index at the last resets (a ring) */
    uint64_t reads, resets;                    /* reads fed; reads that contradicted the window */
    uint64_t acquire_gap_ns; /* between reads until the first update (init: 35 ms) */
};

void counter_reader_init(struct counter_reader *r);

/* When the next read should start (CLOCK_MONOTONIC ns). Never earlier than the end of the last
 * read plus COUNTER_MIN_GAP_NS, except while acquiring (acquire_gap_ns). */
uint64_t counter_reader_next_start(const struct counter_reader *r);

/* A read that ran from start to end returned mj. Returns 1 and fills *u when the value
 * changed (an update happened since the previous read), else 0. */
int counter_reader_feed(struct counter_reader *r, uint64_t start, uint64_t end, uint64_t mj,
                        struct counter_update *u);

#endif
