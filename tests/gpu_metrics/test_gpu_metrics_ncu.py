#!/usr/bin/env python3
"""GPU test: Lantern's GPU hardware metrics against Nsight Compute, for both sources.

metrics_kernels (a cuBLAS bf16 GEMM, an fp32 add, a single-thread kernel, a full-GPU spin) runs
once under ncu, which replays each kernel alone and reads its counters, and once per source
(CUPTI PM sampling, NVML GPM) under `lantern profile --gpu-metrics`, each kernel launched back
to back for a while (0.4 s each for PM sampling's 200 µs samples, 3 s for GPM's 100 ms ones:
a sample straddling two phases then weighs at most ~1 % of either). Per kernel, `lantern stats --report gpu_metrics_sum`'s mean must be within
5 points of ncu's `…pct_of_peak_sustained_elapsed` for SMs active, warp occupancy, Tensor
Cores, DRAM bandwidth and (PM sampling only: GPM has no issue metric) instruction issue. And
the add phase, which starts while the last GEMMs still run, must read Tensor Cores <= 1 % mean
(alignment: a phase's activity must not leak into the next range).

ncu runs with --clock-control none and --cache-control none, as the kernels run under Lantern.
Exits 77, saying why, without a GPU, without ncu or without the program (no nvcc or cuBLAS
where Lantern was built). Set LANTERN_TEST_OUT to keep the databases and ncu's CSV there."""
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from test_cuda_gpu import gpu_missing_reason  # noqa: E402 (the one check of a usable GPU)

TOLERANCE = 5.0  # points of percent of peak
PCT = ".pct_of_peak_sustained_elapsed"
# Lantern's metric -> ncu's, as candidates (the first whose counters this ncu knows is used);
# a candidate of several counters is their sum, as Lantern's dram_bw is read + write.
NCU_METRICS = {
    "sm_active": [["sm__cycles_active.avg"]],
    "warp_occupancy": [["sm__warps_active.avg"]],
    "tensor_active": [["sm__pipe_tensor_cycles_active.avg"],
                      ["sm__pipe_tensor_op_gmma_cycles_active.avg",
                       "sm__pipe_tensor_op_hmma_cycles_active.avg"]],
    "dram_bw": [["dram__bytes_read.sum", "dram__bytes_write.sum"]],
    "sm_issue": [["sm__inst_executed.avg"]],
}
# The four kernels, as their names contain (cuBLAS names its GEMMs by architecture and
# version: sm90_xmma_gemm_…, nvjet_…, cutlass_…).
KERNELS = {
    "gemm": ("gemm", "nvjet", "xmma", "cutlass"),
    "add": ("add_fp32",),
    "single": ("single_thread",),
    "spin": ("full_spin",),
}
failures = []


def expect(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def kernel_of(name):
    low = name.lower()
    for kernel, parts in KERNELS.items():
        if any(p in low for p in parts):
            return kernel
    return None


def find_ncu():
    found = os.environ.get("NCU") or shutil.which("ncu")
    if found:
        return found
    for root in ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"):
        for base, _, files in os.walk(root):
            if "ncu" in files:
                return os.path.join(base, "ncu")
    return None


def ncu_known(ncu):
    """The base names of the metrics ncu knows on this GPU."""
    run = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=300)
    return {line.split()[0] for line in run.stdout.splitlines() if line.strip()}


