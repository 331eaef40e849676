/* The rules' thresholds, documented in docs/analyze.md and in the table's rows (rules.c);
 * the gpu_idle rule's GPU_IDLE_GAP_NS is the timeline pass's (timeline.h). */
#ifndef LANTERN_ANALYZE_THRESHOLDS_H
#define LANTERN_ANALYZE_THRESHOLDS_H

#define UTIL_WINDOWS 100 /* the session in 100 windows */
#define UTIL_LOW_PERCENT 50.0
#define SYNC_API_MIN_SHARE 1.0 /* % of the run blocked in one kind of call */
#define LAUNCH_MIN_KERNELS 10
#define LAUNCH_SHORT_SHARE 0.5 /* half the launches shorter than their launch call */
#define ALLOC_MIN_CALLS_ONE_RANGE 10
#define ALLOC_MIN_REPEATS 2
#define SMALL_GRID_MIN_NS 10000 /* 10 us of a launch shape in the run */
#define LOW_OCCUPANCY 0.25
#define ENERGY_RATIO 2.0
#define ENERGY_MIN_SHARE 5.0
#define STREAM_MIN_OVERLAP_SHARE 5.0 /* % of the stream's time that overlap could save */

#endif
