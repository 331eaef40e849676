#!/usr/bin/env python3
"""CUPTI's cost inside one process, on bench_cuda.py's launch-bound PyTorch loop (an NVTX range
around two tiny elementwise kernels per iteration): 30 pairs of 1000-iteration blocks, one
block with CUPTI in the state under test, the other with CUPTI detached (cuptiFinalize)
through the experiment agent (agent.patch), in an alternating order. Prints the median of the
pairs' ratios as paired_ratio=R and each side's wall and CPU time per iteration
(bench_cuda.py's paired_blocks). Run under
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
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench_cuda import loop_workload, paired_blocks  # noqa: E402 (bench_cuda.py's loop and pairs)

BLOCK, SETTLE = 1000, 200
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


iterations(3000)
torch.cuda.synchronize()
if mode == "long":
    n, start = int(sys.argv[2]), time.perf_counter()
    iterations(n)
    torch.cuda.synchronize()
    print(f"per_iter_us={(time.perf_counter() - start) / n * 1e6:.3f}")
    sys.exit(0)
if detaching:
    agent.lantern_experiment_detach()
# what follows a change of state (first launches, buffers) settles untimed
paired_blocks(torch, iterations, BLOCK, enter, leave, settle=SETTLE)
