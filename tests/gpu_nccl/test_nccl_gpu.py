#!/usr/bin/env python3
"""GPU test of NCCL's NVTX payloads and `nccl_sum`: nccl_collectives.py (PyTorch's NCCL
collectives with known sizes on min(2, GPUs) ranks) under `lantern profile -t cuda,nvtx`.
Checked: every call each rank made is an NCCL range carrying its size (NCCL >= 2.19), no NCCL
range is left open (NCCL 2.24+ ends its communicator ranges with nvtxRangePopPayload), and
nccl_sum's rows: calls per size, nccl-tests' sizes, GPU time, bandwidths and the ranks of the
communicator (with 2 GPUs). Exits 77, saying why, without a GPU, PyTorch or NCCL.
LANTERN_NCCL_OUT (optional): folder for the database and the report."""
import collections
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1 << 20, 16 << 20]
ITERS = 5
PROBE = ("import torch, torch.distributed as d; assert torch.cuda.is_available() and "
         "d.is_nccl_available(); print(torch.cuda.device_count(), "
         "'.'.join(map(str, torch.cuda.nccl.version())))")


def probe():
    """(GPUs, NCCL version tuple), or the reason to skip."""
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    if run.returncode != 0:
        return "PyTorch with CUDA and NCCL is not installed"
    gpus, version = run.stdout.split()
    return int(gpus), tuple(int(v) for v in version.split("."))


def main():
    found = probe()
    if isinstance(found, str):
        print(f"SKIP: {found}")
        return SKIP
    gpus, nccl = found
    world = min(2, gpus)
    build = os.environ.get("LANTERN_BUILD", os.path.join(HERE, "../../build"))
    out = os.environ.get("LANTERN_NCCL_OUT") or tempfile.mkdtemp()
    db_path = os.path.join(out, "nccl.db")
    if os.path.exists(db_path):
        os.unlink(db_path)
    lantern = os.path.join(build, "bin", "lantern")
    run = subprocess.run([lantern, "profile", "-t", "cuda,nvtx", "-o", db_path, "--",
                          sys.executable, os.path.join(HERE, "nccl_collectives.py"), out,
                          str(world)], capture_output=True, text=True, timeout=500)
    print(run.stdout, run.stderr, sep="\n")
    if run.returncode != 0:
        print(f"FAIL: lantern profile exited {run.returncode}")
        return 1
    print(f"NCCL {'.'.join(map(str, nccl))}, {world} rank(s)")
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
            print(f"FAIL: {what}")

    db = sqlite3.connect(db_path)
    ranks = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(world)]
    payloads = nccl >= (2, 19)
    for r, rank in enumerate(ranks):
        pid_rows = db.execute("SELECT id FROM processes WHERE pid = ?", (rank["pid"],)).fetchall()
        expect(len(pid_rows) == 1, f"rank {r}: its process (pid {rank['pid']}) was recorded")
        if not pid_rows or not payloads:
            continue
        (process,) = pid_rows[0]
        recorded = collections.Counter(db.execute("""
            SELECT s.value, f.value FROM ranges r JOIN strings s ON s.id = r.name_id
            JOIN nvtx_payload_fields f ON f.range_id = r.id
            WHERE r.process_id = ? AND f.field IN ('Message size [bytes]', 'Bytes')""",
                                                  (process,)).fetchall())
        for call, n in collections.Counter(map(tuple, rank["calls"])).items():
            expect(recorded[call] >= n, f"rank {r}: {n} x {call} recorded ({recorded[call]})")
        schemas = db.execute("""SELECT count(*) FROM nvtx_payload_schemas p JOIN domains d
            ON d.id = p.domain_id JOIN strings s ON s.id = d.name_id
            WHERE s.value = 'NCCL' AND p.process_id = ?""", (process,)).fetchone()[0]
        expect(schemas > 0, f"rank {r}: NCCL's payload schemas recorded")
        unended = db.execute("""SELECT count(*) FROM ranges r JOIN domains d ON d.id = r.domain_id
            JOIN strings s ON s.id = d.name_id WHERE s.value = 'NCCL' AND r.end_ns IS NULL
            AND r.process_id = ?""", (process,)).fetchone()[0]
        expect(unended == 0, f"rank {r}: no NCCL range left open ({unended})")
    unknown = db.execute("SELECT count(*) FROM nvtx_payloads WHERE schema_row IS NULL").fetchone()[0]
    expect(unknown == 0, f"every NCCL payload has its schema ({unknown} without)")

    report = subprocess.run([lantern, "stats", db_path, "--report", "nccl_sum"],
                            capture_output=True, text=True)
    print(report.stdout, report.stderr)
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        [lantern, "stats", db_path, "--report", "nccl_sum", "--format", "csv"],
        capture_output=True, text=True, check=True).stdout)))
    with open(os.path.join(out, "nccl_sum.csv"), "w") as f:
        f.write(report.stdout)

    def rows_of(collective, size=None):
        return [r for r in rows if r["Collective"] == collective and
                (size is None or r["Size (B)"] == str(size))]

    for size in SIZES:
        if payloads:
            ar = rows_of("AllReduce", size)
            expect(sum(int(r["Calls"]) for r in ar) >= world * ITERS,
                   f"nccl_sum: {world} x {ITERS} AllReduce of {size} B")
            # nccl-tests' size of an all-gather: the whole buffer (the payload gives one part)
            expect(len(rows_of("AllGather", size // 4 // world * 4 * world)) == world,
                   f"nccl_sum: the AllGather of {size} B on each rank")
        else:
            ar = rows_of("AllReduce")
        if world > 1:
            for r in ar:
                expect(float(r["Total Time (ns)"] or 0) > 0, f"nccl_sum: GPU time of {r}")
                if payloads:
                    expect(r["Ranks"] == str(world), f"nccl_sum: {world} ranks in {r}")
                    expect(r["Ranks From"] in ("communicator", "process"),
                           f"nccl_sum: ranks from the communicator's payload in {r}")
                    expect(float(r["BusBW (GB/s)"] or 0) > 0, f"nccl_sum: bus bandwidth in {r}")
    if world > 1:
        expect(rows_of("Send") or rows_of("SendRecv"), "nccl_sum: the send/recv batch")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
