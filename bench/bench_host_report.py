"""What the host-side views (analyze's host parts and cpu_bound_ranges, the page's flame graphs,
the exports' CPU samples) cost: on a session without CPU samples, a build before them (BASE)
against this one (NEW) in alternating rounds on the same database (bench_analyze's, N events),
and whether the exports are byte-identical; then NEW on the same session with SAMPLES CPU
samples. CPU time (user + system) of each command. docs/benchmarks.md, "Host CPU views".

  python3 bench/bench_host_report.py BASE_BUILD NEW_BUILD [ROUNDS=5] [N=1000000] [SAMPLES=1000000]
"""
import filecmp
import os
import re
import resource
import statistics
import subprocess
import sys


def cpu_of(cmd):
    """(CPU seconds of the child, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(cmd, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), run.stdout


def bench_analyze(build, db):
    out = cpu_of([os.path.join(build, "bin", "bench_analyze"), "0", db, "keep"])[1]
    m = re.search(r"analyze ([\d.]+) s CPU.*report ([\d.]+) s CPU", out)
    return float(m.group(1)), float(m.group(2))


def export(build, db, fmt, out):
    return cpu_of([os.path.join(build, "bin", "lantern"), "export", db, "--format", fmt, "-o",
                   out, "--force"])[0]


def main():
    base, new = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    n = sys.argv[4] if len(sys.argv) > 4 else "1000000"
    samples = sys.argv[5] if len(sys.argv) > 5 else "1000000"
    db0, db1 = f"/tmp/lantern_bench_host_{n}.db", f"/tmp/lantern_bench_host_{n}_{samples}.db"
    for db, extra in ((db0, []), (db1, [samples])):
        if not os.path.exists(db):
            subprocess.run([os.path.join(new, "bin", "bench_analyze"), n, db, "keep", *extra],
                           check=True, capture_output=True)
    times = {(b, what): [] for b in ("base", "new")
             for what in ("analyze", "report", "chrome", "perfetto")}
    for r in range(rounds):
        order = [("base", base), ("new", new)]
        if r % 2:
            order.reverse()
        for name, build in order:
            a, p = bench_analyze(build, db0)
            times[(name, "analyze")].append(a)
            times[(name, "report")].append(p)
            for fmt in ("chrome", "perfetto"):
                times[(name, fmt)].append(export(build, db0, fmt, f"/tmp/bench_host.{name}.{fmt}"))
    print(f"N = {n} events, no CPU samples, {rounds} alternating rounds: median CPU s, base -> new"
          " (ratio; paired ratios min..max)")
    for what in ("analyze", "report", "chrome", "perfetto"):
        b, w = times[("base", what)], times[("new", what)]
        ratios = [y / x for x, y in zip(b, w) if x > 0]
        print(f"  {what:9s} {statistics.median(b):.3f} -> {statistics.median(w):.3f}"
              f" (x{statistics.median(w) / statistics.median(b):.3f};"
              f" {min(ratios):.3f}..{max(ratios):.3f})")
    for fmt in ("chrome", "perfetto"):
        same = filecmp.cmp(f"/tmp/bench_host.base.{fmt}", f"/tmp/bench_host.new.{fmt}",
                           shallow=False)
        print(f"  {fmt} export byte-identical to the base's: {same}")
    print(f"NEW with {samples} CPU samples (median of {rounds}):")
    a1, p1, c1, f1 = [], [], [], []
    for _ in range(rounds):
        a, p = bench_analyze(new, db1)
        a1.append(a)
        p1.append(p)
        c1.append(export(new, db1, "chrome", "/tmp/bench_host.cpu.chrome"))
        f1.append(export(new, db1, "perfetto", "/tmp/bench_host.cpu.perfetto"))
    for what, v, v0 in (("analyze", a1, times[("new", "analyze")]),
                        ("report", p1, times[("new", "report")]),
                        ("chrome", c1, times[("new", "chrome")]),
                        ("perfetto", f1, times[("new", "perfetto")])):
        print(f"  {what:9s} {statistics.median(v):.3f} s (+{statistics.median(v) - statistics.median(v0):.3f} s"
              " over no samples)")
    for fmt in ("chrome", "perfetto"):
        print(f"  {fmt} size {os.path.getsize(f'/tmp/bench_host.cpu.{fmt}') / 1e6:.1f} MB"
              f" (without samples {os.path.getsize(f'/tmp/bench_host.new.{fmt}') / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
