#!/usr/bin/env python3
"""GPU test of many ranks (issue 18), on a machine with 2 or more GPUs: a 2-rank
data-parallel PyTorch job (tests/gpu_ranks/ddp_train.py, NCCL all-reduce of the gradients)

  job      under one `lantern profile` around torchrun, with rank 1 made late before each
           step: the straggler rule names rank 1, energy_sum has each rank's GPU, and each
           rank's kernels inside its "train" range equal what torch.profiler counted in the
           same job run without Lantern (by name and number)
  ranks    `lantern profile -o run-%r.db` inside each rank (torchrun --no-python), then
           `lantern merge`: both ranks, one database
  busbw    all-reduce bus bandwidth per size from nccl_sum against the same run's own
           nccl-tests-style measurement (tests/gpu_ranks/allreduce_bench.py: CUDA events around
           back-to-back all-reduces): within 10 %

NVLink multicast stays off (NCCL_NVLS_ENABLE=0 ...). Exits 77, saying why, with fewer than 2
GPUs or without PyTorch."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("LANTERN_BUILD", "build")
LANTERN = os.path.join(BUILD, "bin", "lantern")
ENV = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
           NVSHMEM_DISABLE_NVLS="1", OMP_NUM_THREADS="1")
STEPS, SLOW_MS = 20, 30
failures = []


def expect(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def run(cmd, cwd=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV, cwd=cwd,
                       timeout=600)
    print("$", " ".join(str(c) for c in cmd), f"-> {r.returncode}", r.stderr.strip()[-1500:],
          sep="\n", flush=True)
    if r.returncode != 0:
        print("FAIL: the command failed")
        sys.exit(1)
    return r.stdout


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
            "--master-port=29517", *args]


def kernels_in_train(db, process_id):
    """The process's kernels inside its NVTX range "train", by name."""
    a, b = db.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s ON s.id = r.name_id"
                      " WHERE s.value = 'train' AND r.process_id = ?", (process_id,)).fetchone()
    rows = db.execute("SELECT COALESCE(d.value, n.value), count(*) FROM kernels k"
                      " LEFT JOIN strings n ON n.id = k.name_id LEFT JOIN strings d"
                      " ON d.id = k.demangled_id JOIN cuda_api c ON c.id = k.api_id"
                      " WHERE k.process_id = ? AND c.start_ns >= ? AND c.start_ns <= ?"
                      " GROUP BY 1", (process_id, a, b)).fetchall()
    return dict(rows)


def job(tmp):
    train = os.path.join(HERE, "ddp_train.py")
    late = ["--steps", STEPS, "--slow-rank", 1, "--slow-ms", SLOW_MS]
    db_path = os.path.join(tmp, "job.db")
    run([LANTERN, "profile", "-f", "-t", "cuda,nvtx,nvml", "-o", db_path, "--",
         *torchrun(train, *late)])
    db = sqlite3.connect(db_path)
    ranks = dict(db.execute("SELECT rank, id FROM processes WHERE rank IS NOT NULL"
                            " AND id IN (SELECT process_id FROM kernels)").fetchall())
    expect(sorted(ranks) == [0, 1], f"both ranks recorded with their GPU work: {sorted(ranks)}")

    doc = json.loads(run([LANTERN, "analyze", db_path, "--rule", "stragglers", "--format", "json"]))
    rule = {r["name"]: r for r in doc["analysis"]["rules"]}["stragglers"]
    print("stragglers:", rule.get("note"), [f["summary"] for f in rule.get("findings", [])])
    findings = rule.get("findings", [])
    expect(len(findings) == 1 and findings[0]["summary"].startswith("rank 1 "),
           "the straggler rule names rank 1, the late one")

    energy = json.loads(run([LANTERN, "stats", db_path, "--report", "energy_sum", "--format",
                             "json"]))["rows"]
    per_rank = [r for r in energy if r.get("scope") == "process" and "rank" in str(r.get("name", ""))]
    print("energy rows:", per_rank)
    expect(len(per_rank) >= 2 and all((r.get("energy_j") or 0) > 0 for r in per_rank),
           "energy_sum gives each rank's energy on its GPU")

    truth_dir = os.path.join(tmp, "truth")
    os.mkdir(truth_dir)
    run(torchrun(train, *late, "--torch-profiler", truth_dir))
    for rank, pid in sorted(ranks.items()):
        with open(os.path.join(truth_dir, f"rank{rank}.json")) as f:
            truth = json.load(f)["kernels"]
        got = kernels_in_train(db, pid)
        print(f"rank {rank}: lantern {sum(got.values())} kernels, torch.profiler"
              f" {sum(truth.values())}")
        nccl = (sum(v for k, v in got.items() if "nccl" in k.lower()),
                sum(v for k, v in truth.items() if "nccl" in k.lower()))
        print(f"  NCCL kernels: lantern {nccl[0]}, torch.profiler {nccl[1]}")
        if sum(got.values()) != sum(truth.values()):
            print("  by name (lantern):", sorted(got.items()))
            print("  by name (torch.profiler):", sorted(truth.items()))
        expect(sum(got.values()) == sum(truth.values()) and nccl[0] == nccl[1] > 0,
               f"rank {rank}: the kernels of its steps equal torch.profiler's in number "
               f"({sum(got.values())} vs {sum(truth.values())}; NCCL {nccl[0]} vs {nccl[1]})")


