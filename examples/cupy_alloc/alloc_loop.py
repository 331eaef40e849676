#!/usr/bin/env python3
"""The NVTX blog's CuPy example: 100 random 1024x1024 matrices made in a loop ("data
generation"), then the squared difference of neighbours ("compute"). Each new matrix needs
device memory; how it gets it is the point:

  --allocator none     every allocation is a cudaMalloc and every free a cudaFree (what the
                       blog's timeline shows before its fix)
  --allocator default  CuPy's memory pool: it still calls cudaMalloc each time it has to grow
  --allocator reserved the pool grown once before the loop (the blog's fix is RMM's pool with
                       an initial size; this does the same with CuPy's own pool)

Usage: alloc_loop.py [--allocator none|default|reserved] [--count N]
"""
import argparse
import sys

import cupy

try:
    import nvtx

    def push(name):
        nvtx.push_range(name)

    pop = nvtx.pop_range
except ImportError:  # CuPy's own NVTX binding
    push, pop = cupy.cuda.nvtx.RangePush, cupy.cuda.nvtx.RangePop

SIDE = 1024


def squared_diff(x, y):
    return (x - y) * (x - y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allocator", choices=["none", "default", "reserved"], default="none")
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    if args.allocator == "none":
        cupy.cuda.set_allocator(None)
    elif args.allocator == "reserved":
        # every matrix, its temporaries and the results fit: allocate once, free into the pool
        block = cupy.empty(4 * args.count * SIDE * SIDE * 8, dtype=cupy.uint8)
        del block
    push("data generation")
    images = [cupy.random.random((SIDE, SIDE)) for _ in range(args.count)]
    pop()
    push("compute")
    squares = [squared_diff(x, y) for x, y in zip(images, images[1:])]
    pop()
    cupy.cuda.Device().synchronize()
    total = float(sum(float(s.sum()) for s in squares[:3]))
    print(f"allocator {args.allocator}: {len(images)} matrices, first squares sum {total:.1f}")
    return 0 if total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
