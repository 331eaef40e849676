#!/usr/bin/env python3
"""CUPTI's cost inside one process, on bench_cuda.py's launch-bound PyTorch loop (an NVTX range
around two tiny elementwise kernels per iteration): 30 pairs of 1000-iteration blocks, one
block with CUPTI in the state under test, the other with CUPTI detached (cuptiFinalize)
through the experiment agent (agent.patch), in an alternating order. Prints the median of the
pairs' ratios as paired_ratio=R and each side's CPU time per iteration. Run under
`lantern profile -t cuda,nvtx --capture-range=cudaProfilerApi` with LANTERN_AGENT set to the
patched agent (run.sh does).

  pairs.py full     recording (cudaProfilerStart) vs detached: CUPTI's whole cost
  pairs.py idle     attached, recording nothing, vs detached
  pairs.py paused   attached after a Start/Stop (kinds enabled, then disabled) vs detached
  pairs.py record   recording vs paused, no detaching (bench_cuda.py --paired)
  pairs.py control  no tool: both blocks alike (the method's own bias)
  pairs.py long N   just N iterations, timed (for sampler.c, with or without Lantern)"""
import ctypes
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_cuda import loop_workload  # noqa: E402 (the loop bench_cuda.py times)

PAIRS, BLOCK, WARM = 30, 1000, 200
mode = sys.argv[1]
agent = ctypes.CDLL(os.environ["LANTERN_AGENT"]) if mode not in ("control", "long") else None
detaching = mode in ("full", "idle", "paused")
iterations = loop_workload(torch)[0]


def enter():
    if detaching:
        agent.lantern_experiment_attach()
    if mode in ("full", "record", "paused"):
        torch.cuda.profiler.start()
    if mode == "paused":
        torch.cuda.profiler.stop()


def leave():
    if mode in ("full", "record"):
        torch.cuda.profiler.stop()
    if detaching:
        agent.lantern_experiment_detach()


def timed(under_test, cpu):
    if under_test:
        enter()
    iterations(WARM)  # what follows a state change (first launches, buffers) is not timed
    torch.cuda.synchronize()
    r0, t0 = resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter()
    iterations(BLOCK)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    cpu.append(((r1.ru_utime - r0.ru_utime) / BLOCK, (r1.ru_stime - r0.ru_stime) / BLOCK))
    if under_test:
        leave()
    return seconds / BLOCK


iterations(3000)
torch.cuda.synchronize()
if mode == "long":
    n, t0 = int(sys.argv[2]), time.perf_counter()
    iterations(n)
    torch.cuda.synchronize()
    print(f"per_iter_us={(time.perf_counter() - t0) / n * 1e6:.3f}")
    sys.exit(0)
if detaching:
    agent.lantern_experiment_detach()
ratios, cpu_on, cpu_off = [], [], []
for p in range(PAIRS):
    first = p % 2 == 0
    a = timed(first, cpu_on if first else cpu_off)
    b = timed(not first, cpu_off if first else cpu_on)
    ratios.append(a / b if first else b / a)
for name, cpu in (("test", cpu_on), ("detached", cpu_off)):
    print(f"{name}: user_us={statistics.median(c[0] for c in cpu) * 1e6:.2f} "
          f"sys_us={statistics.median(c[1] for c in cpu) * 1e6:.2f}")
q = sorted(ratios)
print(f"quartiles={q[len(q) // 4]:.4f},{q[3 * len(q) // 4]:.4f}")
print(f"paired_ratio={statistics.median(ratios):.4f}")
