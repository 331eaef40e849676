#!/usr/bin/env python3
"""GPU test of the flight recorder (`lantern profile --ring SEC`, docs/long-runs.md): the
CUDA program of test_cuda_gpu.py, shorter than the ring, under `--ring 120`: the dump written
at its end must hold every CUDA record the plain run holds (the definitions (devices,
contexts, streams, kernel names) kept in the .lrt, the events in the segments, CUPTI flushed
at the end), checked with the same SQL; and a dump asked while a PyTorch loop runs (where
PyTorch is installed) must hold its kernels of the last seconds (the dump's forced CUPTI flush
on the writer thread). Exits 77, saying why, where there is no GPU."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cuda_gpu as plain  # noqa: E402

TORCH_LOOP = """
import sys, time, torch
x = torch.randn(1024, 1024, device="cuda")
open(sys.argv[1], "w").close()
end = time.monotonic() + 8
while time.monotonic() < end:
    y = x @ x
    torch.cuda.synchronize()
    time.sleep(0.01)
"""


def live_dump(c, build, tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("no PyTorch here: the live dump is not checked")
        return
    ready = os.path.join(tmp, "ready")
    script = os.path.join(tmp, "loop.py")
    with open(script, "w") as f:
        f.write(TORCH_LOOP)
    lantern = os.path.join(build, "bin", "lantern")
    proc = subprocess.Popen([lantern, "profile", "-t", "cuda,nvtx", "--ring", "2", "-o",
                             os.path.join(tmp, "live-%n.db"), "--", sys.executable, script, ready],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(ready) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(3)
    dump = subprocess.run([lantern, "dump", str(proc.pid)], capture_output=True, text=True,
                          timeout=120)
    c.expect(dump.returncode == 0, f"lantern dump: {dump.stderr}")
    proc.communicate(timeout=240)
    db = sqlite3.connect(os.path.join(tmp, "live-1.db"))
    kernels, first, last = db.execute("SELECT count(*), min(start_ns), max(start_ns)"
                                      " FROM kernels").fetchone()
    start, end = (int(v) for v in db.execute(
        "SELECT max(CASE WHEN key = 'start_ns' THEN value END),"
        " max(CASE WHEN key = 'end_ns' THEN value END) FROM meta").fetchone())
    print(f"live dump: {kernels} kernels in [{start}, {end}]")
    c.expect(kernels >= 50, f"the live dump holds the loop's kernels of the last 2 s ({kernels})")
    c.expect(kernels and first >= start and end - last < 500_000_000,
             "its kernels lie in the ring, up to the dump")


def main():
    reason = plain.gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return plain.SKIP
    build = os.environ.get("LANTERN_BUILD", "build")
    workload = os.environ.get("LANTERN_CUDA_WORKLOAD", os.path.join(build, "bin", "cuda_workload"))
    c = plain.Checks()
    with tempfile.TemporaryDirectory() as tmp:
        db, expected = plain.run_workload(build, workload, tmp, ("--ring", "120"), "ring")
        k = plain.check_kernels(c, db)
        plain.check_copies(c, db)
        plain.check_streams(c, db)
        plain.check_durations(c, k, expected)
        plain.check_devices(c, db)
        live_dump(c, build, tmp)
    print(f"{c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())
