#!/usr/bin/env python3
"""Overhead of CUDA tracing on PyTorch programs (docs/benchmarks.md, "CUDA tracing"): the same
workload run as is, under `lantern profile -t cuda,nvtx`, under torch.profiler (CUDA
activities) and under Nsight Systems' collection, in alternating rounds; each run times its
steady-state iterations itself and the medians' ratios to the baseline are reported.

  python3 bench/bench_cuda.py --build build [--rounds 5] [--nsys PATH] [--json OUT]
  python3 bench/bench_cuda.py --build build --paired [--rounds 3]       (traced vs paused)
  python3 bench/bench_cuda.py --build build --paired --pause session --variant ...
  python3 bench/bench_cuda.py --workload loop|transformer [--torch-profiler] [--paired] (one run)

Workloads: "loop", launch-bound (two tiny elementwise kernels and one NVTX range per
iteration); "cuda_loop", the same in CUDA C (bench/cuda_launch: no framework, so what a tracer
adds per launch stands out); "transformer", one training step of a small transformer encoder (d_model 256: also
launch-bound); "transformer_gpu", one step of a larger one that keeps the GPU busy.

--paired measures inside each process, for a precision that the lent machines' run-to-run
swings (a whole run up to 25 % faster or slower than the next, docs/benchmarks.md) do not
allow across processes: Lantern runs with --capture-range=cudaProfilerApi, and the program
alternates blocks inside cudaProfilerStart/Stop (traced) with blocks outside (CUPTI paused),
PAIRS pairs in an alternating order; a run reports the median of its pairs' traced/paused
ratios. That is what recording costs on top of a paused CUPTI, not the whole overhead (a paused
CUPTI keeps part of its cost; lab/cupti_detach measures against a detached one).
The baseline does the same with no tool: its ratio is the method's own bias (~1.00).
--pause session pairs recording with the whole session paused instead (lantern profile
--start-paused --single-file; the program sends SIGUSR1/SIGUSR2 to lantern, its parent, and
waits SESSION_SETTLE_S for the agent to see it): CPU sampling, -t osrt and NVTX pause too, so
a variant's ratio is what its sources cost while recording, against a paused agent; the
ratio of two variants' ratios (e.g. -t cuda,nvtx,cpu over -t cuda,nvtx) is what one source
adds (docs/benchmarks.md, "CPU sampling's cost, paired").

The lent machine's CPUs run in one of two speeds for minutes at a time (docs/benchmark-history.md,
fourth session), and a launch-bound run goes at the speed it started in. Every loop run
therefore also times the same loop on CPU tensors, with no CUDA call and no NVTX range, which
no tracer touches (cpu_ref_us=X). Where those references fall into two groups, the loop's
ratios are also reported within each group ("by CPU state"), which compares runs made at the
same CPU speed."""
import argparse
import glob
import json
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time

from alternate import alternate_rounds

# Iterations: warm-up, then BLOCKS timed blocks; a run reports its median block, so a
# hiccup inside one run (a page fault storm, a frequency change) does not move its figure.
LOOP_WARMUP, LOOP_BLOCK = 3000, 3000
STEP_WARMUP, STEP_BLOCK = 10, 5
BLOCKS = 9
# --paired: pairs of (traced, paused) blocks of PAIRED_BLOCK iterations or steps.
PAIRS = 30
PAIRED_LOOP_BLOCK, PAIRED_STEP_BLOCK = 1000, 2
# --pause session: the wait after each signal to lantern (the agent looks every 10 ms)
SESSION_SETTLE_S = 0.05
# Two CPU speeds: the runs' CPU reference times part into two groups whose medians differ by
# more than this (run 31: 7.3 and 12.3 us). A wide single spread may be split too, which is
# still a fair comparison: runs are only compared with runs of like CPU speed.
STATE_GAP = 1.4


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


def loop_cpu_reference(torch):
    """The loop's work on CPU tensors, with no CUDA call and no NVTX range: the run's own CPU
    speed, which no tracer changes."""
    x = torch.ones(256)

    def iterations(n):
        for _ in range(n):
            y = x + 1.0
            y.mul_(2.0)

    return iterations


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


