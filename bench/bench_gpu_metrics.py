#!/usr/bin/env python3
"""Speed of what reads the GPU hardware metrics (docs/benchmarks.md, "GPU metrics"): a
synthetic session of SECONDS of samples at 10 kHz on one GPU (600 000 for 60 s, every metric)
and KERNELS kernels on two streams (a third overlap the previous one), launched from
push/pop "step" > "forward"/"backward" ranges of 50 kernels each; times
`lantern stats --report gpu_metrics_sum`, `lantern kernels`, `lantern analyze --rule
tensor_cores` and both exports. Usage: bench_gpu_metrics.py BUILD_DIR [SECONDS] [KERNELS]"""
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = ["gr_active", "sm_active", "sm_issue", "warp_occupancy", "tensor_active", "tensor_hmma",
           "tensor_imma", "tensor_dmma", "dram_read", "dram_write", "dram_bw", "pcie_rx",
           "pcie_tx", "nvlink_rx", "nvlink_tx"]


def make_session(path, seconds, kernels):
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE, "src", "db", "schema.sql")) as f:
        db.executescript(f.read())
    span = seconds * 1_000_000_000
    db.execute("INSERT INTO meta VALUES('schema_version', 9), ('start_ns', 0), ('end_ns', ?),"
               " ('command', 'bench'), ('trace', 'cuda,nvtx,gpu_metrics')", (span,))
    db.execute("INSERT INTO processes(id, pid, name) VALUES(1, 1000, 'bench')")
    db.execute("INSERT INTO threads(id, process_id, tid) VALUES(1, 1, 1000)")
    db.execute("INSERT INTO gpus(id, uuid, name, nvml_index, sm_count) VALUES(1, 'GPU-1',"
               " 'NVIDIA H200', 0, 132)")
    db.execute("INSERT INTO gpu_metric_sets(id, gpu_id, source, period_ns, metrics, hardware,"
               " chip) VALUES(1, 1, 'CUPTI PM sampling', 100000, ?, '', 'GH100')",
               (",".join(METRICS),))
    db.executemany("INSERT INTO strings VALUES(?, ?)",
                   [(1, "step"), (2, "forward"), (3, "backward"), (4, "cudaLaunchKernel")] +
                   [(10 + i, f"kernel_{i}") for i in range(100)])
    random.seed(1)
    period = 100_000
    cols = ", ".join(METRICS)
    marks = ", ".join("?" * len(METRICS))
    db.executemany(f"INSERT INTO gpu_metric_samples(set_id, start_ns, end_ns, {cols})"
                   f" VALUES(1, ?, ?, {marks})",
                   ((i * period, (i + 1) * period,
                     *(random.randrange(10000) / 100 for _ in range(11)),
                     *(random.randrange(10**10) for _ in range(4)))
                    for i in range(span // period)))
    gap = span // kernels  # kernels spread over the run, each 80 % of its slot
    rows, calls, ranges = [], [], []
    range_id = 0
    for k in range(kernels):
        if k % 100 == 0:
            range_id += 1
            step = range_id
            ranges.append((step, 1, 0, None, k * gap, (k + 100) * gap))
        if k % 50 == 0:
            range_id += 1
            phase = range_id
            ranges.append((phase, 2 + (k // 50) % 2, 1, step, k * gap, (k + 50) * gap))
        start = k * gap + (gap // 2 if k % 3 == 0 else 0)  # every third on the second stream
        calls.append((k + 1, k * gap, k * gap + 5, k + 1, phase))
        rows.append((k + 1, 7 + k % 3 // 2, k + 1, start, start + gap * 8 // 10,
                     10 + random.randrange(100), k + 1, phase))
    db.executemany("INSERT INTO ranges(id, process_id, name_id, style, depth, parent_id,"
                   " start_thread_id, start_ns, end_ns) VALUES(?, 1, ?, 0, ?, ?, 1, ?, ?)", ranges)
    db.executemany("INSERT INTO cuda_api(id, process_id, thread_id, api, cbid, name_id, start_ns,"
                   " end_ns, return_code, correlation_id, nvtx_range_id)"
                   " VALUES(?, 1, 1, 0, 211, 4, ?, ?, 0, ?, ?)", calls)
    db.executemany("INSERT INTO kernels(id, process_id, gpu_id, device, context, stream,"
                   " correlation_id, start_ns, end_ns, name_id, api_id, nvtx_range_id, grid_x,"
                   " grid_y, grid_z, block_x, block_y, block_z, regs_per_thread, static_smem,"
                   " dynamic_smem) VALUES(?, 1, 1, 0, 1, ?, ?, ?, ?, ?, ?, ?, 132, 1, 1, 256,"
                   " 1, 1, 32, 0, 0)", rows)
    with open(os.path.join(SOURCE, "src", "db", "indexes.sql")) as f:
        db.executescript(f.read())
    db.commit()
    db.close()
    return span // period, kernels, len(ranges)


def timed(cmd):
    """Wall seconds and peak RSS (MB) of one command, through /usr/bin/time (a child of this
    process would inherit its high-water mark across exec: Linux keeps ru_maxrss)."""
    started = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=True)
    wall = time.perf_counter() - started
    return wall, int(r.stderr.strip().splitlines()[-1]) / 1024


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    kernels = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    lantern = os.path.join(build, "bin", "lantern")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "session.db")
        started = time.perf_counter()
        samples, kernels, ranges = make_session(db, seconds, kernels)
        print(f"{samples} samples, {kernels} kernels, {ranges} ranges"
              f" (built in {time.perf_counter() - started:.0f} s)")
        runs = [
            ("stats --report gpu_metrics_sum", ["stats", db, "--report", "gpu_metrics_sum",
                                                "--format", "csv"]),
            ("stats --report nvtx_gpu_proj_sum", ["stats", db, "--report", "nvtx_gpu_proj_sum",
                                                  "--format", "csv"]),
            ("kernels --csv (measured columns)", ["kernels", db, "--csv"]),
            ("kernels --csv (measures all the same)", ["kernels", db, "--csv", "-c",
                                                       "idx,kernel,sil,occupancy"]),
            ("analyze --rule tensor_cores", ["analyze", db, "--rule", "tensor_cores"]),
            ("export --format perfetto", ["export", db, "--format", "perfetto", "-o",
                                          os.path.join(tmp, "t.perfetto-trace")]),
            ("export --format chrome", ["export", db, "--format", "chrome", "-o",
                                        os.path.join(tmp, "t.json")]),
        ]
        for label, args in runs:
            wall, rss = timed([lantern, *args])
            size = ""
            if args[0] == "export":
                size = f"  {os.path.getsize(args[-1]) / 1e6:.0f} MB"
            print(f"{label:38s} {wall:6.2f} s  peak RSS {rss:5.0f} MB{size}")


if __name__ == "__main__":
    main()
