#!/usr/bin/env python3
"""Cost of `lantern profile --python-backtrace` (docs/benchmarks.md, "Python backtraces"): a
launch-bound PyTorch loop run as is, under `lantern profile -t cuda,nvtx`, and under the same
with --python-backtrace, in alternating rounds; each run times its steady-state iterations
itself; the medians give the time each launch's stack walk adds.

  python3 bench/bench_pytrace.py --build build [--rounds 5] [--cpus 2-9] [--json OUT]
  python3 bench/bench_pytrace.py --workload shallow|deep      (one run)
  python3 bench/bench_pytrace.py --walk build/lib/libpystack_probe.so   (no GPU: the walk alone)

Workloads (two elementwise kernels per iteration): "shallow", launched from the loop's own
line (three user frames found at once); "deep", launched through 20 frames of library code
(compiled under a site-packages path, as nn.Module layers are), which the walk folds."""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

from alternate import alternate_rounds

WARMUP, BLOCK, BLOCKS = 3000, 3000, 9
LAUNCHES_PER_ITER = 2
LIBRARY_DEPTH = 20

LIBRARY_SOURCE = """
def layer(x, depth):
    if depth == 0:
        y = x + 1.0
        y.mul_(2.0)
        return y
    return layer(x, depth - 1)
"""


def run_one(workload):
    import torch
    x = torch.ones(256, device="cuda")
    scope = {}
    exec(compile(LIBRARY_SOURCE, "/venv/lib/python3/site-packages/fakelib/layers.py", "exec"),
         scope)
    layer = scope["layer"]

    def shallow(n):
        for _ in range(n):
            y = x + 1.0
            y.mul_(2.0)

    def deep(n):
        for _ in range(n):
            layer(x, LIBRARY_DEPTH)

    iterations = {"shallow": shallow, "deep": deep}[workload]
    iterations(WARMUP)
    torch.cuda.synchronize()
    per_iter = []
    for _ in range(BLOCKS):
        start = time.perf_counter()
        iterations(BLOCK)
        torch.cuda.synchronize()
        per_iter.append((time.perf_counter() - start) / BLOCK)
    print(f"per_iter_us={statistics.median(per_iter) * 1e6:.3f}")


def walk_only(probe):
    """The stack walk alone, on any machine: src/agent/pystack.c built as the test library,
    called through ctypes with the GIL held (PyDLL) and released (CDLL, as PyTorch launches),
    minus the cost of the same call returning at once."""
    for gil, loader in (("held", ctypes.PyDLL), ("released", ctypes.CDLL)):
        walk = loader(probe).pystack_python
        walk.restype, walk.argtypes = ctypes.c_size_t, (ctypes.c_char_p, ctypes.c_size_t)
        shallow, deep = walk_costs(walk)
        print(f"walk, GIL {gil}: shallow {shallow:.2f} us, deep ({LIBRARY_DEPTH} library frames "
              f"folded) {deep:.2f} us  (Python {sys.version.split()[0]})")


def walk_costs(walk):
    buf = ctypes.create_string_buffer(2048)
    scope = {"walk": walk, "buf": buf}
    exec(compile("def layer(depth, size):\n"
                 "    return walk(buf, size) if depth == 0 else layer(depth - 1, size)\n",
                 "/venv/lib/python3/site-packages/fakelib/layers.py", "exec"), scope)
    layer = scope["layer"]

    def per_call_us(fn, n):
        best = float("inf")
        for _ in range(BLOCKS):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - start) / n * 1e6)
        return best
    shallow = per_call_us(lambda: walk(buf, 2048), 100000) - per_call_us(lambda: walk(buf, 1),
                                                                          100000)
    deep = (per_call_us(lambda: layer(LIBRARY_DEPTH, 2048), 20000) -
            per_call_us(lambda: layer(LIBRARY_DEPTH, 1), 20000))
    return shallow, deep


def commands(build, tmp):
    me = [sys.executable, os.path.abspath(__file__)]
    lantern = os.path.join(build, "bin", "lantern")

    def profiled(extra):
        return lambda w, r: ([lantern, "profile", "-f", "-t", "cuda,nvtx"] + extra +
                             ["-o", os.path.join(tmp, f"{w}-{r}-{len(extra)}.db"), "--"] + me +
                             ["--workload", w])
    return {"baseline": lambda w, r: me + ["--workload", w],
            "lantern": profiled([]),
            "backtrace": profiled(["--python-backtrace"])}


def drive(args):
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        modes = commands(args.build, tmp)
        for workload in args.workloads:
            samples = {m: [run["per_iter_us"] for run in runs] for m, runs in
                       alternate_rounds(modes, workload, args.rounds, args.cpus).items()}
            medians = {m: statistics.median(v) for m, v in samples.items() if v}
            results[workload] = {m: {"median_us": medians[m], "samples": samples[m]}
                                 for m in medians}
            for m, med in medians.items():
                ratio = med / medians["baseline"] if "baseline" in medians else float("nan")
                print(f"{workload:8s} {m:10s} median {med:9.3f} us/iter  x{ratio:.3f}")
            if "lantern" in medians and "backtrace" in medians:
                added = (medians["backtrace"] - medians["lantern"]) / LAUNCHES_PER_ITER
                results[workload]["added_us_per_launch"] = added
                print(f"{workload:8s} --python-backtrace adds {added:.3f} us per launch")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=["shallow", "deep"], help="run one workload once")
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--workloads", nargs="+", default=["shallow", "deep"])
    p.add_argument("--cpus", help="taskset CPU list for every run, e.g. 2-9")
    p.add_argument("--json")
    p.add_argument("--walk", metavar="PROBE", help="time the walk alone with this library")
    args = p.parse_args()
    if args.walk:
        walk_only(args.walk)
    elif args.workload:
        run_one(args.workload)
    else:
        drive(args)


if __name__ == "__main__":
    main()
