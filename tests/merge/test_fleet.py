"""Per-rank analysis of a fleet (docs/multi-rank.md): three rank databases made here with known
kernels; kernel time per rank computed (1) on their `lantern merge` with the merged form of the
query, and (2) by DuckDB on the rank files themselves (examples/fleet_duckdb), both against the
values the files were made with. (2) skips, saying why, where DuckDB or its sqlite extension is
not installed (not a Lantern dependency)."""
import importlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("LANTERN_BUILD", ROOT / "build"))
LANTERN = BUILD / "bin" / "lantern"
EXAMPLE = ROOT / "examples" / "fleet_duckdb"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

# rank -> (host, GPU work kernels' durations, the all-reduce's duration), ns
RANKS = {0: ("node0", [1000, 2000], 500), 1: ("node0", [3000], 700),
         2: ("node1", [4000, 5000, 6000], 900)}
TRUTH = [(rank, host, len(work) + 1, sum(work) + nccl, nccl)
         for rank, (host, work, nccl) in sorted(RANKS.items())]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    schema = (ROOT / "src" / "db" / "schema.sql").read_text()
    paths = []
    for rank, (host, work, nccl) in RANKS.items():
        path = d / f"run-{rank}.db"
        db = sqlite3.connect(path)
        db.executescript(schema)
        db.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("schema_version", 9), ("host", host), ("start_ns", 1000),
            ("start_wall_ns", 1_764_000_000_000_000_000 + (rank // 2) * 5000),
            ("end_ns", 10_000_000), ("trace", "cuda"), ("dropped_events", 0)])
        # the same ids in every file, naming other strings: a query that joined across files
        # would count rows several times and mix names
        db.execute("INSERT INTO processes(id, pid, host, rank) VALUES (1, ?, ?, ?)",
                   (100 + rank, host, rank))
        gemm, allreduce = (1, 2) if rank % 2 else (2, 1)
        db.execute("INSERT INTO strings VALUES (?, 'gemm'), (?, ?)", (gemm, allreduce, NCCL))
        t = 10_000
        for ns, name in [(ns, gemm) for ns in work] + [(nccl, allreduce)]:
            db.execute("INSERT INTO kernels(process_id, start_ns, end_ns, name_id)"
                       " VALUES (1, ?, ?, ?)", (t, t + ns, name))
            t += 10_000
        db.commit()
        db.close()
        paths.append(path)
    return paths


def test_kernel_time_per_rank_on_the_merged_database(files, tmp_path):
    out = tmp_path / "all.db"
    r = subprocess.run([str(LANTERN), "merge", *map(str, files), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(ROOT / "bench"))
    bench = importlib.import_module("bench_fleet")
    assert sqlite3.connect(out).execute(bench.PER_RANK_SQL).fetchall() == TRUTH


def test_kernel_time_per_rank_by_duckdb_on_the_rank_files(files):
    pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install duckdb)")
    sys.path.insert(0, str(EXAMPLE))
    example = importlib.import_module("kernel_time_per_rank")
    try:
        con = example.connect()
    except Exception as e:  # duckdb.Error: no sqlite extension and no network to install it
        pytest.skip(f"DuckDB's sqlite extension cannot be loaded: {str(e).splitlines()[0]}")
    example.attach(con, files)
    assert [tuple(r) for r in con.execute(example.KERNEL_TIME_PER_RANK).fetchall()] == TRUTH
    # the example's command line prints the same, in ms
    r = subprocess.run([sys.executable, str(EXAMPLE / "kernel_time_per_rank.py"),
                        *map(str, files)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1:] == [
        "%4s  %-10s %8d %14.3f %10.3f" % (rank, host, n, ns / 1e6, nccl / 1e6)
        for rank, host, n, ns, nccl in TRUTH]
