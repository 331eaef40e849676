#!/usr/bin/env python3
"""GPU test of the process life cycle with CUDA tracing (`lantern profile -t cuda,nvtx`): a
CUDA program (lifecycle_cuda.cu) and PyTorch multiprocessing workers end in every way a
process can (return, exit, _exit, abort, SIGSEGV, SIGKILL, fork and spawn workers); every NVTX
range must be kept exactly, and every kernel CUPTI delivered before the end. What CUPTI had
not delivered when a process ended without its exit hooks (it hands its buffers over every
200 ms) is lost: measured and printed, and bounded to what was launched. Exits 77, saying why,
where there is no GPU."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
BUILD = os.environ.get("LANTERN_BUILD", "build")
WORKLOAD = os.environ.get("LANTERN_LIFECYCLE_CUDA", os.path.join(BUILD, "bin", "lifecycle_cuda"))
LANTERN = os.path.join(BUILD, "bin", "lantern")
ENDS = {"return": 0, "exit": 0, "_exit": 0, "abort": 128 + signal.SIGABRT,
        "segv": 128 + signal.SIGSEGV, "kill": 128 + signal.SIGKILL}

failures = []


def expect(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def profile(tmp, name, *command, status=0):
    db = os.path.join(tmp, name + ".db")
    run = subprocess.run([LANTERN, "profile", "-t", "cuda,nvtx", "-o", db, "--", *command],
                         capture_output=True, text=True, timeout=300)
    expect(run.returncode == status, f"{name}: exit status {run.returncode}, want {status}"
           + ("" if run.returncode == status else "\n" + run.stderr[-2000:]))
    return sqlite3.connect(db)


def one(db, sql):
    return db.execute(sql).fetchone()[0]


def ranges(db, name):
    return one(db, "SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id"
                   f" WHERE s.value = '{name}' AND r.end_ns IS NOT NULL")


def kernels_in(db, name):
    return one(db, "SELECT count(*) FROM kernels k JOIN ranges r ON r.id = k.nvtx_range_id"
                   f" JOIN strings s ON s.id = r.name_id WHERE s.value = '{name}'")


WORKER = r"""
import multiprocessing as mp, os, sys, time, torch
def work(end):
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("work")
    for _ in range(100):
        x.add_(1)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    time.sleep(0.4)  # CUPTI hands its buffers over every 200 ms
    if end == "abort":
        os.abort()
if __name__ == "__main__":
    method, end, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = mp.get_context(method)
    ps = [ctx.Process(target=work, args=(end,)) for _ in range(n)]
    [p.start() for p in ps]
    [p.join() for p in ps]
    print("codes", [p.exitcode for p in ps])
"""


def main():
    if not os.path.exists("/dev/nvidiactl"):
        print("skipped: no NVIDIA GPU (no /dev/nvidiactl)")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        # ends after CUPTI's periodic hand-over: everything kept, exactly
        for end, status in ENDS.items():
            db = profile(tmp, f"linger-{end}", WORKLOAD, "500", "400", end, status=status)
            expect(ranges(db, "launch") == 500, f"{end}, 400 ms after: 500 ranges, got {ranges(db, 'launch')}")
            expect(kernels_in(db, "launch") == 500, f"{end}, 400 ms after: 500 kernels, got {kernels_in(db, 'launch')}")
        # ends at once: ranges exact; kernels CUPTI had not handed over are CUPTI's loss
        for end, status in ENDS.items():
            db = profile(tmp, f"now-{end}", WORKLOAD, "500", "0", end, status=status)
            got = kernels_in(db, "launch")
            expect(ranges(db, "launch") == 500, f"{end}, at once: 500 ranges, got {ranges(db, 'launch')}")
            expect(got <= 500 and (got == 500 or end not in ("return", "exit")),
                   f"{end}, at once: {got} of 500 kernels kept (CUPTI did not deliver {500 - got})")
        # fork children that end with _exit, and SIGKILL
        for end in ("_exit", "kill"):
            db = profile(tmp, f"fork-{end}", WORKLOAD, "200", "400", end, "fork", "4")
            expect(ranges(db, "launch") == 800, f"4 fork children ending by {end}: 800 ranges, got {ranges(db, 'launch')}")
            expect(kernels_in(db, "launch") == 800, f"4 fork children ending by {end}: 800 kernels, got {kernels_in(db, 'launch')}")
            # the parent makes no CUDA or NVTX call: the agent is in the 4 children only
            expect(one(db, "SELECT count(*) FROM processes") == 4, f"fork-{end}: 4 processes")
        # PyTorch multiprocessing workers: spawn (sys.exit), forkserver (os._exit), and abort
        script = os.path.join(tmp, "workers.py")
        with open(script, "w") as f:
            f.write(WORKER)
        for method, end in (("spawn", "return"), ("forkserver", "return"), ("spawn", "abort")):
            db = profile(tmp, f"mp-{method}-{end}", sys.executable, script, method, end, "3")
            expect(ranges(db, "work") == 3, f"torch {method} workers ({end}): 3 ranges, got {ranges(db, 'work')}")
            expect(kernels_in(db, "work") == 300, f"torch {method} workers ({end}): 300 kernels, got {kernels_in(db, 'work')}")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