def ranks(tmp):
    train = os.path.join(HERE, "ddp_train.py")
    run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
         "--master-port=29518", "--no-python", os.path.abspath(LANTERN), "profile", "-f",
         "-t", "cuda,nvtx", "-o", "run-%r.db", "--", sys.executable, train, "--steps", "5"],
        cwd=tmp)
    files = sorted(f for f in os.listdir(tmp) if f.startswith("run-") and f.endswith(".db"))
    expect(files == ["run-0.db", "run-1.db"], f"one database per rank: {files}")
    merged = os.path.join(tmp, "merged.db")
    run([LANTERN, "merge", *(os.path.join(tmp, f) for f in files), "-o", merged])
    db = sqlite3.connect(merged)
    got = db.execute("SELECT p.rank, count(k.id) FROM processes p JOIN kernels k"
                     " ON k.process_id = p.id GROUP BY p.rank ORDER BY p.rank").fetchall()
    print("merged kernels per rank:", got)
    expect([r for r, _ in got] == [0, 1] and all(n > 0 for _, n in got),
           "the merged database has both ranks' kernels")


def busbw(tmp):
    sizes = [64 << 20, 256 << 20]
    db_path = os.path.join(tmp, "ar.db")
    out = run([LANTERN, "profile", "-f", "-t", "cuda,nvtx", "-o", db_path, "--",
               *torchrun(os.path.join(HERE, "allreduce_bench.py"), ",".join(map(str, sizes)))])
    bench = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    rows = json.loads(run([LANTERN, "stats", db_path, "--report", "nccl_sum", "--format",
                           "json"]))["rows"]
    for size in sizes:
        mine = [r for r in rows if r.get("collective") == "AllReduce" and r.get("size_bytes") == size]
        truth = bench[size]["busbw"] / 1e9
        print(f"{size >> 20} MiB: nccl_sum rows {mine}; nccl-tests-style busbw {truth:.1f} GB/s")
        for r in mine:
            avg_bus = r["busbw_gbps"]
            med_bus = size / (r["med_ns"] / 1e9) * 2 * (r["ranks"] - 1) / r["ranks"] / 1e9
            print(f"  {r['process']}: BusBW {avg_bus:.1f} GB/s (mean time), {med_bus:.1f} (median)")
            expect(abs(med_bus - truth) <= 0.1 * truth,
                   f"{size >> 20} MiB all-reduce, {r['process']}: bus bandwidth {med_bus:.1f} GB/s "
                   f"(median kernel time) within 10 % of {truth:.1f} GB/s")
        expect(len(mine) == 2, f"{size >> 20} MiB: an AllReduce row per rank ({len(mine)})")


def main():
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return SKIP
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        print(f"SKIP: {torch.cuda.device_count() if torch.cuda.is_available() else 0} GPU(s); "
              "this test needs 2")
        return SKIP
    parts = sys.argv[1:] or ["job", "ranks", "busbw"]
    with tempfile.TemporaryDirectory() as tmp:
        for part in parts:
            sub = os.path.join(tmp, part)
            os.mkdir(sub)
            {"job": job, "ranks": ranks, "busbw": busbw}[part](sub)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
