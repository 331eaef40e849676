#!/usr/bin/env python3
"""Cost of `lantern profile --python-functions` against `python -m nvtx` (docs/benchmarks.md,
"Python function ranges"): one call-heavy Python loop, under `lantern profile -t nvtx` in every
mode so that only the annotation differs, in alternating rounds; each run times its loop
itself (perf_counter_ns), and the medians give each mode's ratio to the plain run and its
added cost per call.

  python3 bench/bench_pyfunctions.py --build build [--python PY] [--rounds 5] [--cpus 0]
  python3 bench/bench_pyfunctions.py N                   (one run of the loop, N iterations)

Modes: base (no annotation); few (--python-functions '__main__.target': 1 call in 100 is
recorded, the others are the functions a pattern does not name); all (--python-functions
'__main__.*': every call of the loop is a range); few_python and all_python (the same with
the Python fallback callbacks, LANTERN_PYFUNC_HOT_PATH=python); nvtx (`python -m nvtx --no-linenos`, the
nvtx package's automatic annotation: every Python call a range). PY must have the nvtx package
(`python3 -m venv /tmp/nvtx-bench && /tmp/nvtx-bench/bin/pip install nvtx`, for the benchmark
only); without it the nvtx mode is left out."""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternate import alternate_rounds  # noqa: E402

ITERATIONS = 200_000
FALLBACK = ("LANTERN_PYFUNC_HOT_PATH=python",)  # the Python callbacks instead of the agent's C ones
EVERY = 100  # one iteration in EVERY calls target() (three Python calls), the others mid() (two)


def leaf(x):
    return x + 1


def mid(x):
    return leaf(x) * 2


def target(x):
    return mid(x) - 1


def workload(n):
    start = time.perf_counter_ns()
    total = 0
    for i in range(n):
        total += target(i) if i % EVERY == 0 else mid(i)
    elapsed = time.perf_counter_ns() - start
    calls = n * 2 + n // EVERY
    print(f"per_call_ns={elapsed / calls}")
    print(f"loop_ms={elapsed / 1e6}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpus", default="")
    parser.add_argument("workload", type=int, nargs="?", help="run the loop N times, once")
    args = parser.parse_args()
    if args.workload:
        workload(args.workload)
        return
    lantern = str(Path(args.build).resolve() / "bin" / "lantern")
    script = str(Path(__file__).resolve())
    out = Path("/tmp") / f"bench-pyfunctions-{os.getpid()}.db"

    def under_lantern(*extra, module=(), env=()):
        # the iteration count as a bare argument: python -m nvtx parses options after the script
        return lambda w, r: ["env", *env, lantern, "profile", "-f", "-t", "nvtx", "-o", str(out),
                             *extra, "--", args.python, *module, script, str(w)]

    has_nvtx = subprocess.run([args.python, "-c", "import nvtx"]).returncode == 0
    modes = {
        "base": under_lantern(),
        "few": under_lantern("--python-functions", "__main__.target"),
        "all": under_lantern("--python-functions", "__main__.*"),
        "few_python": under_lantern("--python-functions", "__main__.target", env=FALLBACK),
        "all_python": under_lantern("--python-functions", "__main__.*", env=FALLBACK),
        "nvtx": under_lantern(module=("-m", "nvtx", "--no-linenos")) if has_nvtx else None,
    }
    modes = {m: f for m, f in modes.items() if f}
    version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()
    samples = alternate_rounds(modes, ITERATIONS, args.rounds, args.cpus, key="per_call_ns")
    out.unlink(missing_ok=True)
    base = statistics.median(s["per_call_ns"] for s in samples["base"])
    print(f"\nPython {version}, {ITERATIONS} iterations ({ITERATIONS * 2 + ITERATIONS // EVERY} "
          f"calls), medians of {args.rounds} rounds")
    print("| mode | ns per call | ratio to base | added ns per call |")
    print("|---|---|---|---|")
    for mode, runs in samples.items():
        value = statistics.median(s["per_call_ns"] for s in runs)
        print(f"| {mode} | {value:.1f} | x{value / base:.2f} | {value - base:.1f} |")


if __name__ == "__main__":
    main()
