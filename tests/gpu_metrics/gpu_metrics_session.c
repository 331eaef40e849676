/* Writes a raw session folder with GPU hardware metrics whose per-GPU, per-range and per-kernel
 * values are known exactly (test_gpu_metrics.py works them out by hand): launcher.lrt with
 * the metric sets, samples and status lines the launcher's sampler writes, and one process's
 * file with a GPU, NVTX ranges, launches and kernels, through the generated encoders.
 * Usage: gpu_metrics_session DIR [LONG] (an empty folder; LONG: GPU-2's samples, 250 000 by
 * default, more than the exports draw per track; scripts/fuzz.sh takes a small one as a
 * seed). U = 100 us, T = 1 s:
 *
 * GPU-1 (CUDA device 0, "NVIDIA H200"), CUPTI PM sampling at 10 kHz, every metric:
 *   s1 [T, T+U)      sm 10  tensor 0   occupancy 5   pcie_rx 1 GB/s
 *   s2 [T+U, T+2U)   sm 50  tensor 40  occupancy 20  pcie_rx 2 GB/s
 *   s3 [T+2U, T+2U)  zero length (sm 99): no time
 *   s4 [T+2U, T+3U)  sm 90  tensor 80  occupancy 30  pcie_rx 4 GB/s
 *   (no sample in [T+3U, T+4U): a gap)
 *   s5 [T+4U, T+6U)  sm 20  tensor 0   occupancy 10  pcie_rx 5 GB/s
 *   other metrics: gr_active 100, sm_issue sm/2, tensor_hmma = tensor, dram_read 25,
 *   dram_write 12.5, dram_bw 37.5, the rest 0; 3 samples lost (a status line).
 * GPU-2 ("NVIDIA H100", no CUDA device), NVML GPM at 10 kHz, sm_active and tensor_active:
 *   LONG samples of U from T: sm (i % 10) x 10, tensor 0.
 * GPU-3 (CUDA device 1, "NVIDIA A100"), CUPTI PM sampling, sm_active, warp_occupancy and
 *   tensor_active: [T, T+2U) 60/40/0, [T+2U, T+4U) 70/50/90, [T+4U, T+6U) 80/60/70.
 * Every GPU: a "not permitted" status line of another source.
 * Kernels on GPU-1 (thread 100): "early" [T-U, T-U/2) before any range and any sample;
 * inside the push/pop range "step": gemm_fp16 [T+U/2, T+3U/2) and [T+2U, T+3U); inside
 * "tail": axpy [T+5U/2, T+9U/2), which overlaps the second gemm for U/2.
 * Kernels on GPU-3, one per sample, alone: an fp16 GEMM whose name says Tensor Cores but
 * which measured none, an fp16 GEMM whose name says SIMT but which measured 90 %, and an
 * fp32-looking one that measured 70 % (TF32 on the Tensor Cores).
 *
 * gpu_metrics_session DIR --gpm-lag MS writes another session instead: GPU-4 (CUDA device 0),
 * NVML GPM, 100 ms samples from 10 s to 14 s whose gr_active is the kernels' busy share of the
 * 100 ms that ended MS before the sample's end (GPM's lag), over kernels of 10 to 90 ms, one
 * every 150 ms. */
#include "import/raw_writer.h"
#include "trace/gpu_metrics.h"

#define U 100000ull
#define T 1000000000ull
static uint64_t long_samples = 250000; /* GPU-2's */

