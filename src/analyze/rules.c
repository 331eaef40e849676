/* The table of rules: `lantern analyze` runs them in this order, `--rule NAME` picks some,
 * `lantern analyze --help` lists them, and docs/analyze.md describes each. Adding a rule is a
 * function in its own file and a row here. */
#include "analyze/analyze.h"

/* The rules, one file per rule or family. */
int rule_pageable_memcpy(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_sync_memops(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_sync_api(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_gpu_idle(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_gpu_utilization(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_launch_bound(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_cpu_bound_ranges(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_alloc_in_loop(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_stream_use(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_tensor_cores(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_small_grid(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_energy(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_stragglers(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_comm_overlap(struct analyze_ctx *ctx, struct analyze_result *res);
int rule_rank_idle(struct analyze_ctx *ctx, struct analyze_result *res);

const struct analyze_rule analyze_rules[] = {
    {"pageable_memcpy", "copies between the GPU and pageable (not page-locked) host memory",
     "any such copy",
     "allocate the host buffers pinned (cudaMallocHost, cuda.pinned_array, "
     "tensor.pin_memory()) so copies run at full speed and can overlap",
     rule_pageable_memcpy},
    {"sync_memops", "synchronous copies and memsets (the CPU waits for each)",
     "any synchronous copy or memset with a recorded API call",
     "use cudaMemcpyAsync/cudaMemsetAsync on a stream (with pinned host memory) and "
     "synchronize once, where the result is needed",
     rule_sync_memops},
    {"sync_api", "synchronizing API calls and the CPU time they blocked",
     "a thread blocked >= 1 % of the run in one synchronizing function",
     "synchronize less often (once per iteration, or on an event where the data is needed); "
     "let the CPU queue the next work meanwhile",
     rule_sync_api},
    {"gpu_idle", "gaps in each GPU's work, and what the GPU waited for (per NVTX range)",
     "gaps >= 100 us between a GPU's first and last work",
     "keep work queued ahead of the GPU: move CPU work off the critical path, remove "
     "synchronizations, prefetch input",
     rule_gpu_idle},
    {"gpu_utilization", "windows of the run in which a GPU was mostly idle",
     "windows (1/100 of the run) in which a GPU was busy < 50 % of the time",
     "look at what the CPU does in these windows (NVTX ranges); overlap it with GPU work",
     rule_gpu_utilization},
    {"launch_bound", "kernels shorter than the CPU call that launched them; launch delays",
     ">= 10 launches of a kernel, half or more shorter than their launch call",
     "launch fewer, larger kernels: CUDA graphs, kernel fusion (torch.compile, cupy.fuse), "
     "larger batches",
     rule_launch_bound},
    {"cpu_bound_ranges",
     "NVTX ranges whose thread was on the CPU most of the time while the GPU idled (CPU samples)",
     "instances >= 10 sampling periods, on CPU >= 50 % and GPU busy < 50 % of them, >= 1 % of "
     "the run per range name",
     "the CPU sets this range's pace: speed up or move off the critical path the functions "
     "named (host), overlap them with GPU work",
     rule_cpu_bound_ranges},
    {"alloc_in_loop", "cudaMalloc/cudaFree (and host/managed twins) inside NVTX ranges",
     ">= 10 calls in a range name, or >= 2 in a range name that repeats",
     "allocate once outside the loop, or use a pool allocator (RMM pool, CuPy's memory "
     "pool, cudaMallocAsync)",
     rule_alloc_in_loop},
    {"stream_use",
     "work serialized on one stream: streams created but unused, per-index work on one "
     "stream, copies and kernels that never overlap",
     "2+ streams created and one used; 2+ indexed NVTX ranges whose work shares one stream; "
     "copy/compute overlap that could save >= 5 % of a stream's time",
     "give each independent chunk its own stream (check the stream handles differ) and use "
     "pinned memory so copies overlap kernels",
     rule_stream_use},
    {"tensor_cores", "fp16/bf16 GEMMs and convolutions that do not run on Tensor Cores",
     "any such kernel (measured tensor_active where GPU metrics were recorded, else from its "
     "name; shapes from PyTorch's emit_nvtx markers)",
     "make GEMM dimensions and channel counts multiples of 8 (pad), and check the math "
     "mode (torch.backends.cuda.matmul)",
     rule_tensor_cores},
    {"small_grid", "kernels with fewer blocks than the GPU has SMs, or low theoretical occupancy",
     "launch shapes with >= 10 us in the run and blocks < SMs, or occupancy < 25 %",
     "launch at least one block per SM (more threads per launch, split the work), or reduce "
     "registers/shared memory per block",
     rule_small_grid},
    {"energy",
     "NVTX ranges that spend the most energy per unit of GPU work; power or thermal "
     "throttling",
     "ranges with >= 5 % of the run's energy at >= 2x its joules per GPU-busy second; any "
     "throttled period",
     "keep the GPU busy during these ranges (energy at low utilization is mostly idle power); "
     "check cooling and power limits for throttling",
     rule_energy},
    /* across the ranks of a job (a merged database: docs/multi-rank.md); silent on one process */
    {"stragglers",
     "the rank that arrives last at the job's NCCL collectives, and how long the others wait",
     "a rank last at >= 60 % of >= 3 collectives, mean lag (last - second-last) >= 10 us, "
     ">= 1 % of the run in all",
     "find what this rank does before its collectives that the others do not (input, CPU "
     "work, a slower GPU, throttling: see its gpu_idle and energy findings) and even it out",
     rule_stragglers},
    {"comm_overlap", "NCCL communication not hidden behind computation, per rank",
     "exposed NCCL time >= 10 % of a rank's GPU span",
     "overlap communication with computation (DDP gradient buckets, FSDP prefetch, async "
     "collectives on their own stream); fix stragglers first: waiting for the last rank counts "
     "as exposed time",
     rule_comm_overlap},
    {"rank_idle", "a rank whose GPU idles much more than the other ranks' GPUs",
     "idle share >= 2x the other ranks' median and >= 5 points above it",
     "this rank is the culprit: its GPU waits for its own CPU (input pipeline, Python, host "
     "synchronization) while the others wait for it inside NCCL, where their GPUs look busy; "
     "look at this rank's gpu_idle gaps",
     rule_rank_idle},
    {NULL, NULL, NULL, NULL, NULL},
};
