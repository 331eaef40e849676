"""What CPU sampling (-t cpu, 1 kHz) costs a CPU-bound program: its work per second of its own
CPU time under `lantern profile --sample=none` and `--sample=cpu`, in alternating rounds
(bench/alternate.py's habit: each pair ran under the same machine conditions); the ratio per
pair, its median and range; plus the agent's writer thread's time reading the rings
(cpu_sampling.cpu_ns) per second of run, and storage per sample.
PROGRAM c (default): tests/cpu/cpu_hot.c. PROGRAM py / py-threads: tests/cpu/py_hot.py (a
pure-Python loop; two threading workers taking the GIL in turn), with a third arm: native
samples only (LANTERN_CPU_PYTHON=0), so that the Python stacks' own cost shows (python vs
native), and the Python sampler thread's CPU time (python_cpu_ns) per second of run.
PROGRAM c-timers: cpu_hot with a third arm sampled by the CPU-time timers, the fallback where
perf_event_open is refused (LANTERN_TEST_CPU_TIMERS=1; at most the kernel's tick, 250 Hz at
CONFIG_HZ=250: compare at HZ 250), and their ratio to the perf arm (timers vs cpu).
HZ 0 is the A/A run: both arms unsampled, the ratio's spread is the machine's noise.
Usage: python3 bench/bench_cpu_sampling.py BUILD [ROUNDS] [SECONDS] [HZ] [PROGRAM]"""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY_HOT = os.path.join(HERE, "..", "tests", "cpu", "py_hot.py")


def command(build, program, seconds):
    if program in ("c", "c-timers"):
        return [os.path.join(build, "bin", "cpu_hot"), str(seconds)], "iterations_per_cpu_s"
    threads = ["2"] if program == "py-threads" else []
    return [sys.executable, PY_HOT, str(seconds), *threads], "work_per_cpu_s"


def rate(build, program, arm, seconds, hz, folder):
    sample = "cpu" if arm != "none" and hz else "none"
    db = os.path.join(folder, f"{arm}.db")
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", "nvtx",
            f"--sample={sample}", "-o", db]
    if sample == "cpu":
        args += ["--sampling-frequency", str(hz)]
    env = {**os.environ, "LANTERN_CPU_PYTHON": "0" if arm == "native" else "1"}
    if arm == "timers":
        env["LANTERN_TEST_CPU_TIMERS"] = "1"
    program_args, key = command(build, program, seconds)
    out = subprocess.run(args + program_args, capture_output=True, text=True, check=True,
                         env=env).stdout
    value = float(next(l.split()[1] for l in out.splitlines() if l.startswith(key)))
    extra = None
    if sample == "cpu":
        with sqlite3.connect(db) as con:
            extra = con.execute("SELECT samples, cpu_ns, ifnull(python_cpu_ns, 0),"
                                " ifnull(python_snapshots, 0) FROM cpu_sampling").fetchone()
        extra += (os.path.getsize(db),)
    return value, extra


def summary(name, ratios):
    med = statistics.median(ratios)
    print(f"{name}: median x{med:.4f} ({(med - 1) * 100:+.2f} %), "
          f"range x{min(ratios):.4f}-x{max(ratios):.4f}")


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    hz = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    program = sys.argv[5] if len(sys.argv) > 5 else "c"
    arms = {"c": ["none", "cpu"], "c-timers": ["none", "cpu", "timers"]}.get(
        program, ["none", "native", "python"])
    sampled = arms[-1]
    ratios = {a: [] for a in arms[1:]}
    writer, sampler, stored = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(rounds):
            order = arms if i % 2 == 0 else arms[::-1]
            got = {a: rate(build, program, a, seconds, hz, folder) for a in order}
            for a in arms[1:]:
                ratios[a].append(got["none"][0] / got[a][0])
            if "python" in arms:
                ratios.setdefault("python vs native", []).append(
                    got["native"][0] / got["python"][0])
            if "timers" in arms:
                ratios.setdefault("timers vs cpu", []).append(got["cpu"][0] / got["timers"][0])
            if got[sampled][1]:
                samples, cpu_ns, py_cpu_ns, _, size = got[sampled][1]
                writer.append(cpu_ns / 1e9 / seconds * 100)
                sampler.append(py_cpu_ns / 1e9 / seconds * 100)
                stored.append((size - os.path.getsize(os.path.join(folder, "none.db"))) / samples)
    print(f"{program}: rounds {rounds} x {seconds} s at {hz} Hz")
    print("slowdown, unsampled rate / sampled rate (work per second of the program's CPU time)")
    for name, values in ratios.items():
        summary(f"  {name}", values)
    if writer:
        print(f"writer reading the rings: median {statistics.median(writer):.3f} % of one CPU")
        if program not in ("c", "c-timers"):
            print(f"Python sampler thread: median {statistics.median(sampler):.3f} % of one CPU")
        print(f"database bytes per sample: median {statistics.median(stored):.1f}")


if __name__ == "__main__":
    main()