static void launcher(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/launcher.lrt", dir);
    struct raw_writer w;
    raw_open(&w, path, 1 << 20);
    raw_chunk(&w, T - 10 * U);
    raw_process(&w, 99, T - 10 * U, "app", 3, TRACE_FLAG_LAUNCHER, "cuda,nvtx,gpu_metrics");
    RAW(&w, gpu_metric_set, .set_id = 1, .gpu_uuid = trace_cstr("GPU-1"),
        .gpu_name = trace_cstr("NVIDIA H200"), .source = TRACE_GPU_METRICS_PM_SAMPLING,
        .period_ns = U, .metrics = (1u << GPU_METRIC_COUNT) - 1,
        .hardware = trace_cstr("TPC.TriageCompute.sm__cycles_active.avg"),
        .chip = trace_cstr("GH100"));
    static const struct {
        uint64_t start, end;
        double sm, tensor, occupancy, pcie_rx;
    } samples[] = {
        {T, T + U, 10, 0, 5, 1e9},
        {T + U, T + 2 * U, 50, 40, 20, 2e9},
        {T + 2 * U, T + 2 * U, 99, 99, 99, 9e9},
        {T + 2 * U, T + 3 * U, 90, 80, 30, 4e9},
        {T + 4 * U, T + 6 * U, 20, 0, 10, 5e9},
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        double v[GPU_METRIC_COUNT] = {0};
        v[GPU_METRIC_GR_ACTIVE] = 100;
        v[GPU_METRIC_SM_ACTIVE] = samples[i].sm;
        v[GPU_METRIC_SM_ISSUE] = samples[i].sm / 2;
        v[GPU_METRIC_WARP_OCCUPANCY] = samples[i].occupancy;
        v[GPU_METRIC_TENSOR_ACTIVE] = v[GPU_METRIC_TENSOR_HMMA] = samples[i].tensor;
        v[GPU_METRIC_DRAM_READ] = 25;
        v[GPU_METRIC_DRAM_WRITE] = 12.5;
        v[GPU_METRIC_DRAM_BW] = 37.5;
        v[GPU_METRIC_PCIE_RX] = samples[i].pcie_rx;
        struct trace_gpu_metric_sample r = {
            .set_id = 1, .start = samples[i].start, .end = samples[i].end};
        r.values.count = GPU_METRIC_COUNT;
        for (int m = 0; m < GPU_METRIC_COUNT; m++)
            r.values.values[m] = gpu_metric_encode(m, v[m]);
        raw_check(trace_put_gpu_metric_sample(&w.b, &r));
    }
    RAW(&w, gpu_metric_status, .gpu_uuid = trace_cstr("GPU-1"),
        .source = TRACE_GPU_METRICS_PM_SAMPLING, .code = TRACE_GPU_METRICS_LOST, .count = 3,
        .reason = trace_cstr("buffer full"));
    RAW(&w, gpu_metric_set, .set_id = 2, .gpu_uuid = trace_cstr("GPU-2"),
        .gpu_name = trace_cstr("NVIDIA H100"), .source = TRACE_GPU_METRICS_GPM, .period_ns = U,
        .metrics = 1u << GPU_METRIC_SM_ACTIVE | 1u << GPU_METRIC_TENSOR_ACTIVE,
        .hardware = trace_bytes("2\0"
                                "5",
                                3));
    for (uint64_t i = 0; i < long_samples; i++) {
        if (w.b.len > w.cap - 64) { /* a chunk holds ~30 000 samples */
            raw_flush(&w, 0);
            raw_chunk(&w, T + i * U);
        }
        RAW(&w, gpu_metric_sample, .set_id = 2, .start = T + i * U, .end = T + (i + 1) * U,
            .values = {
                .count = 2,
                .values = {gpu_metric_encode(GPU_METRIC_SM_ACTIVE, (double)(i % 10) * 10), 0}});
    }
    RAW(&w, gpu_metric_set, .set_id = 3, .gpu_uuid = trace_cstr("GPU-3"),
        .gpu_name = trace_cstr("NVIDIA A100"), .source = TRACE_GPU_METRICS_PM_SAMPLING,
        .period_ns = U,
        .metrics = 1u << GPU_METRIC_SM_ACTIVE | 1u << GPU_METRIC_WARP_OCCUPANCY |
                   1u << GPU_METRIC_TENSOR_ACTIVE);
    for (uint64_t i = 0; i < 3; i++)
        RAW(&w, gpu_metric_sample, .set_id = 3, .start = T + 2 * i * U, .end = T + 2 * (i + 1) * U,
            .values = {.count = 3,
                       .values = {gpu_metric_encode(GPU_METRIC_SM_ACTIVE, 60 + 10.0 * i),
                                  gpu_metric_encode(GPU_METRIC_WARP_OCCUPANCY, 40 + 10.0 * i),
                                  gpu_metric_encode(GPU_METRIC_TENSOR_ACTIVE, i == 0   ? 0
                                                                              : i == 1 ? 90
                                                                                       : 70)}});
    RAW(&w, gpu_metric_status, .source = TRACE_GPU_METRICS_GPM,
        .code = TRACE_GPU_METRICS_NOT_PERMITTED, .reason = trace_cstr("needs admin"));
    RAW(&w, process_end, .end = T + (long_samples + 10) * U, .clean = 1, .exit_status = 0);
    raw_flush(&w, 0);
    raw_close(&w);
}

