"""What -t osrt costs a program whose wrapped calls never block, the hard case: bench/osrt_loop.c's
calls per second of its own CPU time under `lantern profile -t nvtx` (no agent preloaded: what
a run without osrt gets) and `-t nvtx,osrt`, in alternating rounds (bench/alternate.py's habit:
each pair ran under the same machine conditions); the ratio per pair, its median and range,
for each loop: `io` (1-byte read of /dev/zero + write to /dev/null) and `mutex` (uncontended
pthread_mutex_lock/unlock), in a program with an idle second thread (the wrappers' cost), and
`io single` in a single-threaded one (which the agent's writer thread makes multithreaded: the
kernel's system calls get dearer too). A/A: both arms without osrt, the machine's noise.
Usage: python3 bench/bench_osrt.py BUILD [ROUNDS] [SECONDS] [aa]"""
import os
import statistics
import subprocess
import sys
import tempfile


def rate(build, trace, loop, seconds, folder):
    db = os.path.join(folder, "x.db")
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", trace,
            "--sample=none", "-o", db, os.path.join(build, "bin", "osrt_loop"), *loop.split()[:1],
            str(seconds), *loop.split()[1:]]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(next(l.split()[1] for l in out.splitlines() if l.startswith("calls_per_cpu_s")))


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    on = "nvtx" if len(sys.argv) > 4 and sys.argv[4] == "aa" else "nvtx,osrt"
    print(f"rounds {rounds} x {seconds} s, arms: -t nvtx vs -t {on}")
    with tempfile.TemporaryDirectory() as folder:
        for loop in ("io", "mutex", "io single"):
            ratios, base = [], []
            for i in range(rounds):
                order = ["nvtx", on] if i % 2 == 0 else [on, "nvtx"]
                got = {}
                for arm in order:
                    got.setdefault(arm, []).append(rate(build, arm, loop, seconds, folder))
                off_rate, on_rate = got["nvtx"][0], got[on][-1]
                ratios.append(off_rate / on_rate)
                base.append(off_rate)
            med = statistics.median(ratios)
            print(f"{loop}: {statistics.median(base) / 1e6:.2f} M calls per CPU s without osrt;"
                  f" slowdown median x{med:.4f} ({(med - 1) * 100:+.2f} %),"
                  f" range x{min(ratios):.4f}-x{max(ratios):.4f}")


if __name__ == "__main__":
    main()
