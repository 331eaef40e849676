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
/* stragglers: a rank last at >= 60 % of the >= 3 collectives it took part in (a clear
 * majority: by chance a rank of N is last 1/N of the time), with a mean lag (last -
 * second-last) >= 10 us (launch jitter is a few us) adding up to >= 1 % of the run */
#define STRAGGLER_MIN_COLLECTIVES 3
#define STRAGGLER_LAST_SHARE 60.0
#define STRAGGLER_MIN_LAG_NS 10000
#define STRAGGLER_MIN_SHARE 1.0
/* comm_overlap: NCCL kernel time not overlapped by computation >= 10 % of a rank's GPU span */
#define COMM_EXPOSED_MIN_SHARE 10.0
/* rank_idle: a rank's GPU idle share >= 2x the other ranks' median and >= 5 points above it */
#define RANK_IDLE_RATIO 2.0
#define RANK_IDLE_MIN_EXCESS 5.0
/* host activity (host_activity.c): a pattern's advice when it covers >= 30 % of the samples
 * in a finding's windows, or of their time blocked in the calls it names */
#define HOST_PATTERN_MIN_PERCENT 30.0
/* cpu_bound_ranges: an instance whose thread was on the CPU >= 50 % of it while its process's
 * GPUs were busy < 50 % of it, at least 10 sampling periods long (fewer samples say little);
 * a range name reported when such instances add up to >= 1 % of the run */
#define CPU_BOUND_ON_CPU_PERCENT 50.0
#define CPU_BOUND_GPU_BUSY_PERCENT 50.0
#define CPU_BOUND_MIN_PERIODS 10
#define CPU_BOUND_MIN_SHARE 1.0

#endif
