#!/usr/bin/env python3
"""Kernel time per rank of a fleet, without merging (docs/multi-rank.md): DuckDB attaches each
rank's Lantern database (`lantern profile -o run-%r.db` inside each rank) read-only through its
sqlite extension, one view per table is the UNION ALL of the ranks' tables with the file's
number added (ids are per file), and the query groups by rank. DuckDB is not a Lantern
dependency: `pip install duckdb`, then `INSTALL sqlite` once (it downloads the extension), or
offline the duckdb-ext-sqlite wheel of the same DuckDB version.
Usage: kernel_time_per_rank.py run-*.db"""
import os
import sys

# Per rank: kernels, their GPU time and the NCCL kernels' share (ns).
KERNEL_TIME_PER_RANK = """
SELECT p.rank, p.host, count(*) AS kernels, sum(k.end_ns - k.start_ns) AS kernel_ns,
       sum(CASE WHEN s.value LIKE 'ncclDevKernel%' THEN k.end_ns - k.start_ns END) AS nccl_ns
FROM kernels k
JOIN processes p ON p.file = k.file AND p.id = k.process_id
JOIN strings s ON s.file = k.file AND s.id = k.name_id
GROUP BY p.file, p.id, p.rank, p.host
ORDER BY p.rank"""

TABLES = ("processes", "threads", "strings", "ranges", "cuda_api", "kernels", "gpus",
          "gpu_samples")


def connect():
    """A DuckDB connection with the sqlite extension loaded (from the duckdb-ext-sqlite wheel
    when it is installed, else from DuckDB's own extension folder)."""
    import duckdb
    config = {}
    try:
        import duckdb_ext
        config["extension_directory"] = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    except ImportError:
        pass
    con = duckdb.connect(config=config)
    con.execute("LOAD sqlite")
    return con


def attach(con, paths):
    """Attaches every rank file and makes one view per table over all of them."""
    for i, path in enumerate(paths):
        quoted = "'%s'" % str(path).replace("'", "''")  # ATTACH takes no parameters
        con.execute("ATTACH %s AS r%d (TYPE sqlite, READ_ONLY)" % (quoted, i))
    for table in TABLES:
        union = " UNION ALL ".join("SELECT %d AS file, * FROM r%d.%s" % (i, i, table)
                                   for i in range(len(paths)))
        con.execute("CREATE TEMP VIEW %s AS %s" % (table, union))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.rsplit("\n", 1)[-1])
    con = connect()
    attach(con, sys.argv[1:])
    print("rank  host        kernels      kernel ms    nccl ms")
    for rank, host, kernels, kernel_ns, nccl_ns in con.execute(KERNEL_TIME_PER_RANK).fetchall():
        print("%4s  %-10s %8d %14.3f %10.3f" % (rank, host, kernels, kernel_ns / 1e6,
                                                (nccl_ns or 0) / 1e6))


if __name__ == "__main__":
    main()
