#!/usr/bin/env python3
"""Speed of the CUDA reports and the CUDA timeline export on a synthetic training-like
session (docs/reports.md, "Performance"): STEPS steps on one thread, each a push/pop "step"
range holding forward/backward/optimizer ranges that launch KERNELS_PER_RANGE kernels each,
plus 20 start/end ranges. Usage: bench_cuda_reports.py BUILD_DIR [STEPS] [KERNELS_PER_RANGE]"""
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_session(path, steps, per_range):
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        db.executescript(f.read())
    db.execute("INSERT INTO meta VALUES('schema_version', 9), ('start_ns', 0),"
               " ('end_ns', 10000000000)")
    db.execute("INSERT INTO processes(id, pid) VALUES(1, 1000)")
    db.execute("INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 1000)")
    db.executemany("INSERT INTO strings VALUES(?, ?)",
                   [(1, "step"), (2, "forward"), (3, "backward"), (4, "optimizer"),
                    (5, "cudaLaunchKernel")] + [(10 + i, f"kernel_{i}") for i in range(50)])
    random.seed(1)
    cpu = gpu = 1000
    range_id = api_id = 0
    ranges, calls, kernels = [], [], []
    for _ in range(steps):
        range_id += 1
        step_id, step_start = range_id, cpu
        cpu += 10
        for phase in (2, 3, 4):
            range_id += 1
            phase_id, phase_start = range_id, cpu
            cpu += 10
            for _ in range(per_range):
                api_id += 1
                calls.append((api_id, cpu, cpu + 5, api_id, phase_id))
                gpu = max(gpu, cpu + 100)
                kernels.append((api_id, api_id, gpu, gpu + 50, 10 + random.randrange(50), api_id,
                                phase_id))
                gpu += 50
                cpu += 10
            ranges.append((phase_id, phase, 1, step_id, phase_start, cpu))
            cpu += 10
        ranges.append((step_id, 1, 0, None, step_start, cpu))
        cpu += 10
    db.executemany("INSERT INTO ranges(id, process_id, name_id, style, depth, parent_id,"
                   " start_thread_id, start_ns, end_ns) VALUES(?, 1, ?, 0, ?, ?, 1, ?, ?)", ranges)
    db.executemany("INSERT INTO ranges(process_id, name_id, style, start_thread_id, start_ns,"
                   " end_ns) VALUES(1, 1, 1, 1, ?, ?)",
                   [(i * 1000000, i * 1000000 + 500000) for i in range(20)])
    db.executemany("INSERT INTO cuda_api(id, process_id, thread_id, api, cbid, name_id, start_ns,"
                   " end_ns, return_code, correlation_id, nvtx_range_id)"
                   " VALUES(?, 1, 1, 0, 211, 5, ?, ?, 0, ?, ?)", calls)
    db.executemany("INSERT INTO kernels(id, process_id, gpu_id, device, context, stream,"
                   " correlation_id, start_ns, end_ns, name_id, api_id, nvtx_range_id)"
                   " VALUES(?, 1, 1, 0, 1, 7, ?, ?, ?, ?, ?, ?)", kernels)
    with open(os.path.join(SOURCE, "src", "db", "indexes.sql")) as f:
        db.executescript(f.read())
    db.commit()
    db.close()
    return len(kernels), len(ranges) + 20


def timed(cmd):
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    per_range = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    lantern = os.path.join(build, "bin", "lantern")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "session.db")
        kernels, ranges = make_session(db, steps, per_range)
        print(f"{kernels} kernels, {ranges} ranges")
        for name in ("cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum",
                     "cuda_gpu_trace", "nvtx_kern_sum", "nvtx_gpu_proj_sum"):
            t = timed([lantern, "stats", db, "--report", name, "--format", "csv"])
            print(f"{name:24s} {t:6.2f} s")
        out = os.path.join(tmp, "trace.json")
        t = timed([lantern, "export", db, "--format", "chrome", "-o", out])
        print(f"{'export chrome':24s} {t:6.2f} s ({os.path.getsize(out) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
