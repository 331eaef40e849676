#!/usr/bin/env python3
"""GPU test of the Perfetto export (label "gpu"): profiles examples/torch_train under
`lantern profile -t cuda,nvtx` (NVML on where it works), exports Perfetto's protobuf and the
Chrome JSON, decodes the protobuf with the `perfetto` package's definitions (perfetto_check.py)
and checks it against the database: every kernel, copy and set on a GPU stream track with its
name and times, every CUDA API call, a flow from each launching call to its GPU work, the NVTX
phases, the NVML power counter, the process named train.py. Prints sizes and export times
(docs/benchmarks.md, "Export"). Plain Python (the GPU machine has no pytest); exits 77,
saying why, without a GPU, PyTorch or the perfetto package."""
import collections
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SKIP = 77


def skip_reason():
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    try:
        import torch
        if not torch.cuda.is_available():
            return "PyTorch sees no CUDA device"
    except ImportError:
        return "no PyTorch"
    try:
        sys.path.insert(0, HERE)
        import perfetto_check  # noqa: F401
    except ImportError as e:
        return f"no perfetto/protobuf Python package ({e}); carry their wheels in .whl/"
    return None


def main():
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    build = os.environ.get("LANTERN_BUILD", os.path.join(SOURCE, "build"))
    lantern = os.path.join(build, "bin", "lantern")
    with tempfile.TemporaryDirectory() as tmp:
        db_path = os.path.join(tmp, "train.db")
        r = subprocess.run([lantern, "profile", "-t", "cuda,nvtx", "-o", db_path, "--", sys.executable,
                            os.path.join(SOURCE, "examples", "torch_train", "train.py"), "--steps", "60"],
                           capture_output=True, text=True, timeout=600)
        print(r.stdout.strip(), r.stderr.strip(), sep="\n")
        if r.returncode != 0:
            print("FAIL: lantern profile exited", r.returncode)
            return 1
        return check_session(lantern, db_path, tmp, steps=60)


def check_session(lantern, db_path, tmp, steps):
    """Exports db_path both ways and checks the Perfetto file against it; 0 or 1."""
    import perfetto_check
    failures = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    times, sizes = {}, {}
    for fmt, ext in (("chrome", "json"), ("perfetto", "perfetto-trace")):
        out = os.path.join(tmp, f"train.{ext}")
        t0 = time.perf_counter()
        r = subprocess.run([lantern, "export", db_path, "--format", fmt, "-o", out],
                           capture_output=True, text=True)
        times[fmt] = time.perf_counter() - t0
        expect(r.returncode == 0, f"export --format {fmt}: {r.stderr.strip()}")
        sizes[fmt] = os.path.getsize(out)
    d = perfetto_check.decode(os.path.join(tmp, "train.perfetto-trace"))
    db = sqlite3.connect(db_path)
    expect(d.problems == [], f"decoded cleanly ({d.problems[:5]})")
    kernels = collections.Counter(db.execute(
        "SELECT s.value, k.start_ns, k.end_ns FROM kernels k JOIN strings s"
        " ON s.id = coalesce(k.demangled_id, k.name_id)"))
    got = collections.Counter((s["name"], s["ts"], s["end"]) for s in d.slices if s["category"] == ["kernel"])
    expect(got == kernels and len(kernels) > 100, f"{sum(got.values())} kernel slices = {sum(kernels.values())} kernels")
    ops = db.execute("SELECT (SELECT count(*) FROM kernels) + (SELECT count(*) FROM memcpys)"
                     " + (SELECT count(*) FROM memsets)").fetchone()[0]
    on_gpu = [s for s in d.slices if s["category"] in (["kernel"], ["memcpy"], ["memset"])]
    expect(len(on_gpu) == ops, f"{len(on_gpu)} GPU slices = {ops} kernels, copies and sets")
    api = db.execute("SELECT count(*) FROM cuda_api").fetchone()[0]
    expect(sum(s["category"] == ["cuda_api"] for s in d.slices) == api, f"{api} CUDA API slices")
    linked = db.execute("SELECT (SELECT count(*) FROM kernels WHERE api_id IS NOT NULL) +"
                        " (SELECT count(*) FROM memcpys WHERE api_id IS NOT NULL) +"
                        " (SELECT count(*) FROM memsets WHERE api_id IS NOT NULL)").fetchone()[0]
    flows = perfetto_check.flows(d)
    good = sum(1 for start, end in flows.values() if start and start["category"] == ["cuda_api"]
               and start["ts"] <= end["ts"] and start["args"]["correlation"] == end["args"]["correlation"])
    expect(good == linked and linked > 100, f"{good} flows launch -> GPU work = {linked} launched ops")
    step_slices = sum(1 for s in d.slices if s["name"] == "step")
    expect(step_slices == steps, f"{step_slices} NVTX 'step' slices")
    power = db.execute("SELECT count(*) FROM gpu_samples WHERE power_mw IS NOT NULL").fetchone()[0]
    counters = {d.track_name(u): v for u, v in d.counters.items()}
    expect(len(counters.get("Power (W)", [])) == power and (power > 0 or "nvml" not in
           db.execute("SELECT value FROM meta WHERE key = 'trace'").fetchone()[0]),
           f"{len(counters.get('Power (W)', []))} power samples = {power} in the database")
    names = {t.process.process_name for t in d.tracks.values() if t.HasField("process")}
    expect("train.py" in names, f"process named from its script: {names}")
    events = sum(2 for _ in d.slices) + len(d.instants) + sum(map(len, d.counters.values()))
    print(f"sizes: chrome {sizes['chrome']} B, perfetto {sizes['perfetto']} B "
          f"(x{sizes['chrome'] / sizes['perfetto']:.1f}); {events} Perfetto events; export wall time: "
          f"chrome {times['chrome']:.3f} s, perfetto {times['perfetto']:.3f} s "
          f"({events / times['perfetto'] / 1e6:.2f} M events/s)")
    expect(sizes["chrome"] >= 5 * sizes["perfetto"], "at least 5x smaller than the Chrome JSON")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
