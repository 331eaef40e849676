#!/usr/bin/env python3
"""Does power sampling slow the profiled program? (issue #11, docs/benchmarks.md "Power
sampling"). Each driver-heavy workload runs whole, in alternating rounds, under

  cuda_nvtx   lantern profile -t cuda,nvtx      (the reference: tracing without NVML)
  default     lantern profile                   (cuda,nvtx + NVML sampling)
  bare        the command alone                 (the reference of `energy`)
  energy      lantern energy -- the command

and the figures are per-round ratios default/cuda_nvtx and energy/bare (medians, min-max), on
the whole command's wall time and on the program's own time (`program_ms`, printed by the
workload: interpreter start-up excluded), plus the cudaMalloc p50/p99 that driver_victim
prints. The energy-window API is measured as `window` (torch_warmup with a lantern.Monitor
window per step) against `window_off` (the same without it), both bare.

  bench_sampler.py --lantern build/bin/lantern --victim build/bin/driver_victim [--rounds 5]
"""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from alternate import timed_run

HERE = Path(__file__).resolve().parent
PY = [sys.executable, str(HERE / "sampler_workloads.py")]


def workload_cmd(name, victim):
    if name == "malloc":
        return [victim, "run", "malloc", "20000"]
    if name == "launch":
        return [victim, "run", "launch", "200000"]
    return PY + [name]


def run_once(cmd):
    values, run = timed_run(cmd, timeout=300)
    if run.returncode != 0:
        print(f"  exit {run.returncode}: {' '.join(cmd)}\n{run.stderr[-1500:]}", flush=True)
        return None
    return values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lantern", required=True)
    ap.add_argument("--victim", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", nargs="+",
                    default=["cupy_blog", "malloc", "launch", "torch_warmup", "jax_jit"])
    ap.add_argument("--modes", nargs="+", default=["cuda_nvtx", "default", "bare", "energy"])
    ap.add_argument("--window", action="store_true", help="also window vs window_off")
    ap.add_argument("--json")
    ap.add_argument("--tmp", default="/tmp")
    args = ap.parse_args()
    lantern = os.path.abspath(args.lantern)
    victim = os.path.abspath(args.victim)
    db = {m: os.path.join(args.tmp, f"bench_sampler_{m}.db") for m in args.modes}
    wrap = {
        "cuda_nvtx": lambda c: [lantern, "profile", "-t", "cuda,nvtx", "-f", "-o", db["cuda_nvtx"], "--"] + c,
        "default": lambda c: [lantern, "profile", "-f", "-o", db["default"], "--"] + c,
        "bare": lambda c: c,
        "energy": lambda c: [lantern, "energy", "--"] + c,
    }
    plan = [(w, args.modes) for w in args.workloads]
    if args.window:
        plan.append(("window", ["bare"]))
    results = {}
    for r in range(args.rounds):
        for w, modes in plan:
            order = modes if r % 2 == 0 else list(reversed(modes))
            for m in order:
                if w == "window":
                    for name in (["window", "window_off"] if r % 2 == 0 else ["window_off", "window"]):
                        v = run_once(workload_cmd(name, victim))
                        if v:
                            results.setdefault(name, {}).setdefault("bare", []).append(v)
                    continue
                v = run_once(wrap[m](workload_cmd(w, victim)))
                if v:
                    results.setdefault(w, {}).setdefault(m, []).append(v)
                    print(f"{w} round {r} {m}: " + " ".join(f"{k}={x:.4g}" for k, x in v.items()),
                          flush=True)

    def ratios(w, a, b, key):
        xs = results.get(w, {}).get(a, [])
        ys = results.get(w, {}).get(b, [])
        return [x[key] / y[key] for x, y in zip(xs, ys) if key in x and key in y and y[key] > 0]

    summary = {}
    print("\nworkload      ratio                 wall: median (min-max)     program: median (min-max)")
    for w in list(args.workloads) + (["window"] if args.window else []):
        pairs = [("default", "cuda_nvtx"), ("energy", "bare")]
        if w == "window":
            pairs = []
            xs = results.get("window", {}).get("bare", [])
            ys = results.get("window_off", {}).get("bare", [])
            rs = [x["wall_s"] / y["wall_s"] for x, y in zip(xs, ys)]
            ps = [x["program_ms"] / y["program_ms"] for x, y in zip(xs, ys)]
            if rs:
                summary["window/window_off"] = {"wall": rs, "program": ps}
                print(f"{'window':12}  window/window_off     {statistics.median(rs):.3f} "
                      f"({min(rs):.3f}-{max(rs):.3f})      {statistics.median(ps):.3f} "
                      f"({min(ps):.3f}-{max(ps):.3f})")
        for a, b in pairs:
            rs = ratios(w, a, b, "wall_s")
            key = "program_ms" if w not in ("malloc", "launch") else "wall_ms"
            ps = ratios(w, a, b, key)
            if not rs:
                continue
            summary[f"{w}:{a}/{b}"] = {"wall": rs, "program": ps}
            line = f"{w:12}  {a + '/' + b:20}  {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})"
            if ps:
                line += f"      {statistics.median(ps):.3f} ({min(ps):.3f}-{max(ps):.3f})"
            print(line)
        if w == "malloc":
            for m in args.modes:
                runs = results.get(w, {}).get(m, [])
                if runs and "cudaMalloc_p50_us" in runs[0]:
                    p50 = statistics.median(x["cudaMalloc_p50_us"] for x in runs)
                    p99 = statistics.median(x["cudaMalloc_p99_us"] for x in runs)
                    f50 = statistics.median(x["cudaFree_p50_us"] for x in runs)
                    f99 = statistics.median(x["cudaFree_p99_us"] for x in runs)
                    summary[f"malloc:{m}:latency_us"] = {"malloc_p50": p50, "malloc_p99": p99,
                                                         "free_p50": f50, "free_p99": f99}
                    print(f"{'':12}  {m:20}  cudaMalloc p50 {p50:.1f} us p99 {p99:.1f} us; "
                          f"cudaFree p50 {f50:.1f} us p99 {f99:.1f} us")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
