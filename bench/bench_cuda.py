#!/usr/bin/env python3
"""Overhead of CUDA tracing on PyTorch programs (docs/benchmarks.md, "CUDA tracing"): the same
workload run as is, under `lantern profile -t cuda,nvtx`, under torch.profiler (CUDA
activities) and under Nsight Systems' collection, all at once in lockstep (bench/lockstep.py):
one timed block at a time, mode after mode, and each round's ratio to the baseline's block;
the figure is the median of those ratios.

  python3 bench/bench_cuda.py --build build [--rounds 40] [--nsys PATH] [--json OUT]
  python3 bench/bench_cuda.py --workload loop|transformer [--torch-profiler]   (one run, alone)

Workloads: "loop", launch-bound (two tiny elementwise kernels and one NVTX range per
iteration); "cuda_loop", the same in CUDA C (bench/cuda_launch: no framework, so what a tracer
adds per launch stands out); "transformer", one training step of a small transformer encoder
(d_model 256: also launch-bound); "transformer_gpu", one step of a larger one that keeps the
GPU busy."""
import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import lockstep

# Iterations: warm-up, then timed blocks of ~50-100 ms (one per lockstep round, or BLOCKS for a
# run alone, which reports its median block).
LOOP_WARMUP, LOOP_BLOCK = 3000, 3000
STEP_WARMUP, STEP_BLOCK = 10, 4
BLOCKS = 9


# ---- one run: the workload, timed inside the program ----------------------------------------

def loop_workload(torch):
    x = torch.ones(256, device="cuda")
    nvtx = torch.cuda.nvtx

    def iterations(n):
        for _ in range(n):
            nvtx.range_push("iter")
            y = x + 1.0
            y.mul_(2.0)
            nvtx.range_pop()

    return iterations, LOOP_WARMUP, LOOP_BLOCK


def transformer_workload(torch):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.randn(32, 128, 256, device="cuda")
    nvtx = torch.cuda.nvtx

    def iterations(n):
        for _ in range(n):
            nvtx.range_push("step")
            opt.zero_grad(set_to_none=True)
            loss = model(data).pow(2).mean()
            loss.backward()
            opt.step()
            nvtx.range_pop()

    return iterations, STEP_WARMUP, STEP_BLOCK


def transformer_gpu_workload(torch):
    """A step that keeps the GPU busy (d_model 1024, 8 layers, batch 16 x 512 tokens, bf16
    autocast): launch overhead hides behind GPU time, as in most real training."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=8).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.randn(16, 512, 1024, device="cuda")
    nvtx = torch.cuda.nvtx

    def iterations(n):
        for _ in range(n):
            nvtx.range_push("step")
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(data).float().pow(2).mean()
            loss.backward()
            opt.step()
            nvtx.range_pop()

    return iterations, STEP_WARMUP, STEP_BLOCK


def run_one(name, use_torch_profiler, build, lockstep_dir=None):
    if name == "cuda_loop":
        if use_torch_profiler:
            sys.exit("cuda_loop: no torch.profiler for a CUDA C program")
        binary = os.path.join(build, "bin", "cuda_launch")
        os.execv(binary, [binary] + (["5000", "--lockstep", lockstep_dir] if lockstep_dir else []))
    import torch
    iterations, warmup, block = {"loop": loop_workload, "transformer": transformer_workload,
                                 "transformer_gpu": transformer_gpu_workload}[name](torch)
    profiler = None
    if use_torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
        profiler.__enter__()
    iterations(warmup)
    torch.cuda.synchronize()

    def timed_block():
        start = time.perf_counter()
        iterations(block)
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / block

    if lockstep_dir:
        lockstep.serve(lockstep_dir, timed_block)
    else:
        per_iter = [timed_block() for _ in range(BLOCKS)]
        print(f"per_iter_us={statistics.median(per_iter) * 1e6:.3f}")
    if profiler:
        profiler.__exit__(None, None, None)   # collection ends outside the timed part


# ---- the driver: lockstep rounds -------------------------------------------------------------

def find_nsys(explicit):
    if explicit:
        return explicit
    found = shutil.which("nsys")
    if found:
        return found
    for pattern in ("/usr/local/cuda*/bin/nsys", "/opt/nvidia/nsight-systems*/bin/nsys",
                    "/usr/local/cuda*/nsight-systems*/bin/nsys", "/opt/nvidia/nsight-compute*/**/nsys",
                    "/usr/local/cuda*/nsight-compute*/**/nsys"):
        hits = [h for h in glob.glob(pattern, recursive=True) if os.path.isfile(h) and os.access(h, os.X_OK)]
        if hits:
            return sorted(hits)[-1]
    return None


def mode_commands(build, nsys, tmp, workload, variants, torch_profiler):
    """{mode: f(fifo_dir) -> argv} for one workload."""
    me = [sys.executable, os.path.abspath(__file__), "--build", os.path.abspath(build),
          "--workload", workload]
    lantern = os.path.join(build, "bin", "lantern")

    def traced(name, trace, env):
        db = os.path.join(tmp, f"{name}-{workload}.db")
        return lambda d: env + [lantern, "profile", "-f", "-t", trace, "-o", db, "--"] + me + ["--lockstep", d]

    modes = {"baseline": lambda d: me + ["--lockstep", d], "lantern": traced("lantern", "cuda,nvtx", [])}
    if torch_profiler and workload != "cuda_loop":
        modes["torch.profiler"] = lambda d: me + ["--torch-profiler", "--lockstep", d]
    for spec in variants:
        # "name|trace|VAR=value;VAR=value": lantern with another -t list or environment
        name, trace, env = (spec.split("|") + ["", ""])[:3]
        modes[name] = traced(name, trace, ["env"] + [kv for kv in env.split(";") if kv])
    if nsys:
        out = os.path.join(tmp, f"nsys-{workload}")
        modes["nsys"] = lambda d: [nsys, "profile", "-t", "cuda,nvtx", "--force-overwrite", "true",
                                   "-o", out] + me + ["--lockstep", d]
    return modes


def drive(args):
    nsys = find_nsys(args.nsys) if not args.no_nsys else None
    print(f"nsys: {nsys or 'not used'}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            modes = mode_commands(args.build, nsys, tmp, workload, args.variant,
                                  not args.no_torch_profiler)
            work_dir = os.path.join(tmp, workload)
            os.makedirs(work_dir)
            samples = lockstep.run(modes, args.rounds, args.cpus, work_dir)
            results[workload] = samples
            for mode, s in samples.items():
                print(f"{workload:15s} " + lockstep.summary(mode, s), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=["loop", "cuda_loop", "transformer", "transformer_gpu"], help="run one workload once")
    p.add_argument("--torch-profiler", action="store_true")
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--nsys")
    p.add_argument("--workloads", nargs="+", default=["loop", "transformer"])
    p.add_argument("--json")
    p.add_argument("--variant", action="append", default=[],
                   help="another lantern mode: 'name|trace list|VAR=value;VAR=value'")
    p.add_argument("--no-nsys", action="store_true")
    p.add_argument("--no-torch-profiler", action="store_true")
    p.add_argument("--cpus", help="taskset CPU list for every mode, e.g. 2-9")
    p.add_argument("--lockstep", metavar="DIR", help=argparse.SUPPRESS)  # set by the driver
    args = p.parse_args()
    if args.workload:
        run_one(args.workload, args.torch_profiler, args.build, args.lockstep)
    else:
        drive(args)


if __name__ == "__main__":
    main()
