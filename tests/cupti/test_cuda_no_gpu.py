#!/usr/bin/env python3
"""`lantern profile -t cuda,nvtx` where there is no GPU: exactly one `lantern:` warning
about CUDA, the program runs normally, and its NVTX ranges are recorded. Skips (77) on a
machine that has a GPU, where the warning would rightly not appear."""
import os
import sqlite3
import subprocess
import sys
import tempfile

if os.path.exists("/dev/nvidiactl"):
    print("SKIP: this machine has an NVIDIA GPU; the no-GPU path cannot be seen here")
    sys.exit(77)

build = os.environ["LANTERN_BUILD"]
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "nogpu.db")
    run = subprocess.run([os.path.join(build, "bin", "lantern"), "profile", "-t", "cuda,nvtx", "-o", db,
                          "--", os.path.join(build, "bin", "cupti_nvtx_only"), "7"],
                         capture_output=True, text=True, timeout=120)
    print(run.stderr)
    assert run.returncode == 0, run.returncode
    cuda_warnings = [l for l in run.stderr.splitlines() if l.startswith("lantern:") and "cuda" in l.lower()]
    assert len(cuda_warnings) == 1, cuda_warnings
    assert "no NVIDIA GPU" in cuda_warnings[0], cuda_warnings[0]
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM ranges").fetchone()[0] == 7
    assert con.execute("SELECT count(*) FROM kernels").fetchone()[0] == 0
print("ok")
