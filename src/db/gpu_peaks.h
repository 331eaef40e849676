/* Theoretical peak rates of an NVIDIA GPU from what CUDA reports about it (compute capability,
 * SM count, maximum SM clock): the per-compute-capability table of docs/trace-format.md ("Peak
 * rates"). Computed, never measured: the importer fills gpus.peak_* with it and the reports
 * compute it again from the gpus row, so a corrected table entry corrects old databases too. */
#ifndef LANTERN_DB_GPU_PEAKS_H
#define LANTERN_DB_GPU_PEAKS_H

#include <stdint.h>

/* Dense FLOP/s (an FMA counts 2); 0 where unknown or unsupported. */
struct gpu_peaks {
    double fp32, fp16, bf16, tf32, fp64;
};

/* The peaks of a GPU of compute capability cc_major.cc_minor with sm_count SMs at
 * sm_clock_khz. Returns 1 when the compute capability is in the table and both counts are
 * known (non-zero), else 0 with every peak 0. */
int gpu_peaks_flops(int64_t cc_major, int64_t cc_minor, int64_t sm_count, int64_t sm_clock_khz,
                    struct gpu_peaks *out);

/* DRAM bytes/s: the bandwidth CUDA reported (bytes/s) when non-zero, else double data rate over
 * the bus (2 x memory_clock_khz x 1000 x memory_bus_bits / 8); 0 when unknown. */
double gpu_peak_dram_bytes_per_s(int64_t reported, int64_t memory_clock_khz,
                                 int64_t memory_bus_bits);

#endif
