/* Theoretical occupancy of a launch and the optimisation hints of `lantern kernels`
 * (PyProf's profile-guided hints: half-precision GEMMs and convolutions that missed the Tensor
 * Cores, and grids too small to fill the GPU). docs/kernels.md documents both. */
#include "model/kernels_model.h"

#include <stdio.h>
#include <string.h>

/* Allocation rules of the CUDA occupancy calculator (cuda_occupancy.h) for compute
 * capability 7.0 and later: registers are allocated per warp in units of 256 from four
 * sub-partitions of the SM's register file; shared memory in units of 128 bytes, and from
 * 8.0 on every block also holds 1 KiB reserved by the system. */
#define WARP_SIZE 32
#define REG_ALLOC_UNIT 256
#define REG_SUB_PARTITIONS 4
#define SMEM_ALLOC_UNIT 128
#define SMEM_RESERVED_PER_BLOCK_SM80 1024
#define MAX_REGS_PER_THREAD 255

static int64_t round_up(int64_t x, int64_t unit)
{
    return (x + unit - 1) / unit * unit;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

double kernels_occupancy(const struct kernels_sm_limits *sm, int64_t block_threads,
                         int64_t regs_per_thread, int64_t smem_bytes)
{
    if (sm->max_threads_per_sm <= 0 || sm->max_regs_per_sm <= 0 || sm->max_smem_per_sm <= 0 ||
        sm->max_blocks_per_sm <= 0 || block_threads <= 0 || regs_per_thread < 0 || smem_bytes < 0 ||
        regs_per_thread > MAX_REGS_PER_THREAD)
        return -1;
    int64_t max_warps = sm->max_threads_per_sm / WARP_SIZE;
    int64_t warps_per_block = round_up(block_threads, WARP_SIZE) / WARP_SIZE;
    int64_t blocks = min64(sm->max_blocks_per_sm, max_warps / warps_per_block);
    if (regs_per_thread > 0) {
        int64_t regs_per_warp = round_up(regs_per_thread * WARP_SIZE, REG_ALLOC_UNIT);
        int64_t warps_per_partition = sm->max_regs_per_sm / REG_SUB_PARTITIONS / regs_per_warp;
        blocks = min64(blocks, warps_per_partition * REG_SUB_PARTITIONS / warps_per_block);
    }
    int64_t smem = smem_bytes + (sm->cc_major >= 8 ? SMEM_RESERVED_PER_BLOCK_SM80 : 0);
    if (smem > 0)
        blocks = min64(blocks, sm->max_smem_per_sm / round_up(smem, SMEM_ALLOC_UNIT));
    if (blocks <= 0)
        return -1;
    return (double)(blocks * warps_per_block) / (double)max_warps;
}

/* Tensor Core MMA shapes need every GEMM dimension (and conv channel count) to be a multiple
 * of 8 for fp16/bf16; cuBLAS and cuDNN fall back to CUDA cores otherwise (NVIDIA's Deep
 * Learning Performance guide, "Tensor Core requirements"). */
static int misaligned(const int64_t mnk[3])
{
    for (int i = 0; i < 3; i++)
        if (mnk[i] > 0 && mnk[i] % 8 != 0)
            return 1;
    return 0;
}

unsigned kernels_hints(const struct kernels_hint_input *in)
{
    unsigned hints = 0;
    int half = in->dtype == KERNELS_DTYPE_FP16 || in->dtype == KERNELS_DTYPE_BF16;
    if (in->is_gemm_like && half && in->tc == KERNELS_TC_NO)
        hints |= misaligned(in->gemm_mnk) ? KERNELS_HINT_NO_TC_ALIGN8 : KERNELS_HINT_NO_TC;
    if (in->blocks > 0 && in->sm_count > 0 && in->blocks < in->sm_count)
        hints |= KERNELS_HINT_SMALL_GRID;
    return hints;
}

char *kernels_hints_format(unsigned hints, char *out, size_t size)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{KERNELS_HINT_NO_TC_ALIGN8, "no-tc-align8"},
                 {KERNELS_HINT_NO_TC, "no-tc"},
                 {KERNELS_HINT_SMALL_GRID, "small-grid"}};
    size_t used = 0;
    if (size == 0)
        return out;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(hints & names[i].bit))
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? "," : "", names[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    return out;
}
