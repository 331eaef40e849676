#!/usr/bin/env python3
"""GPU proof of the thread states in analyze's host part (docs/cpu.md, "Thread states"):
state_gpu.py under `lantern profile -t cuda,nvtx,cpu`, its GPU idle while the launching thread
sleeps (blocked) or spins (running) between tiny kernels; gpu_idle's GPU finding then says how
much of the gaps the thread was blocked, preempted and running, and the share follows the
program: sleeping, mostly blocked; spinning, mostly running. Plain Python (the GPU machine has
no pytest); exits 77, saying why, without a GPU or torch."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "state_gpu.py")


def lantern(build, *args):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=600)


def main():
    build = os.environ.get("LANTERN_BUILD", "build")
    if not os.path.exists("/dev/nvidiactl"):
        print("SKIP: no NVIDIA GPU")
        return SKIP
    if subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                      capture_output=True).returncode != 0:
        print("SKIP: torch with CUDA is not installed")
        return SKIP
    out = os.environ.get("LANTERN_PROOF_OUT") or tempfile.mkdtemp(prefix="lantern-state-")
    os.makedirs(out, exist_ok=True)
    failed = 0

    def expect(cond, what):
        nonlocal failed
        print(("ok: " if cond else "FAIL: ") + what)
        failed += not cond

    for mode in ("sleep", "spin"):
        db = os.path.join(out, f"{mode}.db")
        run = lantern(build, "profile", "-t", "cuda,nvtx,cpu", "-f", "-o", db, "--",
                      sys.executable, PROGRAM, mode)
        expect(run.returncode == 0, f"{mode}: profiled ({run.stderr[-500:]})")
        found = lantern(build, "analyze", db, "--rule", "gpu_idle", "--format", "json")
        expect(found.returncode == 0, f"{mode}: analyzed ({found.stderr[-300:]})")
        if found.returncode != 0:
            continue
        findings = json.loads(found.stdout)["analysis"]["rules"][0]["findings"]
        h = findings[0]["host"] if findings else None
        expect(h is not None and h.get("state_threads", 0) >= 1,
               f"{mode}: gpu_idle's host part has the launching thread's states")
        if not h or not h.get("state_ns"):
            continue
        print("  host:", h["summary"])
        blocked = h["blocked_state_ns"] / h["state_ns"]
        preempted = h["preempted_state_ns"] / h["state_ns"]
        running = 1 - blocked - preempted
        if mode == "sleep":  # 20 x 50 ms of time.sleep: the gaps are mostly blocked
            expect(blocked >= 0.6, f"sleep: blocked {blocked:.1%} of the gaps (>= 60 %)")
        else:  # 20 x 50 ms of a busy loop: mostly running
            expect(running >= 0.6 and blocked <= 0.3,
                   f"spin: running {running:.1%}, blocked {blocked:.1%} of the gaps")
        expect("of the host-wait gaps" in h["summary"], f"{mode}: the summary says it")
    print(f"outputs in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
