#!/usr/bin/env python3
"""GPU proof of `lantern diff` (issue #29): the same PyTorch training step (train_precision.py)
profiled 3 times in fp32 and 3 times in bf16 autocast, with the GPU metrics where they can be
recorded, and 3 more times in fp32. bf16 against fp32 must name the GEMM kernels that changed
(gone, new, or faster) and find the step faster, explained by GEMMs, with their Tensor Core
share where metrics were recorded; fp32 against fp32 must find nothing (every row same or
untested). The diff tables are printed, to quote. Exits 77, saying why, without a GPU or
PyTorch; about a minute on an H100.
Usage: LANTERN_BUILD=build python3 tests/diff/test_diff_gpu.py   (LANTERN_DIFF_OUT: a folder
to keep the databases and the HTML pages in)"""
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("LANTERN_BUILD", os.path.join(HERE, "..", "..", "build"))
LANTERN = os.path.join(BUILD, "bin", "lantern")
CHANGES = {"slower", "faster", "higher", "lower", "new", "gone"}
GEMM = re.compile(r"gemm|nvjet|xmma|cutlass|matmul", re.I)
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from test_cuda_gpu import gpu_missing_reason  # noqa: E402 (the one check of a usable GPU)
failures = []


def expect(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def skip_reason():
    reason = gpu_missing_reason()
    if reason:
        return reason
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "PyTorch with CUDA is not installed"
    return None


def profile(db, mode, metrics):
    cmd = [LANTERN, "profile", "-f", "-t", "cuda,nvtx", "-o", db]
    if metrics:
        cmd.append("--gpu-metrics")
    cmd += ["--", sys.executable, os.path.join(HERE, "train_precision.py"), mode]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        print(" ".join(cmd), run.stderr[-3000:], sep="\n")
        sys.exit(1)
    return db


def diff(base, new, *options):
    args = [LANTERN, "diff", "--base", *base, "--new", *new, *options]
    run = subprocess.run(args + ["--format", "json"], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        print(" ".join(args), run.stderr, sep="\n")
        sys.exit(1)
    table = subprocess.run(args + ["-w", "200"], capture_output=True, text=True, timeout=300)
    print("$ lantern diff --base", *base, "--new", *new, *options, "\n" + table.stdout)
    return json.loads(run.stdout)


def median(side, unit="ns"):
    """A side's median and count as text ("-" where it has none)."""
    if not side["count"]:
        return "-"
    return f"{side['median']:.0f} {unit} (n={side['count']})"


def main():
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    out = os.environ.get("LANTERN_DIFF_OUT") or tempfile.mkdtemp(prefix="lantern-diff-")
    os.makedirs(out, exist_ok=True)
    # the metrics sampler needs the GPU's counters; without them the runs go on without metrics
    fp32 = [profile(os.path.join(out, f"fp32-{i}.db"), "fp32", True) for i in range(3)]
    bf16 = [profile(os.path.join(out, f"bf16-{i}.db"), "bf16", True) for i in range(3)]
    again = [profile(os.path.join(out, f"fp32-again-{i}.db"), "fp32", True) for i in range(3)]

    doc = diff(fp32, bf16, "--html", os.path.join(out, "fp32-bf16.html"), "-f")
    expect(doc["mode"] == "runs", "3 runs against 3: the runs decide (bootstrap over runs)")
    gemms = [r for r in doc["rows"] if r["kind"] == "kernel" and GEMM.search(r["name"])]
    changed = [r for r in gemms if r["verdict"] in CHANGES]
    for r in changed:
        print(f"  GEMM {r['verdict']}: {r['name']}: base {median(r['base'])},"
              f" new {median(r['new'])}")
    expect(len(changed) >= 1, f"the diff names the GEMM kernels that changed ({len(changed)})")
    expect(any(r["verdict"] in ("gone", "faster") for r in changed),
           "an fp32 GEMM is gone (or faster) in bf16")
    step = [r for r in doc["rows"] if r["kind"] == "range" and r["name"] == ":step"]
    percent = step[0]["percent"] if step and step[0]["percent"] is not None else float("nan")
    expect(len(step) == 1 and step[0]["verdict"] == "faster",
           f":step is faster in bf16 ({step[0]['verdict'] if step else 'missing'},"
           f" {percent:+.1f} %)")
    line = step[0]["explanation"] if step and step[0]["explanation"] else ""
    print("  :step", line)
    expect(bool(GEMM.search(line)), "the step's change is explained by GEMM kernels")
    tensor = [r for r in doc["rows"] if r["kind"] == "gpu metric" and r["scope"] == "tensor_active"
              and GEMM.search(r["name"])]
    if tensor:
        for r in tensor:
            print(f"  tensor_active {r['verdict']}: {r['name']}: base {median(r['base'], '%')},"
                  f" new {median(r['new'], '%')}")
        expect(any(r["new"]["count"] and r["new"]["median"] > 10 for r in tensor),
               "a bf16 GEMM runs on the Tensor Cores (> 10 % tensor_active)")
        expect("Tensor Cores" in line, "the explanation gives the GEMMs' Tensor Core share")
    else:
        print("note: no GPU metrics were recorded (see the lantern: lines above): Tensor Core"
              " shares not checked")

    doc = diff(fp32, again, "--html", os.path.join(out, "fp32-fp32.html"), "-f")
    flagged = [(r["verdict"], r["kind"], r["name"], r["percent"], r["q"]) for r in doc["rows"]
               if r["verdict"] in CHANGES]
    for f in flagged:
        print("  flagged:", f)
    expect(not flagged, f"fp32 against fp32: every row same ({len(flagged)} flagged"
                        f" of {len(doc['rows'])})")
    print(f"databases and pages in {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
