#!/usr/bin/env python3
"""GPU proof of the GIL in the host part (issue #27): gil_gpu.py (a PyTorch loop of tiny
kernels while another thread runs pure Python) under `lantern profile -t cuda,nvtx,cpu`:
  - gpu_idle's finding for the range 'contended' has a host part that names the main thread's
    GIL waits, and the advice of the pattern "threads contend for the GIL";
  - python_gil_sum lists the main thread, its waits the sum of its cpu_gil_waits rows.
Prints what it found and keeps the database and outputs in $LANTERN_PROOF_OUT (default: a
temporary folder). Plain Python (the GPU machine has no pytest); exits 77, saying why,
without a GPU or torch."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gil_gpu.py")


def lantern(build, *args):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=900)


def main():
    build = os.environ.get("LANTERN_BUILD", "build")
    if not os.path.exists("/dev/nvidiactl"):
        print("SKIP: no NVIDIA GPU")
        return SKIP
    if subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                      capture_output=True).returncode != 0:
        print("SKIP: torch with CUDA is not installed")
        return SKIP
    out = os.environ.get("LANTERN_PROOF_OUT") or tempfile.mkdtemp(prefix="lantern-gil-")
    os.makedirs(out, exist_ok=True)
    failed = 0

    def expect(cond, what):
        nonlocal failed
        print(("ok: " if cond else "FAIL: ") + what)
        failed += not cond

    db = os.path.join(out, "gil.db")
    run = lantern(build, "profile", "-t", "cuda,nvtx,cpu", "-f", "-o", db, "--", sys.executable,
                  PROGRAM, "3")
    expect(run.returncode == 0, f"profiled ({run.stderr[-500:]})")
    analysis = lantern(build, "analyze", db, "--rule", "gpu_idle", "--format", "json")
    expect(analysis.returncode == 0, "analyzed")
    with open(os.path.join(out, "gil.analysis.json"), "w") as f:
        f.write(analysis.stdout)
    findings = json.loads(analysis.stdout)["analysis"]["rules"][0]["findings"]
    ranged = [f for f in findings if "contended" in f["summary"] and f.get("host")]
    expect(len(ranged) == 1, "gpu_idle has a finding for the range 'contended' with a host part")
    for f in ranged:
        h = f["host"]
        print("  summary:", f["summary"])
        print("  host:", h["summary"])
        print("  advice:", f["advice"])
        expect(h.get("gil_waits", 0) > 0 and "GIL waits:" in h["summary"],
               "the host part names the GIL waits")
        expect(h["pattern"] == "threads contend for the GIL",
               f"the GIL pattern ({h['pattern']}, {h['pattern_percent']})")
    report = lantern(build, "stats", db, "-r", "python_gil_sum", "--format", "json")
    expect(report.returncode == 0, "python_gil_sum ran")
    print(lantern(build, "stats", db, "-r", "python_gil_sum").stdout)
    with sqlite3.connect(db) as con:
        truth = dict(con.execute("SELECT t.tid, sum(w.duration_ns) FROM cpu_gil_waits w"
                                 " JOIN threads t ON t.id = w.thread_id GROUP BY t.id"))
        main_tid = con.execute("SELECT pid FROM processes ORDER BY id LIMIT 1").fetchone()[0]
    rows = {int(r["thread"].split()[0]): r["wait_ns"] for r in json.loads(report.stdout)["rows"]}
    expect(rows == truth, "python_gil_sum's waits are the table's rows")
    expect(rows.get(main_tid, 0) > 0, "the main (launching) thread waited for the GIL")
    print(f"outputs in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
