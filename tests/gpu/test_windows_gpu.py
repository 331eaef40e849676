#!/usr/bin/env python3
"""GPU test of start/stop windows on a server that is never restarted (docs/long-runs.md, issue
#30): a PyTorch loop under `lantern profile --start-paused --keep-raw -o win-%n.db`, three
windows opened and closed from another shell (`lantern start|stop PID`). Each window's
database must hold the loop's kernels, every one launched inside that window, and the raw
folder's import (everything the agents wrote, no window filter) must hold no kernel launched
while the session was paused: CUPTI's kinds are off between the windows, not only filtered at
import. And `--capture-range=cudaProfilerApi --capture-range-end=repeat:3` on bench's
cuda_launch (30 cudaProfilerStart..Stop blocks of 2 kernels an iteration): three databases,
each exactly one block's kernels. Exits 77, saying why, where there is no GPU or no PyTorch."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cuda_gpu as plain  # noqa: E402

LOOP = """
import sys, time, torch
x = torch.randn(512, 512, device="cuda")
open(sys.argv[1], "w").close()
while not __import__("os").path.exists(sys.argv[2]):
    y = x @ x
    torch.cuda.synchronize()
    time.sleep(0.002)
"""
WINDOWS, WINDOW_S, GAP_S = 3, 1.0, 1.0


def lantern(build, *args):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=120)


def launches(db_path):
    """Every kernel's launching call's start (kernels.api_id)."""
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT a.start_ns FROM kernels k JOIN cuda_api a ON a.id = k.api_id"
                          ).fetchall()


def profiler_repeat(c, build, tmp):
    binary = os.path.join(build, "bin", "cuda_launch")
    if not os.path.exists(binary):
        print(f"no {binary} (built where nvcc is): the cudaProfilerApi repeat is not checked")
        return
    block = 200
    run = lantern(build, "profile", "-t", "cuda,nvtx", "--capture-range=cudaProfilerApi",
                  "--capture-range-end=repeat:3", "-o", os.path.join(tmp, "cap-%n.db"), "--",
                  binary, str(block), "paired")
    c.expect(run.returncode == 0, f"lantern profile (cudaProfilerApi repeat): {run.stderr[-1500:]}")
    for i in (1, 2, 3):
        db = os.path.join(tmp, f"cap-{i}.db")
        c.expect(os.path.exists(db), f"capture {i} was written ({run.stderr[-500:]})")
        if os.path.exists(db):
            n = len(launches(db))
            print(f"capture {i}: {n} kernels")
            c.expect(n == 2 * block, f"capture {i} holds one block's {2 * block} kernels ({n})")
    c.expect(not os.path.exists(os.path.join(tmp, "cap-4.db")), "repeat:3 wrote three")


def main():
    reason = plain.gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return plain.SKIP
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: no PyTorch here")
        return plain.SKIP
    build = os.environ.get("LANTERN_BUILD", "build")
    c = plain.Checks()
    with tempfile.TemporaryDirectory() as tmp:
        ready, stop = os.path.join(tmp, "ready"), os.path.join(tmp, "stop")
        script = os.path.join(tmp, "loop.py")
        with open(script, "w") as f:
            f.write(LOOP)
        proc = subprocess.Popen([os.path.join(build, "bin", "lantern"), "profile", "-t", "cuda,nvtx",
                                 "--start-paused", "--keep-raw", "-o", os.path.join(tmp, "win-%n.db"),
                                 "--", sys.executable, script, ready, stop],
                                stderr=subprocess.PIPE, text=True, cwd=tmp)
        deadline = time.monotonic() + 120
        while not os.path.exists(ready) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        windows = []
        for i in range(WINDOWS):
            time.sleep(GAP_S)
            opened = time.monotonic_ns()
            r = lantern(build, "start", str(proc.pid))
            c.expect(r.returncode == 0, f"lantern start: {r.stderr}")
            time.sleep(WINDOW_S)
            r = lantern(build, "stop", str(proc.pid))
            c.expect(r.returncode == 0, f"lantern stop: {r.stderr}")
            windows.append((opened, time.monotonic_ns()))
            # lantern writes the window's database while the program runs on; a start sent
            # meanwhile would wait for it (docs/long-runs.md), shortening the next window
            written = os.path.join(tmp, f"win-{i + 1}.db")
            deadline = time.monotonic() + 60
            while not os.path.exists(written) and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(GAP_S)
        open(stop, "w").close()
        _, err = proc.communicate(timeout=240)
        c.expect(proc.returncode == 0, f"lantern profile: {err[-2000:]}")
        for i, (opened, closed) in enumerate(windows, 1):
            db = os.path.join(tmp, f"win-{i}.db")
            c.expect(os.path.exists(db), f"window {i} was written ({err[-500:]})")
            if not os.path.exists(db):
                continue
            times = [t for t, in launches(db)]
            inside = sum(opened <= t <= closed for t in times)
            print(f"window {i}: {len(times)} kernels, {inside} launched inside it")
            if len(times) < 50:  # what the window's database does hold, for the next look
                with sqlite3.connect(db) as d:
                    held = {t: d.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                            for t in ("kernels", "cuda_api", "processes", "threads")}
                print(f"window {i} holds {held}; lantern said: {err[-800:]}")
            c.expect(len(times) >= 50, f"window {i} holds the loop's kernels ({len(times)})")
            c.expect(inside == len(times), f"window {i}: every kernel launched inside it")
        profiler_repeat(c, build, tmp)
        raw = lantern(build, "import", os.path.join(tmp, "win-1.db.raw"), "-o",
                      os.path.join(tmp, "all.db"))
        c.expect(raw.returncode == 0, f"import of the raw folder: {raw.stderr}")
        if raw.returncode == 0:
            times = [t for t, in launches(os.path.join(tmp, "all.db"))]
            outside = [t for t in times if not any(o <= t <= e for o, e in windows)]
            print(f"raw folder: {len(times)} kernels, {len(outside)} launched while paused")
            c.expect(times and not outside, "CUPTI recorded nothing while the session was paused")
    print(f"{c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())