static void launch_on(struct raw_writer *w, uint64_t device, uint64_t at, uint64_t correlation,
                      uint64_t start, uint64_t end, uint64_t name)
{
    RAW(w, cuda_api, .os_tid = 100, .api = 0, .cbid = 211, .name = 1, .start = at, .end = at + 10,
        .correlation = correlation);
    RAW(w, cuda_kernel, .device = device, .context = 1 + device, .stream = 7 + device,
        .correlation = correlation, .start = start, .end = end, .name = name, .grid_x = 132,
        .grid_y = 1, .grid_z = 1, .block_x = 256, .block_y = 1, .block_z = 1,
        .registers_per_thread = 32);
}

static void launch(struct raw_writer *w, uint64_t at, uint64_t correlation, uint64_t start,
                   uint64_t end, uint64_t name)
{
    launch_on(w, 0, at, correlation, start, end, name);
}

static void process(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/100-1.lrt", dir);
    struct raw_writer w;
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, T - 10 * U);
    raw_process(&w, 100, T - 10 * U, "app", 3, TRACE_FLAG_CUDA | TRACE_FLAG_NVTX, NULL);
    raw_thread(&w, 1, 100, T - 10 * U);
    const char *names[] = {"cudaLaunchKernel",
                           "step",
                           "tail",
                           "gemm_fp16",
                           "axpy",
                           "early",
                           "ampere_fp16_s16816gemm_fp16_64x64_nn",
                           "gemmSN_TN_kernel_half",
                           "sgemm_128x64_nn"};
    for (int i = 0; i < 9; i++)
        raw_string(&w, (uint64_t)i + 1, names[i]);
    RAW(&w, cuda_device, .device = 0, .name = trace_cstr("NVIDIA H200"),
        .uuid = trace_cstr("GPU-1"), .cc_major = 9, .cc_minor = 0, .sm_count = 132,
        .max_threads_per_sm = 2048, .max_registers_per_sm = 65536, .max_smem_per_sm = 233472,
        .max_blocks_per_sm = 32, .registers_per_block = 65536);
    RAW(&w, cuda_context, .context = 1, .device = 0, .null_stream = 7);
    RAW(&w, cuda_device, .device = 1, .name = trace_cstr("NVIDIA A100"),
        .uuid = trace_cstr("GPU-3"), .cc_major = 8, .cc_minor = 0, .sm_count = 108,
        .max_threads_per_sm = 2048, .max_registers_per_sm = 65536, .max_smem_per_sm = 167936,
        .max_blocks_per_sm = 32, .registers_per_block = 65536);
    RAW(&w, cuda_context, .context = 2, .device = 1, .null_stream = 8);
    for (uint64_t i = 0; i < 3; i++)
        launch_on(&w, 1, T - 4 * U + 100 * i, 10 + i, T + 2 * i * U, T + 2 * (i + 1) * U, 7 + i);
    launch(&w, T - 9 * U, 4, T - U, T - U / 2, 6);
    raw_push(&w, 1, T - 8 * U, 0, 0, 2);
    launch(&w, T - 8 * U + 100, 1, T + U / 2, T + 3 * U / 2, 4);
    launch(&w, T - 8 * U + 200, 2, T + 2 * U, T + 3 * U, 4);
    raw_pop(&w, 1, T - 7 * U, 0, 0);
    raw_push(&w, 1, T - 6 * U, 0, 0, 3);
    launch(&w, T - 6 * U + 100, 3, T + 5 * U / 2, T + 9 * U / 2, 5);
    raw_pop(&w, 1, T - 5 * U, 0, 0);
    RAW(&w, process_end, .end = T + 10 * U, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
}

