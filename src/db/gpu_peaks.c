/* The peak-rate table of gpu_peaks.h: dense FLOP per clock per SM by compute capability, from
 * NVIDIA's architecture whitepapers (docs/trace-format.md, "Peak rates"). */
#include "db/gpu_peaks.h"

#include <stddef.h>

struct gpu_rates {
    unsigned cc, fp32, fp16, bf16, tf32, fp64; /* cc: major * 10 + minor; 0: unsupported */
};

static const struct gpu_rates gpu_rate_table[] = {
    {70, 128, 1024, 0, 0, 64},         /* V100 */
    {75, 128, 1024, 0, 0, 4},          /* T4, RTX 20 */
    {80, 128, 2048, 2048, 1024, 128},  /* A100 (FP64 through the tensor cores) */
    {86, 256, 1024, 1024, 512, 4},     /* A10, A40, RTX 30 */
    {89, 256, 1024, 1024, 512, 4},     /* L4, L40, RTX 40 */
    {90, 256, 4096, 4096, 2048, 256},  /* H100, H200 (FP64 through the tensor cores) */
    {100, 256, 8192, 8192, 4096, 128}, /* B200 */
};

/* per clock per SM x SMs x clock (the maximum SM clock CUDA reports); 0 when any is 0 */
static double peak(unsigned per_clock_per_sm, int64_t sm_count, int64_t clock_khz)
{
    if (!per_clock_per_sm || !sm_count || !clock_khz)
        return 0;
    return (double)per_clock_per_sm * (double)sm_count * (double)clock_khz * 1e3;
}

int gpu_peaks_flops(int64_t cc_major, int64_t cc_minor, int64_t sm_count, int64_t sm_clock_khz,
                    struct gpu_peaks *out)
{
    *out = (struct gpu_peaks){0};
    unsigned cc = (unsigned)cc_major * 10 + (unsigned)cc_minor;
    const struct gpu_rates *r = NULL;
    for (size_t i = 0; i < sizeof gpu_rate_table / sizeof gpu_rate_table[0]; i++)
        if (gpu_rate_table[i].cc == cc)
            r = &gpu_rate_table[i];
    if (!r || !sm_count || !sm_clock_khz)
        return 0;
    out->fp32 = peak(r->fp32, sm_count, sm_clock_khz);
    out->fp16 = peak(r->fp16, sm_count, sm_clock_khz);
    out->bf16 = peak(r->bf16, sm_count, sm_clock_khz);
    out->tf32 = peak(r->tf32, sm_count, sm_clock_khz);
    out->fp64 = peak(r->fp64, sm_count, sm_clock_khz);
    return 1;
}

double gpu_peak_dram_bytes_per_s(int64_t reported, int64_t memory_clock_khz,
                                 int64_t memory_bus_bits)
{
    double dram = reported ? (double)reported
                           : 2.0 * (double)memory_clock_khz * 1e3 * (double)memory_bus_bits / 8.0;
    return dram > 0 ? dram : 0;
}
