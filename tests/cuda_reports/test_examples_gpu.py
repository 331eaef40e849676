#!/usr/bin/env python3
"""GPU test of the CUDA reports and timeline on a real program: runs examples/cuda_normalize
under `lantern profile -t cuda,nvtx` (pageable; pinned on 4 streams; the --reuse-bug) and
checks the reports and the Chrome export against what the program does: 16 chunks of 4 Mi
floats, so 33 kernels, 32 copies of 16 MiB, 2 memsets of 64 KiB, NVTX phases find_range and
normalize. Plain Python (the GPU machine has no pytest); exits 77, saying why, without a GPU."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
CHUNKS = 16
CHUNK_BYTES = 4 * 1024 * 1024 * 4
PARTIAL_BYTES = CHUNKS * 1024 * 4


def skip_reason(normalize):
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    if not os.path.exists(normalize):
        return f"{normalize} not built (no nvcc)"
    return None


class Checks:
    def __init__(self):
        self.failures = 0
        self.passed = 0

    def expect(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failures += 1
            print(f"FAIL: {what}")


def lantern(build, *args):
    run = subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                         text=True, timeout=240)
    if run.returncode != 0:
        print(run.stdout, run.stderr, sep="\n")
        raise SystemExit(f"FAIL: lantern {' '.join(args)} exited {run.returncode}")
    return run


def report(build, db, name, *extra):
    out = lantern(build, "stats", db, "--report", name, "--format", "csv", *extra).stdout
    return list(csv.DictReader(io.StringIO(out)))


def profile(build, normalize, tmp, name, *args):
    db = os.path.join(tmp, f"{name}.db")
    run = lantern(build, "profile", "-t", "cuda,nvtx", "--cuda-memory-usage=true", "-o", db, "--",
                  normalize, *args)
    print(run.stdout.strip())
    return db


def check_kernels(c, build, db):
    rows = {r["Name"].split("(")[0]: r for r in report(build, db, "cuda_gpu_kern_sum")}
    c.expect({k: int(r["Instances"]) for k, r in rows.items()} ==
             {"chunk_min_max": CHUNKS, "final_min_max": 1, "normalize_chunk": CHUNKS},
             f"kernel instances {[(k, r['Instances']) for k, r in rows.items()]}")
    total = sum(float(r["Time (%)"]) for r in rows.values())
    c.expect(abs(total - 100) < 0.01, f"kernel Time % sums to {total}")


def check_memory(c, build, db, host_kind):
    sizes = {r["Operation"]: r for r in report(build, db, "cuda_gpu_mem_size_sum")}
    for op in ("[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]"):
        r = sizes.get(op, {})
        c.expect(r.get("Count") == str(CHUNKS) and r.get("Total (B)") == str(CHUNKS * CHUNK_BYTES)
                 and r.get("Med (B)") == str(CHUNK_BYTES), f"{op} sizes {r}")
    r = sizes.get("[CUDA memset]", {})
    c.expect(r.get("Count") == "2" and r.get("Total (B)") == str(2 * PARTIAL_BYTES),
             f"memset sizes {r}")
    trace = report(build, db, "cuda_gpu_trace")
    h2d = [t for t in trace if t["Name"] == "[CUDA memcpy Host-to-Device]"]
    c.expect(all(t["SrcMemKd"] == host_kind and t["DstMemKd"] == "Device" for t in h2d),
             f"HtoD copies from {host_kind}: {sorted({t['SrcMemKd'] for t in h2d})}")
    by_duration = report(build, db, "cuda_gpu_trace", "--sort", "duration")
    durations = [int(t["Duration (ns)"]) for t in by_duration]
    c.expect(durations == sorted(durations, reverse=True) and len(durations) == 4 * CHUNKS + 3,
             f"--sort duration gives {len(durations)} rows, longest first")
    return trace


def check_nvtx(c, build, db):
    proj = {r["Range"]: r for r in report(build, db, "nvtx_gpu_proj_sum")}
    # find_range: 2 memsets, 16 copies in, 16 chunk reductions, 1 final reduction
    c.expect(proj.get(":find_range", {}).get("Total GPU Ops") == str(2 + 2 * CHUNKS + 1),
             f"find_range GPU ops {proj.get(':find_range')}")
    c.expect(proj.get(":normalize", {}).get("Total GPU Ops") == str(2 * CHUNKS),
             f"normalize GPU ops {proj.get(':normalize')}")
    c.expect(":verify" not in proj and ":setup" not in proj, "CPU-only phases are not projected")
    for name in (":find_range", ":normalize"):
        r = proj.get(name, {})
        c.expect(0 < int(r.get("Total Proj Time (ns)", 0)), f"{name} projected time {r}")
    kern = {(r["NVTX Range"], r["Kernel Name"].split("(")[0]): int(r["Kern Inst"])
            for r in report(build, db, "nvtx_kern_sum")}
    c.expect(kern == {(":find_range", "chunk_min_max"): CHUNKS,
                      (":find_range", "final_min_max"): 1,
                      (":normalize", "normalize_chunk"): CHUNKS}, f"nvtx_kern_sum {kern}")


def chunk_streams(trace):
    return {t["Strm"] for t in trace if t["Name"].startswith(("chunk_min_max", "normalize_chunk"))}


def check_timeline(c, build, db, tmp, streams):
    out = os.path.join(tmp, "trace.json")
    lantern(build, "export", db, "--format", "chrome", "-o", out)
    with open(out) as f:
        events = json.load(f)["traceEvents"]
    gpus = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"
            and e["pid"] >= 1000000000]
    c.expect(len(gpus) == 1 and gpus[0]["args"]["name"].startswith("GPU "), f"GPU rows {gpus}")
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
             and e["pid"] >= 1000000000}
    c.expect({f"chunks {i}" for i in range(streams)} <= names, f"stream rows {sorted(names)}")
    ops = [e for e in events if e["ph"] == "X" and e["pid"] >= 1000000000]
    flows = [e for e in events if e["ph"] == "f"]
    c.expect(len(ops) == 4 * CHUNKS + 3 and len(flows) == len(ops),
             f"{len(ops)} GPU slices, {len(flows)} flows")
    counter = [e["args"]["bytes"] for e in events if e["ph"] == "C"]
    c.expect(counter and max(counter) >= CHUNKS * CHUNK_BYTES, f"device memory peak {counter[-3:]}")


def main():
    build = os.environ.get("LANTERN_BUILD", "build")
    normalize = os.environ.get("LANTERN_NORMALIZE", os.path.join(build, "examples", "normalize"))
    reason = skip_reason(normalize)
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    c = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        pageable = profile(build, normalize, tmp, "pageable")
        check_kernels(c, build, pageable)
        check_memory(c, build, pageable, "Pageable")
        check_nvtx(c, build, pageable)
        pinned = profile(build, normalize, tmp, "pinned", "--pinned", "--streams", "4")
        trace = check_memory(c, build, pinned, "Pinned")
        c.expect(len(chunk_streams(trace)) == 4, f"4 streams: {chunk_streams(trace)}")
        check_timeline(c, build, pinned, tmp, 4)
        bug = profile(build, normalize, tmp, "bug", "--pinned", "--streams", "4", "--reuse-bug")
        trace = check_memory(c, build, bug, "Pinned")
        c.expect(len(chunk_streams(trace)) == 1, f"--reuse-bug: one stream {chunk_streams(trace)}")
    print(f"{c.passed} checks passed, {c.failures} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
