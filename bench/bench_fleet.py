#!/usr/bin/env python3
"""Many ranks (docs/benchmarks.md, "Many ranks: merge and queries"): makes synthetic per-rank
databases with bench_ranks (one training rank's database, the others derived from it), then
measures `lantern merge` of the first N of them for each N of --ranks (wall time, CPU time and
peak RSS of the lantern process, output size), and on the largest merged database the reports
of --reports (`lantern stats --report R -o /dev/null`) and one per-rank SQL query (kernel and
all-reduce time per rank) with Python's sqlite3. With --duckdb, the same per-rank query run by
DuckDB on the per-rank files themselves, without merging (examples/fleet_duckdb,
docs/multi-rank.md).
Usage: bench/bench_fleet.py --dir /tmp/fleet [--build build-rel] [--events 1000000]
       [--ranks 8,64] [--per-host 8] [--reports nvtx_sum,cuda_gpu_kern_sum] [--timeout 600]
       [--duckdb]
The directory is created and left in place with the files; an existing one (an earlier run's)
is used again: its rank files and its merged file of N ranks, if there, are not made again.
Heavy: not a test."""
import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import time

# The merged database's form of examples/fleet_duckdb's KERNEL_TIME_PER_RANK (one file: no file column).
PER_RANK_SQL = """
SELECT p.rank, p.host, count(*) AS kernels, sum(k.end_ns - k.start_ns) AS kernel_ns,
       sum(CASE WHEN s.value LIKE 'ncclDevKernel%' THEN k.end_ns - k.start_ns END) AS nccl_ns
FROM kernels k JOIN processes p ON p.id = k.process_id JOIN strings s ON s.id = k.name_id
GROUP BY p.id ORDER BY p.rank"""


def timed(cmd, timeout=None):
    """Runs cmd; returns (wall s, CPU s, peak RSS MiB) of that process, or None when it ran
    past timeout seconds (then it is killed)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if timeout and time.monotonic() - t0 > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            return None
        time.sleep(0.2)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"bench_fleet: {' '.join(cmd)} failed (exit {proc.returncode})")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def in_process(fn):
    """Runs fn() here; returns (its result, wall s, CPU s)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    out = fn()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return out, time.monotonic() - t0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def duckdb_per_rank(paths):
    """The per-rank query of examples/fleet_duckdb (the one the docs show) on the rank files."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "examples", "fleet_duckdb"))
    import kernel_time_per_rank as example
    con = example.connect()
    example.attach(con, paths)
    return con.execute(example.KERNEL_TIME_PER_RANK).fetchall()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--ranks", default="8,64")
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--reports", default="nvtx_sum,cuda_gpu_kern_sum")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed each report")
    ap.add_argument("--duckdb", action="store_true")
    a = ap.parse_args()
    lantern = os.path.join(a.build, "bin", "lantern")
    counts = [int(n) for n in a.ranks.split(",")]
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().release}; {a.events} events per rank")
    if os.path.exists(a.dir):  # an earlier run's: its ranks and merged files are used again
        print(f"reusing {a.dir}")
    else:
        os.makedirs(a.dir)
        _, wall, cpu = in_process(lambda: subprocess.run(
            [os.path.join(a.build, "bin", "bench_ranks"), a.dir, str(max(counts)),
             str(a.events), str(a.per_host)], check=True))
        rank_mb = os.path.getsize(os.path.join(a.dir, "rank0.db")) / 1e6
        print(f"generated {max(counts)} ranks in {wall:.1f} s: {rank_mb:.1f} MB per rank")
    merged = None
    for n in counts:
        out = os.path.join(a.dir, f"all-{n}.db")
        if os.path.exists(out):
            print(f"merge {n:4d} ranks: reusing {out}")
            merged = out
            continue
        inputs = [os.path.join(a.dir, f"rank{r}.db") for r in range(n)]
        wall, cpu, rss = timed([lantern, "merge", *inputs, "-o", out])
        size = os.path.getsize(out) / 1e6
        print(f"merge {n:4d} ranks ({n * a.events / 1e6:.0f} M events): wall {wall:.1f} s, "
              f"CPU {cpu:.1f} s, peak RSS {rss:.0f} MiB, output {size:.0f} MB "
              f"({n * a.events / wall / 1e6:.2f} M events/s wall)")
        if merged:
            os.unlink(merged)
        merged = out
    for report in filter(None, a.reports.split(",")):
        t = timed([lantern, "stats", merged, "--report", report, "-o", os.devnull, "--force"],
                  a.timeout)
        print(f"stats --report {report} on {max(counts)} ranks: " +
              (f"wall {t[0]:.1f} s, CPU {t[1]:.1f} s, peak RSS {t[2]:.0f} MiB" if t else
               f"did not finish in {a.timeout:.0f} s (killed)"))
    db = sqlite3.connect(f"file:{merged}?mode=ro", uri=True)
    rows, wall, cpu = in_process(lambda: db.execute(PER_RANK_SQL).fetchall())
    print(f"per-rank SQL (sqlite3 {sqlite3.sqlite_version}) on the merged database: "
          f"wall {wall:.1f} s, CPU {cpu:.1f} s, {len(rows)} rows; first {rows[0]}, "
          f"last {rows[-1]}")
    if a.duckdb:
        paths = [os.path.join(a.dir, f"rank{r}.db") for r in range(max(counts))]
        drows, wall, cpu = in_process(lambda: duckdb_per_rank(paths))
        same = [tuple(r) for r in drows] == [tuple(r) for r in rows]
        print(f"per-rank SQL by DuckDB on the {len(paths)} rank files: wall {wall:.1f} s, "
              f"CPU {cpu:.1f} s, {len(drows)} rows, same as the merged database's: {same}")


if __name__ == "__main__":
    main()
