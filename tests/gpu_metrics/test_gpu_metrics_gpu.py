#!/usr/bin/env python3
"""GPU test of `lantern profile --gpu-metrics` (CUPTI PM sampling from the launcher): runs
programs whose hardware behaviour is known under the real launcher and checks the recorded
samples against the kernels CUPTI recorded in the same run (their times are the independent
truth for alignment; what each kernel must do to the counters follows from what it is):

  tutorial  examples/cuda_normalize, the Nsight Systems tutorial's program: the one-chunk
            partial reduction keeps the SMs' warps busy; the tutorial's single-thread final
            reduction leaves the SMs idle and warp occupancy near zero; Tensor Cores idle
  torch     a bf16 GEMM loop (Tensor Cores > 50 %, SMs > 80 %), an fp32 add loop (Tensor
            Cores ~0, DRAM > 50 % of peak), a ~20 ms single-thread spin alone on the GPU whose
            graphics-engine plateau lines up with the kernel within one sample period; the
            same kernels, by name and count, as a run without --gpu-metrics

Usage: test_gpu_metrics.py tutorial|torch. Exits 77, saying why, without a GPU (or, for
torch, without PyTorch)."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from test_cuda_gpu import gpu_missing_reason  # noqa: E402 (the one check of a usable GPU)
failures = []


def expect(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def profile(db, command, metrics=True):
    lantern = os.path.join(os.environ["LANTERN_BUILD"], "bin", "lantern")
    cmd = [lantern, "profile", "-f", "-t", "cuda,nvtx", "-o", db]
    if metrics:
        cmd.append("--gpu-metrics")
    run = subprocess.run(cmd + ["--"] + command, capture_output=True, text=True, timeout=600)
    print(" ".join(cmd + command), "->", run.returncode, run.stderr.strip()[-2000:], sep="\n")
    if run.returncode != 0:
        print("FAIL: the profiled command failed")
        sys.exit(1)
    return sqlite3.connect(db), run.stdout


def kernels(db, like):
    return db.execute(
        "SELECT k.start_ns, k.end_ns FROM kernels k LEFT JOIN strings n ON n.id = k.name_id"
        " LEFT JOIN strings d ON d.id = k.demangled_id WHERE COALESCE(d.value, n.value) LIKE ?"
        " ORDER BY k.start_ns", (like,)).fetchall()


def samples(db, column):
    return db.execute(f"SELECT start_ns, end_ns, {column} FROM gpu_metric_samples"
                      f" WHERE {column} IS NOT NULL ORDER BY start_ns").fetchall()


def weighted(sample_rows, intervals):
    """The metric averaged over the intervals, each sample weighted by its overlap."""
    total = acc = 0.0
    i = 0
    for a, b in intervals:
        while i < len(sample_rows) and sample_rows[i][1] <= a:
            i += 1
        j = i
        while j < len(sample_rows) and sample_rows[j][0] < b:
            s, e, v = sample_rows[j]
            o = min(b, e) - max(a, s)
            if o > 0:
                total += o
                acc += o * v
            j += 1
    return acc / total if total else float("nan")


def check_set(db):
    sets = db.execute("SELECT source, period_ns, metrics, samples, lost_samples"
                      " FROM gpu_metric_sets").fetchall()
    status = db.execute("SELECT source, code, reason FROM gpu_metric_status").fetchall()
    print("sets:", sets, "\nstatus:", status)
    expect(len(sets) >= 1 and sets[0][0] == "CUPTI PM sampling", "sampled by CUPTI PM sampling")
    if not sets:
        sys.exit(1)
    source, period, metrics, n, lost = sets[0]
    expect(n and n > 0, f"{n} samples written")
    expect(lost is not None and lost <= 0.1 * (n + lost), f"{lost} samples lost of {n + (lost or 0)} (<= 10 %)")
    return period


def tutorial(tmp):
    normalize = os.environ["LANTERN_NORMALIZE"]
    if not os.access(normalize, os.X_OK):
        print(f"SKIP: {normalize} was not built (no nvcc where Lantern was built)")
        sys.exit(SKIP)
    db, _ = profile(os.path.join(tmp, "reduce.db"),
                    [normalize, "--elements", str(805306368), "--chunks", "1", "--pinned"])
    check_set(db)
    reduce_ = kernels(db, "chunk_min_max%")
    occupancy = weighted(samples(db, "warp_occupancy"), reduce_)
    print("partial reduce:", reduce_, f"occupancy {occupancy:.1f} %")
    expect(reduce_ and occupancy > 50, f"the partial reduction's warp occupancy {occupancy:.1f} % > 50 %")
    tensor = max(v for _, _, v in samples(db, "tensor_active"))
    expect(tensor < 1, f"Tensor Cores idle throughout: max {tensor:.2f} % < 1 %")

    db, _ = profile(os.path.join(tmp, "single.db"),
                    [normalize, "--chunks", "256", "--single-thread"])
    check_set(db)
    single = kernels(db, "final_min_max%")
    length = sum(b - a for a, b in single) / 1e6
    sm = weighted(samples(db, "sm_active"), single)
    occ = weighted(samples(db, "warp_occupancy"), single)
    gr = weighted(samples(db, "gr_active"), single)
    print(f"single-thread final reduction: {length:.2f} ms, sm_active {sm:.2f} %, warp_occupancy"
          f" {occ:.3f} %, gr_active {gr:.1f} %")
    expect(length > 0.5, f"the single-thread kernel ran {length:.2f} ms (> 0.5 ms: several samples)")
    expect(sm < 5, f"SMs nearly idle while the single thread runs: {sm:.2f} % < 5 %")
    expect(occ < 2, f"warp occupancy near zero while it runs: {occ:.3f} % < 2 %")
    expect(gr > 50, f"yet the GPU is busy (graphics engine active {gr:.1f} % > 50 %)")


def torch_phases(tmp):
    try:
        import torch  # noqa: F401 (the workload needs it)
    except ImportError:
        print("SKIP: PyTorch is not installed")
        sys.exit(SKIP)
    workload = [sys.executable, os.path.join(HERE, "metrics_workload.py"), "0.6"]
    db, out = profile(os.path.join(tmp, "torch.db"), workload)
    period = check_set(db)
    print(out.strip())
    gemm = kernels(db, "%gemm%") + kernels(db, "nvjet%") + kernels(db, "%xmma%")
    gemm.sort()
    tensor = weighted(samples(db, "tensor_active"), gemm)
    sm = weighted(samples(db, "sm_active"), gemm)
    print(f"bf16 GEMM: {len(gemm)} kernels, tensor_active {tensor:.1f} %, sm_active {sm:.1f} %")
    expect(len(gemm) > 50, f"{len(gemm)} GEMM kernels recorded")
    expect(tensor > 50, f"bf16 GEMM: Tensor Cores active {tensor:.1f} % > 50 %")
    expect(sm > 80, f"bf16 GEMM: SMs active {sm:.1f} % > 80 %")
    add = kernels(db, "%elementwise%")
    t_add = weighted(samples(db, "tensor_active"), add)
    dram = weighted(samples(db, "dram_bw"), add)
    print(f"fp32 add: {len(add)} kernels, tensor_active {t_add:.2f} %, dram_bw {dram:.1f} %")
    expect(len(add) > 50, f"{len(add)} elementwise kernels recorded")
    expect(t_add < 1, f"fp32 add: Tensor Cores {t_add:.2f} % < 1 %")
    expect(dram > 50, f"fp32 add: DRAM bandwidth {dram:.1f} % of peak > 50 %")

    spin = kernels(db, "%spin%")
    expect(len(spin) == 1, f"one spin kernel ({len(spin)})")
    if spin:
        a, b = spin[0]
        others = db.execute("SELECT count(*) FROM kernels WHERE start_ns < ? AND end_ns > ?"
                            " AND NOT (start_ns = ? AND end_ns = ?)", (b, a, a, b)).fetchone()[0]
        rows = [r for r in samples(db, "gr_active") if r[1] > a - 5 * period and r[0] < b + 5 * period]
        busy = [r for r in rows if r[2] > 50]
        start_off = (busy[0][0] - a) if busy else None
        end_off = (busy[-1][1] - b) if busy else None
        print(f"spin kernel {(b - a) / 1e6:.2f} ms; plateau starts {start_off} ns after it,"
              f" ends {end_off} ns after it; period {period} ns")
        expect(b - a >= 5e6, f"the spin kernel ran {(b - a) / 1e6:.2f} ms >= 5 ms")
        expect(others == 0, "it ran alone")

        def sampled(t):  # whether a sample covers t (lost samples leave gaps, counted)
            return any(s <= t < e for s, e, _ in rows)

        # each edge is checked where samples exist around it: a plateau edge inside a gap of
        # lost samples says nothing about alignment
        edges = [(a, start_off, "starts"), (b, end_off, "ends")]
        for t, off, what in edges:
            if not (sampled(t - period) and sampled(t + period)):
                print(f"(its plateau {what} in a gap of lost samples: not checked)")
                continue
            expect(busy and abs(off) <= period,
                   f"its metric plateau {what} within one sample period of it ({off} ns)")

    plain, _ = profile(os.path.join(tmp, "plain.db"), workload, metrics=False)
    count_sql = ("SELECT COALESCE(d.value, n.value), count(*) FROM kernels k"
                 " LEFT JOIN strings n ON n.id = k.name_id LEFT JOIN strings d"
                 " ON d.id = k.demangled_id GROUP BY 1")
    with_metrics = dict(db.execute(count_sql).fetchall())
    without = dict(plain.execute(count_sql).fetchall())
    # the loops run for a time, so their counts differ; the other kernels must not
    fixed = {k: v for k, v in without.items() if v < 8}
    expect(all(with_metrics.get(k) == v for k, v in fixed.items()) and
           set(with_metrics) == set(without),
           "the same kernels with and without --gpu-metrics (names; counts of the fixed ones)")


def main():
    reason = gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        {"tutorial": tutorial, "torch": torch_phases}[sys.argv[1]](tmp)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
