#!/usr/bin/env python3
"""The programs of the Nsight Systems tutorial on Numba CUDA ("profiling CUDA with Nsight
Systems": normalize an array by its sum), in four versions, to check what `lantern analyze`
says about each:

  v1      pageable host memory, one stream, no NVTX: pageable copies, a single-thread kernel,
          the GPU idle between kernels (each is compiled at its first launch)
  v2      pinned host memory and NVTX ranges around each phase
  v3-bug  the array in chunks "on N streams", but the streams are one stream repeated
          (`[cuda.stream()] * n`): every chunk's work is serialized on it
  v3      the same with N distinct streams

Usage: tutorial.py {v1,v2,v3-bug,v3} [-n ELEMENTS] [-s STREAMS]
"""
import argparse
import contextlib
import math
import sys
import warnings

import numpy as np

# numba-cuda (0.2x, as on the GPU machine) still refers to np.row_stack, which NumPy 2.5
# removed; the alias lets the tutorial run there unchanged otherwise.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda, float32  # noqa: E402 (after the alias above)
from numba.core.errors import NumbaPerformanceWarning  # noqa: E402

from annotate import annotate  # noqa: E402

THREADS = 256
BLOCKS = 32 * 40


@cuda.jit
def block_sums(values, partial):
    """Each block adds a grid-strided share of values into partial[block]."""
    shared = cuda.shared.array(THREADS, float32)
    tid = cuda.threadIdx.x
    acc = float32(0.0)
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        acc += values[i]
    shared[tid] = acc
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            shared[tid] += shared[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = shared[0]


@cuda.jit
def add_up_one_thread(partial, total):
    """Deliberately launched as one block of one thread (the tutorial's slow kernel)."""
    acc = float32(0.0)
    for value in partial:
        acc += value
    total[0] = acc


@cuda.jit
def divide(values, by):
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        values[i] /= by[0]


def warm_up():
    """Compiles the three kernels on tiny arrays, so later launches are not compilations."""
    with annotate("Compilation"):
        values = cuda.device_array(BLOCKS, dtype=np.float32)
        partial = cuda.device_array(BLOCKS, dtype=np.float32)
        total = cuda.device_array(1, dtype=np.float32)
        block_sums[BLOCKS, THREADS](values, partial)
        add_up_one_thread[1, 1](partial, total)
        divide[BLOCKS, THREADS](values, total)


def normalize_one_stream(host, pinned):
    """v1/v2: copy in, sum, divide, copy out, all on the default stream (v1: no NVTX, and
    each kernel compiled at its first launch, as in the tutorial)."""
    ranges = annotate if pinned else (lambda name: contextlib.nullcontext())
    if pinned:
        warm_up()
    with ranges("H2D Memory"):
        device = cuda.to_device(host)
        partial = cuda.device_array(BLOCKS, dtype=np.float32)
        total = cuda.device_array(1, dtype=np.float32)
    with ranges("Kernels"):
        block_sums[BLOCKS, THREADS](device, partial)
        add_up_one_thread[1, 1](partial, total)
        divide[BLOCKS, THREADS](device, total)
    with ranges("D2H Memory"):
        device.copy_to_host(host)
        cuda.synchronize()


def normalize_chunks(host, nstreams, reuse_bug):
    """v3: each chunk copied and summed on its own stream (or, with the bug, on one)."""
    warm_up()
    if reuse_bug:
        streams = [cuda.stream()] * nstreams  # one stream, repeated: the tutorial's bug
    else:
        streams = [cuda.stream() for _ in range(nstreams)]
    step = math.ceil(host.size / nstreams)
    bounds = [(i * step, min((i + 1) * step, host.size)) for i in range(nstreams)]
    sums = [cuda.pinned_array(1, dtype=np.float32) for _ in range(nstreams)]
    chunks = []
    with cuda.defer_cleanup():
        for i, (stream, (lo, hi)) in enumerate(zip(streams, bounds)):
            with annotate(f"H2D Memory Stream {i}"):
                chunk = cuda.to_device(host[lo:hi], stream=stream)
                partial = cuda.device_array(BLOCKS, dtype=np.float32, stream=stream)
                total = cuda.device_array(1, dtype=np.float32, stream=stream)
            chunks.append(chunk)
            with annotate(f"Sum Kernels Stream {i}"):
                for _ in range(50):  # as the tutorial: more compute per chunk
                    block_sums[BLOCKS, THREADS, stream](chunk, partial)
                    add_up_one_thread[1, 1, stream](partial, total)
            with annotate(f"D2H Memory Stream {i}"):
                total.copy_to_host(sums[i], stream=stream)
        cuda.synchronize()
        grand = np.array([sum(float(s[0]) for s in sums)], dtype=np.float32)
        with annotate("H2D Memory Default Stream"):
            grand_device = cuda.to_device(grand)
        for i, (stream, (lo, hi), chunk) in enumerate(zip(streams, bounds, chunks)):
            with annotate(f"Divide Kernel Stream {i}"):
                divide[BLOCKS, THREADS, stream](chunk, grand_device)
            with annotate(f"D2H Memory Stream {i}"):
                chunk.copy_to_host(host[lo:hi], stream=stream)
        cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("version", choices=["v1", "v2", "v3-bug", "v3"])
    parser.add_argument("-n", "--elements", type=int, default=100_000_000)
    parser.add_argument("-s", "--streams", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore", category=NumbaPerformanceWarning)
    if args.version == "v1":
        host = np.ones(args.elements, dtype=np.float32)  # pageable
    else:
        host = cuda.pinned_array(args.elements, dtype=np.float32)
        host[...] = 1.0
    before = float(host.sum(dtype=np.float64))
    if args.version.startswith("v3"):
        normalize_chunks(host, args.streams, args.version == "v3-bug")
    else:
        normalize_one_stream(host, pinned=args.version == "v2")
    after = float(host.sum(dtype=np.float64))
    print(f"{args.version}: sum {before:.0f} -> {after:.6f}")
    if abs(after - 1.0) > 1e-3:
        print("tutorial: wrong result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