def ncu_values(ncu, program, out):
    """{kernel: {lantern metric: ncu value}} from the last launch of each kernel."""
    known = ncu_known(ncu)
    chosen = {}
    for metric, candidates in NCU_METRICS.items():
        for counters in candidates:
            if all(c.rsplit(".", 1)[0] in known for c in counters):
                chosen[metric] = [c + PCT for c in counters]
                break
    print("ncu metrics:", chosen)
    names = sorted({c for cs in chosen.values() for c in cs})
    cmd = [ncu, "--csv", "--clock-control", "none", "--cache-control", "none",
           "--metrics", ",".join(names), program, "--once"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out:
        with open(os.path.join(out, "ncu.csv"), "w") as f:
            f.write(run.stdout)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
        expect(False, "ncu ran")
        return {}
    rows = list(csv.DictReader(io.StringIO(run.stdout[run.stdout.index('"ID"'):])))
    last = {}  # kernel -> launch id of its last launch
    for r in rows:
        k = kernel_of(r["Kernel Name"])
        if k:
            last[k] = max(last.get(k, -1), int(r["ID"]))
    raw = {}
    for r in rows:
        k = kernel_of(r["Kernel Name"])
        if k and int(r["ID"]) == last[k]:
            raw.setdefault(k, {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return {k: {m: sum(v[c] for c in cs) for m, cs in chosen.items() if all(c in v for c in cs)}
            for k, v in raw.items()}


def lantern(args, **kw):
    exe = os.path.join(os.environ["LANTERN_BUILD"], "bin", "lantern")
    return subprocess.run([exe] + args, capture_output=True, text=True, timeout=600, **kw)


def lantern_values(program, source, seconds, tmp):
    """{kernel: {metric: mean}} and {range: {metric: mean}} from gpu_metrics_sum."""
    db = os.path.join(tmp, f"metrics_{source}.db")
    run = lantern(["profile", "--force", "-t", "cuda,nvtx", "--gpu-metrics",
                   "--gpu-metrics-source", source, "-o", db, "--", program, str(seconds)])
    print(f"[{source}] profile ->", run.returncode, run.stdout.strip(), run.stderr.strip()[-1500:])
    if run.returncode != 0:
        expect(False, f"[{source}] lantern profile ran")
        return {}, {}
    stats = lantern(["stats", "--report", "gpu_metrics_sum", "--format", "csv", db])
    kernels, ranges = {}, {}
    for r in csv.DictReader(io.StringIO(stats.stdout)):
        if r["Mean"] == "":
            continue
        if r["Scope"] == "kernel" and kernel_of(r["Name"]):
            kernels.setdefault(kernel_of(r["Name"]), {})[r["Metric"]] = float(r["Mean"])
        elif r["Scope"] == "nvtx":
            ranges.setdefault(r["Name"].lstrip(":"), {})[r["Metric"]] = float(r["Mean"])
    return kernels, ranges


def main():
    reason = gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    program = os.environ.get("LANTERN_METRICS_KERNELS", "")
    if not os.access(program, os.X_OK):
        print(f"SKIP: metrics_kernels was not built (no nvcc or cuBLAS where Lantern was built)")
        return SKIP
    ncu = find_ncu()
    if not ncu:
        print("SKIP: no ncu (Nsight Compute) on this machine")
        return SKIP
    keep = os.environ.get("LANTERN_TEST_OUT")
    with tempfile.TemporaryDirectory() as tmp:
        out = keep or tmp
        truth = ncu_values(ncu, program, out)
        for source, seconds, metrics in (("pm", 0.4, list(NCU_METRICS)),
                                         ("gpm", 3.0, [m for m in NCU_METRICS if m != "sm_issue"])):
            got, ranges = lantern_values(program, source, seconds, out)
            print(f"[{source}] {'kernel':8} {'metric':15} {'lantern':>8} {'ncu':>8}")
            for kernel in KERNELS:
                for metric in metrics:
                    t = truth.get(kernel, {}).get(metric)
                    v = got.get(kernel, {}).get(metric)
                    print(f"[{source}] {kernel:8} {metric:15} {v if v is None else round(v, 2)!s:>8}"
                          f" {t if t is None else round(t, 2)!s:>8}")
                    expect(t is not None and v is not None and abs(v - t) <= TOLERANCE,
                           f"[{source}] {kernel} {metric}: Lantern {v} vs ncu {t} (within {TOLERANCE})")
            leak = ranges.get("add", {}).get("tensor_active")
            expect(leak is not None and leak <= 1.0,
                   f"[{source}] the add range right after the GEMMs reads Tensor Cores {leak} % (<= 1 %)")
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
