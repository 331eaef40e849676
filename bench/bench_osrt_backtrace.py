"""What a backtrace of -t osrt costs each call that gets one (--osrt-backtrace-threshold):
bench/osrt_loop.c's 1-byte read/write loop under `lantern profile -t osrt --osrt-threshold 0`
(every call kept), with every call backtraced (`--osrt-backtrace-threshold 0`) against none
(`--osrt-backtrace-depth 0`), in alternating rounds (bench/alternate.py's habit); the cost per
call is the difference of the two arms' CPU time per call, its median and range over the
pairs. The C loop's stack is shallow (main, built without frame pointers: its caller only);
the Python loop (1-byte os.read of /dev/zero in a function three calls deep) gets its three
Python frames (its native frames stop at the interpreter). The calls repeat one stack (the
thread's string cache hits): the walk, the hash and the event.
Usage: python3 bench/bench_osrt_backtrace.py BUILD [ROUNDS] [SECONDS]"""
import os
import statistics
import subprocess
import sys
import tempfile


PYTHON_LOOP = """import os, sys, time
fd = os.open('/dev/zero', os.O_RDONLY)
def read_one(): return os.read(fd, 1)
def inner(n):
    for _ in range(n): read_one()
def outer(seconds):
    calls, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        inner(1000)
        calls += 1000
    print('calls_per_cpu_s', calls / (time.process_time() - start))
outer(float(sys.argv[1]))
"""


def rate(build, options, seconds, folder, program):
    db = os.path.join(folder, "x.db")
    command = ([os.path.join(build, "bin", "osrt_loop"), "io", str(seconds)] if program == "c"
               else [sys.executable, "-c", PYTHON_LOOP, str(seconds)])
    args = [os.path.join(build, "bin", "lantern"), "profile", "-f", "-t", "osrt",
            "--osrt-threshold", "0", *options, "--sample=none", "-o", db, *command]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(next(l.split()[1] for l in out.splitlines() if l.startswith("calls_per_cpu_s")))


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
    arms = {"none": ["--osrt-backtrace-depth", "0"], "all": ["--osrt-backtrace-threshold", "0"]}
    with tempfile.TemporaryDirectory() as folder:
        for program in ("c", "python"):
            costs = []
            for i in range(rounds):
                got = {}
                for arm in (["none", "all"] if i % 2 == 0 else ["all", "none"]):
                    got[arm] = rate(build, arms[arm], seconds, folder, program)
                costs.append(1e6 / got["all"] - 1e6 / got["none"])  # rates: calls per CPU s
                print(f"{program} round {i}: {got['none']:.0f} vs {got['all']:.0f} calls/CPU s:"
                      f" {costs[-1]:.3f} us a backtrace", flush=True)
            print(f"{program}: backtrace median {statistics.median(costs):.3f} us a call (range "
                  f"{min(costs):.3f} .. {max(costs):.3f}), {rounds} rounds x {seconds} s")


if __name__ == "__main__":
    main()
