"""What a backtrace of -t osrt costs each call that gets one (--osrt-backtrace-threshold):
bench/osrt_loop.c's 1-byte read/write loop under `lantern profile -t osrt --osrt-threshold 0`
(every call kept), with every call backtraced (`--osrt-backtrace-threshold 0`) against none
(`--osrt-backtrace-depth 0`), in alternating rounds (bench/alternate.py's habit); the cost per
call is the difference of the two arms' CPU time per call, its median and range over the
pairs. The loop's stack is shallow (main, libc's start: 2 native frames after the wrapper),
the calls repeat one stack (the thread's string cache hits): the walk, the hash and the event.
Usage: python3 bench/bench_osrt_backtrace.py BUILD [ROUNDS] [SECONDS]"""
import os
import statistics
import subprocess
import sys
import tempfile


def rate(build, options, seconds, folder):
    db = os.path.join(folder, "x.db")
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", "osrt",
            "--osrt-threshold", "0", *options, "--sample=none", "-o", db,
            os.path.join(build, "bin", "osrt_loop"), "io", str(seconds)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(next(l.split()[1] for l in out.splitlines() if l.startswith("calls_per_cpu_s")))


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
    arms = {"none": ["--osrt-backtrace-depth", "0"], "all": ["--osrt-backtrace-threshold", "0"]}
    costs = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(rounds):
            got = {}
            for arm in (["none", "all"] if i % 2 == 0 else ["all", "none"]):
                got[arm] = rate(build, arms[arm], seconds, folder)
            costs.append(1e6 / got["all"] - 1e6 / got["none"])  # rates are calls per CPU s
            print(f"round {i}: {got['none']:.0f} vs {got['all']:.0f} calls/CPU s: "
                  f"{costs[-1]:.3f} us a backtrace", flush=True)
    print(f"backtrace: median {statistics.median(costs):.3f} us a call "
          f"(range {min(costs):.3f} .. {max(costs):.3f}), {rounds} rounds x {seconds} s")


if __name__ == "__main__":
    main()