def paired_blocks(torch, iterations, block, enter=None, leave=None, settle=0):
    """PAIRS pairs of blocks, one in the state under test and one not, in an alternating order;
    prints the median tested/other ratio and each side's median µs per iteration, wall and
    user/system CPU time of this thread. By default the tested state is traced (inside
    cudaProfilerStart/Stop) and the other paused; `enter` and `leave` switch into and out of
    another state (lab/cupti_detach), and `settle` untimed iterations follow each switch."""
    enter = enter or torch.cuda.profiler.start
    leave = leave or torch.cuda.profiler.stop

    def timed(tested):
        if tested:
            enter()
        if settle:
            iterations(settle)
            torch.cuda.synchronize()
        before, start = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
        iterations(block)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_THREAD)
        if tested:
            leave()
        return (seconds / block, (after.ru_utime - before.ru_utime) / block,
                (after.ru_stime - before.ru_stime) / block)

    ratios, sides = [], {"tested": [], "other": []}
    for p in range(PAIRS):
        first = p % 2 == 0
        a, b = timed(first), timed(not first)
        tested, other = (a, b) if first else (b, a)
        sides["tested"].append(tested)
        sides["other"].append(other)
        ratios.append(tested[0] / other[0])
    for side, samples in sides.items():
        wall, user, system = (statistics.median(s[i] for s in samples) * 1e6 for i in range(3))
        print(f"{side}_us={wall:.3f}\n{side}_user_us={user:.3f}\n{side}_sys_us={system:.3f}")
    print(f"paired_ratio={statistics.median(ratios):.4f}")


def session_switch(sig):
    """--pause session: start (SIGUSR1) or stop (SIGUSR2) lantern's session, when run under it
    (the baseline has no session: nothing to switch)."""
    def switch():
        if os.environ.get("LANTERN_SESSION_DIR"):
            os.kill(os.getppid(), sig)
        time.sleep(SESSION_SETTLE_S)
    return switch


def run_one(name, use_torch_profiler, build, paired=False, pause="cupti"):
    if name == "cuda_loop":
        if use_torch_profiler:
            sys.exit("cuda_loop: no torch.profiler for a CUDA C program")
        binary = os.path.join(build, "bin", "cuda_launch")
        os.execv(binary, [binary] + (["1000", "paired"] if paired else []))
    import torch
    iterations, warmup, block = {"loop": loop_workload, "transformer": transformer_workload,
                                 "transformer_gpu": transformer_gpu_workload}[name](torch)
    if paired:
        iterations(warmup)
        torch.cuda.synchronize()
        block = PAIRED_LOOP_BLOCK if name == "loop" else PAIRED_STEP_BLOCK
        if pause == "session":
            paired_blocks(torch, iterations, block, session_switch(signal.SIGUSR1),
                          session_switch(signal.SIGUSR2))
        else:
            paired_blocks(torch, iterations, block)
        return
    profiler = None
    if use_torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
        profiler.__enter__()
    reference = loop_cpu_reference(torch) if name == "loop" else None
    iterations(warmup)
    torch.cuda.synchronize()
    per_iter, per_reference = [], []
    for _ in range(BLOCKS):
        start = time.perf_counter()
        iterations(block)
        torch.cuda.synchronize()
        per_iter.append((time.perf_counter() - start) / block)
        if reference:
            start = time.perf_counter()
            reference(block)
            per_reference.append((time.perf_counter() - start) / block)
    if profiler:
        profiler.__exit__(None, None, None)   # collection ends outside the timed part
    print(f"per_iter_us={statistics.median(per_iter) * 1e6:.3f}")
    if reference:
        print(f"cpu_ref_us={statistics.median(per_reference) * 1e6:.3f}")


# ---- the driver: alternating rounds ----------------------------------------------------------

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


def mode_commands(build, nsys, tmp, variants, torch_profiler, paired=False, pause="cupti"):
    me = [sys.executable, os.path.abspath(__file__), "--build", os.path.abspath(build)]
    lantern = os.path.join(build, "bin", "lantern")
    capture = ((["--start-paused", "--single-file"] if pause == "session"
                else ["--capture-range=cudaProfilerApi"]) if paired else [])
    workload = ((lambda w: ["--workload", w, "--paired", "--pause", pause]) if paired
                else (lambda w: ["--workload", w]))
    modes = {
        "baseline": lambda w, r: me + workload(w),
        "lantern": lambda w, r: [lantern, "profile", "-f", "-t", "cuda,nvtx", *capture, "-o",
                                 os.path.join(tmp, f"{w}-{r}.db"), "--"] + me + workload(w),
    }
    if paired:
        torch_profiler, nsys = False, None  # neither pauses at cudaProfilerStop
    if torch_profiler:
        modes["torch.profiler"] = lambda w, r: (None if w == "cuda_loop" else
                                                me + ["--workload", w, "--torch-profiler"])
    for spec in variants:
        # "name|trace|VAR=value;VAR=value|option option": lantern with another -t list,
        # environment or options
        name, trace, env, opts = (spec.split("|") + ["", "", ""])[:4]
        env_args = ["env"] + [kv for kv in env.split(";") if kv]
        modes[name] = (lambda t, e, o, n: lambda w, r: e + [lantern, "profile", "-f", "-t", t, *capture, *o,
                       "-o", os.path.join(tmp, f"{n}-{w}-{r}.db"), "--"] + me + workload(w))(
                           trace, env_args, opts.split(), name)
    if nsys:
        modes["nsys"] = lambda w, r: [nsys, "profile", "-t", "cuda,nvtx", "--force-overwrite", "true",
                                      "-o", os.path.join(tmp, f"nsys-{w}-{r}")] + me + ["--workload", w]
    return modes


