#!/usr/bin/env python3
"""GPU test of `lantern kernels`: a bf16 CNN and transformer block training step
(torch_step.py) under emit_nvtx(record_shapes=True), profiled with `lantern profile -t
cuda,nvtx`, checked against independent figures: every GEMM's FLOPs = 2*M*N*K recomputed here
from the op's recorded shapes, bf16 GEMMs on Tensor Cores, big GEMMs' achieved TFLOP/s below
the GPU's peak and plausible, backward rows matched to their forward layer, and the kernel
count equal to torch.profiler's on the same step. Exits 77, saying why, without a GPU or
PyTorch. LANTERN_KERNELS_OUT (optional): folder for the database and the report."""
import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def skip_reason():
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "PyTorch with CUDA is not installed"
    return None


def sizes_of(marker):
    """The shapes list of an emit_nvtx marker, parsed independently of Lantern's C parser."""
    m = re.search(r", sizes = (\[.*?\]\])", marker)
    return json.loads(m.group(1)) if m else None


def gemm_flops(op, sizes):
    """2*M*N*K (times the batch) for the matmul ops, from PyTorch's argument order."""
    a, b = {"mm": (0, 1), "bmm": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2)}[op]
    x, y = sizes[a], sizes[b]
    batch = x[0] if len(x) == 3 else 1
    return 2 * batch * x[-2] * x[-1] * y[-1]


def main():
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    build = os.environ.get("LANTERN_BUILD", os.path.join(HERE, "../../build"))
    lantern = os.path.join(build, "bin", "lantern")
    out_dir = os.environ.get("LANTERN_KERNELS_OUT") or tempfile.mkdtemp()
    db = os.path.join(out_dir, "torch_step.db")
    if os.path.exists(db):
        os.unlink(db)
    run = subprocess.run([lantern, "profile", "-t", "cuda,nvtx", "-o", db, "--", sys.executable,
                          os.path.join(HERE, "torch_step.py"), "nvtx"],
                         capture_output=True, text=True, timeout=400)
    print(run.stdout[-2000:], run.stderr[-4000:], sep="\n")
    if run.returncode != 0:
        print(f"FAIL: lantern profile exited {run.returncode}")
        return 1
    report = subprocess.run([lantern, "kernels", db, "--csv", "-c",
                             "idx,start,seq,dir,layer,mod,op,node,kernel,params,sil,tc,dtype,grid,block,"
                             "occupancy,flops,bytes,tflops,gbps,peak%,hints"],
                            capture_output=True, text=True, timeout=300)
    if report.returncode != 0:
        print(report.stderr)
        return 1
    with open(os.path.join(out_dir, "kernels.csv"), "w") as f:
        f.write(report.stdout)
    rows = list(csv.DictReader(io.StringIO(report.stdout)))
    con = sqlite3.connect(db)
    peak_bf16 = con.execute("SELECT max(peak_bf16_flops) FROM gpus").fetchone()[0]
    # the innermost op marker of each kernel, read with SQL, to recompute FLOPs independently
    markers = dict(con.execute(
        "SELECT k.start_ns, s.value FROM kernels k JOIN ranges r ON r.id = k.nvtx_range_id"
        " JOIN strings s ON s.id = r.name_id"))
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    kernels = [r for r in rows if not r["kernel"].startswith(("memcpy", "memset"))]
    step = [r for r in kernels if r["layer"].startswith("step") or r["dir"] in ("bwd", "opt")]
    gemms = [r for r in kernels if r["op"] in ("mm", "bmm", "addmm", "baddbmm") and
             r["flops"] not in ("0", "na")]
    expect(len(gemms) >= 10, f"GEMM rows with FLOPs: {len(gemms)}")
    checked = 0
    for r in gemms:
        marker = markers.get(int(r["start"]), "")
        sizes = sizes_of(marker)
        if sizes is None or not marker.startswith("aten::" + r["op"] + ","):
            continue
        want = gemm_flops(r["op"], sizes)
        expect(int(r["flops"]) == want, f"{r['op']} {r['params']}: flops {r['flops']} != {want}")
        expect(r["tc"] == "yes", f"bf16 GEMM {r['kernel']} not on Tensor Cores (tc={r['tc']})")
        tflops = float(r["tflops"])
        if want >= 1e9:
            expect(1 < tflops * 1e12 <= peak_bf16 * 1.02,
                   f"{r['kernel']}: {tflops} TFLOP/s against a peak of {peak_bf16 / 1e12:.0f}")
        checked += 1
    expect(checked == len(gemms), f"recomputed {checked} of {len(gemms)} GEMMs")
    bwd = [r for r in kernels if r["dir"] == "bwd"]
    expect(len(bwd) > 0 and all(r["node"] != "na" for r in bwd), "backward rows carry their node")
    matched = [r for r in bwd if r["layer"].startswith("step/")]
    expect(len(matched) >= len(bwd) * 0.8,
           f"backward rows matched to a forward layer: {len(matched)} of {len(bwd)}")
    big = sorted(gemms, key=lambda r: -int(r["flops"]))[:5]
    for r in big:
        print("big GEMM:", r["dir"], r["layer"], r["op"], r["params"], r["kernel"][:60],
              r["tflops"], "TFLOP/s", r["peak%"], "% of peak")

    prof = subprocess.run([sys.executable, os.path.join(HERE, "torch_step.py"), "profiler"],
                          capture_output=True, text=True, timeout=300)
    if prof.returncode != 0:
        print(prof.stderr[-3000:])
        expect(False, "torch.profiler run failed")
    else:
        torch_kernels = json.loads(prof.stdout.strip().splitlines()[-1])["kernels"]
        print(f"kernels in the step: lantern {len(step)}, torch.profiler {torch_kernels}")
        expect(len(step) == torch_kernels,
               f"kernel count {len(step)} != torch.profiler's {torch_kernels}")
    print(f"{len(kernels)} kernels, {len(gemms)} GEMMs checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
