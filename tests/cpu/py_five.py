"""A Python program with five hot functions of known, well-separated shares of its CPU time,
for the top-5 comparison with py-spy (test_cpu_python.py): each round calls f1..f5 with work
in the ratio 40:26:17:11:6, and the program measures each function's share itself with
time.thread_time() around its calls, which are long (4 to 30 ms): few clock reads, each a
system call at which a loaded machine may preempt the thread, which py-spy, sampling wall
time, then charges to main (a CI run once put main fifth). Usage: py_five.py SECONDS.
Prints `NAME share P` per function, most first."""
import sys
import time


def f1(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f2(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f3(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f4(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def f5(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


WORK = ((f1, 40), (f2, 26), (f3, 17), (f4, 11), (f5, 6))


def main():
    seconds = float(sys.argv[1])
    spent = {f.__name__: 0.0 for f, _ in WORK}
    start = time.thread_time()
    end = start + seconds
    while time.thread_time() < end:
        for f, units in WORK:
            a = time.thread_time()
            f(units * 20000)
            spent[f.__name__] += time.thread_time() - a
    total = time.thread_time() - start
    for name, t in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"{name} share {100 * t / total:.1f}")


if __name__ == "__main__":
    main()