def cpu_states(references):
    """The CPU reference time that parts the runs' two CPU speeds: the widest gap between
    them, if each side holds at least 3 runs and their medians differ by more than STATE_GAP;
    else None (one speed)."""
    ordered = sorted(references)
    gaps = [(ordered[i + 1] / ordered[i], i) for i in range(2, len(ordered) - 3)]
    if not gaps:
        return None
    i = max(gaps)[1]
    fast, slow = ordered[:i + 1], ordered[i + 1:]
    return ordered[i] if statistics.median(slow) / statistics.median(fast) > STATE_GAP else None


def ratios_by_cpu_state(runs):
    """{state: {mode: ratio of medians to the baseline's}} for the runs made at each of the
    machine's two CPU speeds (told apart by cpu_ref_us); printed. None where the runs have
    no reference or a single speed."""
    every = [run for mode_runs in runs.values() for run in mode_runs]
    if not every or any("cpu_ref_us" not in run for run in every):
        return None
    cut = cpu_states([run["cpu_ref_us"] for run in every])
    if cut is None:
        print("by CPU state: all runs at one CPU speed")
        return None
    states = {}
    for state, inside in (("fast", lambda v: v <= cut), ("slow", lambda v: v > cut)):
        medians = {m: statistics.median(run["per_iter_us"] for run in r if inside(run["cpu_ref_us"]))
                   for m, r in runs.items() if any(inside(run["cpu_ref_us"]) for run in r)}
        if "baseline" not in medians:
            continue
        counts = {m: sum(inside(run["cpu_ref_us"]) for run in r) for m, r in runs.items()}
        states[state] = {m: {"ratio": med / medians["baseline"], "runs": counts[m]}
                         for m, med in medians.items()}
        print(f"by CPU state, {state} (reference {'<=' if state == 'fast' else '>'} {cut:.2f} us): " +
              "  ".join(f"{m} x{v['ratio']:.3f} ({v['runs']} runs)" for m, v in states[state].items()),
              flush=True)
    return states


def drive(args):
    nsys = find_nsys(args.nsys)
    print(f"nsys: {nsys or 'not found'}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        modes = mode_commands(args.build, nsys if not args.no_nsys else None, tmp, args.variant,
                              not args.no_torch_profiler, args.paired, args.pause)
        key = "paired_ratio" if args.paired else "per_iter_us"
        for workload in args.workloads:
            runs = alternate_rounds(modes, workload, args.rounds, args.cpus, key)
            samples = {m: [run[key] for run in r] for m, r in runs.items()}
            results[workload] = {}
            if args.paired:  # each run's own traced/paused ratio
                for mode, values in samples.items():
                    if values:
                        med = statistics.median(values)
                        results[workload][mode] = {"paired_ratio": med, "samples": values}
                        print(f"{workload:12s} {mode:15s} median paired ratio x{med:.4f}  "
                              f"(runs {min(values):.4f}-{max(values):.4f})", flush=True)
                continue
            base = statistics.median(samples["baseline"]) if samples["baseline"] else None
            for mode, values in samples.items():
                if not values:
                    continue
                med = statistics.median(values)
                ratio = med / base if base else None
                results[workload][mode] = {"median_us": med, "ratio": ratio, "samples": values}
                print(f"{workload:12s} {mode:15s} median {med:10.3f} us/iter  x{ratio:.3f}", flush=True)
            by_state = ratios_by_cpu_state(runs)
            if by_state:
                results[workload]["by_cpu_state"] = by_state
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=["loop", "cuda_loop", "transformer", "transformer_gpu"], help="run one workload once")
    p.add_argument("--torch-profiler", action="store_true")
    p.add_argument("--paired", action="store_true",
                   help="traced vs paused blocks inside each run (cudaProfilerStart/Stop)")
    p.add_argument("--pause", choices=["cupti", "session"], default="cupti",
                   help="--paired: what the other blocks pause (cudaProfilerStop, or the session)")
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--nsys")
    p.add_argument("--workloads", nargs="+", default=["loop", "transformer"])
    p.add_argument("--json")
    p.add_argument("--variant", action="append", default=[],
                   help="another lantern mode: 'name|trace list|VAR=value;VAR=value|options'")
    p.add_argument("--no-nsys", action="store_true")
    p.add_argument("--no-torch-profiler", action="store_true")
    p.add_argument("--cpus", help="taskset CPU list for every run, e.g. 2-9")
    args = p.parse_args()
    if args.workload:
        if args.pause == "session" and args.workload == "cuda_loop":
            sys.exit("cuda_loop pairs with cudaProfilerStart/Stop only")
        run_one(args.workload, args.torch_profiler, args.build, args.paired, args.pause)
    else:
        drive(args)


if __name__ == "__main__":
    main()
