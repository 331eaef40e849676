"""A Python program with a known hot function, for the CPU samples' Python stacks
(test_cpu_python.py, bench/bench_cpu_sampling.py): each worker alternates hot() (~70 % of its
CPU time) and warm() (~27 %), calls long against the 1 ms sampling period, and measures each
share itself with time.thread_time() around the calls. Usage: py_hot.py SECONDS [THREADS].
With THREADS > 0 the work runs in that many threading.Thread workers (which then wait for the
GIL in turn) and the main thread joins them. Prints one line per worker:
`NAME hot_share P warm_share P gil_wait_s S cpu_s C` (gil_wait_s: its wall time not on a CPU,
which for a worker that only computes is its wait for the GIL), then `work_per_cpu_s W`."""
import sys
import threading
import time


def hot(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def warm(n):
    s = 0
    for i in range(n):
        s += i
    return s


results = {}


def work(name, seconds):
    t_hot = t_warm = 0.0
    rounds = 0
    wall0, cpu0 = time.monotonic(), time.thread_time()
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        a = time.thread_time()
        hot(200000)
        b = time.thread_time()
        warm(150000)
        c = time.thread_time()
        t_hot += b - a
        t_warm += c - b
        rounds += 1
    wall, cpu = time.monotonic() - wall0, time.thread_time() - cpu0
    results[name] = (t_hot, t_warm, wall - cpu, time.thread_time(), rounds)


def main():
    seconds = float(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if threads:
        workers = [threading.Thread(target=work, args=(f"w{i}", seconds), name=f"w{i}")
                   for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    else:
        work("main", seconds)
    rounds = cpu = 0.0
    for name, (t_hot, t_warm, waited, total, n) in sorted(results.items()):
        print(f"{name} hot_share {100 * t_hot / total:.2f} warm_share {100 * t_warm / total:.2f}"
              f" gil_wait_s {waited:.3f} cpu_s {total:.3f}")
        rounds += n
        cpu += total
    print(f"work_per_cpu_s {rounds / cpu:.3f}")


main()
