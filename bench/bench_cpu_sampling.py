"""What CPU sampling (-t cpu, 1 kHz) costs a CPU-bound program: tests/cpu/cpu_hot.c's work per
second of its own CPU time under `lantern profile -t nvtx --sample=none` and `--sample=cpu`,
in alternating rounds (bench/alternate.py's habit: each pair ran under the same machine
conditions); the ratio per pair, its median and range; plus the agent's writer thread's time
reading the rings (cpu_sampling.cpu_ns) per second of run, and storage per sample.
HZ 0 is the A/A run: both arms unsampled, the ratio's spread is the machine's noise.
Usage: python3 bench/bench_cpu_sampling.py BUILD [ROUNDS] [SECONDS] [HZ]"""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile


def rate(build, arm, seconds, hz, folder):
    sample = "cpu" if arm == "cpu" and hz else "none"
    db = os.path.join(folder, f"{arm}.db")
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", "nvtx",
            f"--sample={sample}", "-o", db]
    if sample == "cpu":
        args += ["--sampling-frequency", str(hz)]
    out = subprocess.run(args + [os.path.join(build, "bin", "cpu_hot"), str(seconds)],
                         capture_output=True, text=True, check=True).stdout
    value = float(next(l.split()[1] for l in out.splitlines()
                       if l.startswith("iterations_per_cpu_s")))
    extra = None
    if sample == "cpu":
        with sqlite3.connect(db) as con:
            samples, cpu_ns = con.execute("SELECT samples, cpu_ns FROM cpu_sampling").fetchone()
        extra = (samples, cpu_ns, os.path.getsize(db))
    return value, extra


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    hz = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    ratios, writer, stored = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        base_size = None
        for i in range(rounds):
            order = ["none", "cpu"] if i % 2 == 0 else ["cpu", "none"]
            got = {s: rate(build, s, seconds, hz, folder) for s in order}
            ratios.append(got["none"][0] / got["cpu"][0])
            if got["cpu"][1]:
                samples, cpu_ns, size = got["cpu"][1]
                writer.append(cpu_ns / 1e9 / seconds * 100)
                base_size = os.path.getsize(os.path.join(folder, "none.db"))
                stored.append((size - base_size) / samples)
    med = statistics.median(ratios)
    print(f"rounds {rounds} x {seconds} s at {hz} Hz")
    print(f"slowdown (unsampled rate / sampled rate): median x{med:.4f} "
          f"({(med - 1) * 100:+.2f} %), range x{min(ratios):.4f}-x{max(ratios):.4f}")
    if writer:
        print(f"writer reading the rings: median {statistics.median(writer):.3f} % of one CPU")
        print(f"database bytes per sample: median {statistics.median(stored):.1f}")


if __name__ == "__main__":
    main()