/* The --gpm-lag session: kernel k runs [K0 + k * 150 ms, + 10 + (k * 37 % 81) ms). */
#define MS 1000000ull
#define K0 (10000 * MS)

static uint64_t lag_kernel_end(uint64_t k)
{
    return K0 + k * 150 * MS + (10 + (k * 37) % 81) * MS;
}

static double busy_share(uint64_t a, uint64_t b)
{
    uint64_t busy = 0;
    for (uint64_t k = 0; k < 30; k++) {
        uint64_t s = K0 + k * 150 * MS, e = lag_kernel_end(k);
        uint64_t lo = s > a ? s : a, hi = e < b ? e : b;
        busy += hi > lo ? hi - lo : 0;
    }
    return 100.0 * (double)busy / (double)(b - a);
}

static void gpm_lag(const char *dir, uint64_t lag)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/launcher.lrt", dir);
    struct raw_writer w;
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, K0 - 500 * MS);
    raw_process(&w, 99, K0 - 500 * MS, "app", 3, TRACE_FLAG_LAUNCHER, "cuda,gpu_metrics");
    RAW(&w, gpu_metric_set, .set_id = 1, .gpu_uuid = trace_cstr("GPU-4"),
        .gpu_name = trace_cstr("NVIDIA H200"), .source = TRACE_GPU_METRICS_GPM,
        .period_ns = 100 * MS, .metrics = 1u << GPU_METRIC_GR_ACTIVE,
        .hardware = trace_bytes("1", 2));
    for (uint64_t i = 0; i < 40; i++) {
        uint64_t a = K0 + i * 100 * MS, b = a + 100 * MS;
        RAW(&w, gpu_metric_sample, .set_id = 1, .start = a, .end = b,
            .values = {.count = 1,
                       .values = {gpu_metric_encode(GPU_METRIC_GR_ACTIVE,
                                                    busy_share(a - lag, b - lag))}});
    }
    RAW(&w, process_end, .end = K0 + 5000 * MS, .clean = 1, .exit_status = 0);
    raw_flush(&w, 0);
    raw_close(&w);

    snprintf(path, sizeof path, "%s/100-1.lrt", dir);
    raw_open(&w, path, 1 << 16);
    raw_chunk(&w, K0 - 500 * MS);
    raw_process(&w, 100, K0 - 500 * MS, "app", 3, TRACE_FLAG_CUDA, NULL);
    raw_thread(&w, 1, 100, K0 - 500 * MS);
    raw_string(&w, 1, "cudaLaunchKernel");
    raw_string(&w, 2, "spin");
    RAW(&w, cuda_device, .device = 0, .name = trace_cstr("NVIDIA H200"),
        .uuid = trace_cstr("GPU-4"), .cc_major = 9, .cc_minor = 0, .sm_count = 132,
        .max_threads_per_sm = 2048, .max_registers_per_sm = 65536, .max_smem_per_sm = 233472,
        .max_blocks_per_sm = 32, .registers_per_block = 65536);
    RAW(&w, cuda_context, .context = 1, .device = 0, .null_stream = 7);
    for (uint64_t k = 0; k < 30; k++)
        launch(&w, K0 + k * 150 * MS - MS, k + 1, K0 + k * 150 * MS, lag_kernel_end(k), 2);
    RAW(&w, process_end, .end = K0 + 5000 * MS, .clean = 1);
    raw_flush(&w, 0);
    raw_close(&w);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[2], "--gpm-lag")) {
        gpm_lag(argv[1], strtoull(argv[3], NULL, 10) * MS);
        return 0;
    }
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: gpu_metrics_session DIR [LONG | --gpm-lag MS]\n");
        return 2;
    }
    if (argc == 3)
        long_samples = strtoull(argv[2], NULL, 10);
    launcher(argv[1]);
    process(argv[1]);
    return 0;
}
