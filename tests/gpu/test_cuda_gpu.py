#!/usr/bin/env python3
"""GPU test of CUDA tracing: runs tests/gpu/cuda_workload.cu under the real
`lantern profile -t cuda,nvtx` and checks the database with SQL against what the program
did (kernel counts, grids, copies, streams, CUDA-event timings, NVTX attribution).
Exits 77, saying why, where there is no GPU."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77


def gpu_missing_reason():
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0 or "GPU" not in out.stdout:
            return "nvidia-smi lists no GPU"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi failed: {e}"
    return None


class Checks:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def expect(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAIL: {what}")


def run_workload(build, workload, tmp, options=(), name="gpu"):
    db = os.path.join(tmp, f"{name}.db")
    expected_json = os.path.join(tmp, f"{name}.json")
    cmd = [os.path.join(build, "bin", "lantern"), "profile", "-t", "cuda,nvtx", "-o", db,
           *options, "--", workload, expected_json]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(run.stdout, run.stderr, sep="\n")
    if run.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {run.returncode}")
        sys.exit(1)
    with open(expected_json) as f:
        return sqlite3.connect(db), json.load(f)


def kernels_by_name(db):
    rows = db.execute(
        "SELECT COALESCE(d.value, n.value), k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y,"
        " k.block_z, k.start_ns, k.end_ns, k.api_id, k.nvtx_range_id, k.stream, k.id"
        " FROM kernels k LEFT JOIN strings n ON n.id = k.name_id"
        " LEFT JOIN strings d ON d.id = k.demangled_id ORDER BY k.start_ns").fetchall()
    out = {}
    for r in rows:
        base = r[0].split("(")[0]
        out.setdefault(base, []).append(r)
    return out


def check_kernels(c, db):
    k = kernels_by_name(db)
    c.expect(sorted(k) == ["add_one", "prefill", "scale_3d", "spin"], f"kernel names {sorted(k)}")
    c.expect(len(k.get("add_one", [])) == 5, "5 add_one kernels")
    c.expect(len(k.get("scale_3d", [])) == 3, "3 scale_3d kernels")
    c.expect(len(k.get("spin", [])) == 5, "5 spin kernels (one warm-up)")
    c.expect(len(k.get("prefill", [])) == 5, "5 prefill kernels (one warm-up)")
    for r in k.get("add_one", []):
        c.expect(r[1:7] == (64, 1, 1, 128, 1, 1), f"add_one grid/block {r[1:7]}")
    for r in k.get("scale_3d", []):
        c.expect(r[1:7] == (8, 4, 2, 32, 4, 1), f"scale_3d grid/block {r[1:7]}")
    for r in k.get("spin", []) + k.get("prefill", []):
        c.expect(r[1:7] == (1, 1, 1, 32, 1, 1), f"spin grid/block {r[1:7]}")
    return k


def check_copies(c, db):
    rows = db.execute("SELECT copy_kind, bytes, src_kind, dst_kind FROM memcpys ORDER BY start_ns").fetchall()
    mb = 1 << 20
    expected = [("HtoD", mb, "pageable", "device"), ("HtoD", 2 * mb, "pinned", "device"),
                ("DtoH", 2 * mb, "device", "pinned"), ("DtoH", mb, "device", "pageable")]
    c.expect(rows == expected, f"memcpys {rows}")
    sets = db.execute("SELECT bytes, value, mem_kind FROM memsets").fetchall()
    c.expect(sets == [(4 * mb, 0, "device")], f"memsets {sets}")


def check_streams(c, db):
    used = db.execute("SELECT count(*) FROM (SELECT DISTINCT context, stream FROM kernels"
                      " UNION SELECT DISTINCT context, stream FROM memcpys)").fetchone()[0]
    c.expect(used == 3, f"3 streams did work, saw {used}")
    rows = db.execute("SELECT count(*) FROM cuda_streams s WHERE EXISTS (SELECT 1 FROM kernels k"
                      " WHERE k.stream = s.stream AND k.context = s.context)").fetchone()[0]
    c.expect(rows == 3, f"cuda_streams rows for the 3 kernel streams, saw {rows}")
    named = db.execute("SELECT count(*) FROM memcpys m JOIN cuda_streams s ON s.process_id = m.process_id"
                       " AND s.context = m.context AND s.stream = m.stream JOIN strings n ON n.id = s.name_id"
                       " WHERE n.value = 'copy stream'").fetchone()[0]
    c.expect(named == 2, f"the 2 pinned copies ran on the stream NVTX named 'copy stream', saw {named}")


def check_durations(c, k, expected):
    spins = k.get("spin", [])[1:]   # after the warm-up launch
    for r, event_ms in zip(spins, expected["spin_event_ms"]):
        ms = (r[8] - r[7]) / 1e6
        c.expect(abs(ms - event_ms) <= 0.02 * event_ms,
                 f"spin kernel {ms:.4f} ms within 2% of CUDA events' {event_ms:.4f} ms")


def check_windows(c, db, k):
    """Each kernel runs after its launch call starts and ends before the next sync returns."""
    syncs = db.execute("SELECT a.start_ns, a.end_ns FROM cuda_api a JOIN strings s ON s.id = a.name_id"
                       " WHERE s.value LIKE '%Synchronize%' ORDER BY a.start_ns").fetchall()
    for rows in k.values():
        for r in rows:
            api = db.execute("SELECT start_ns FROM cuda_api WHERE id = ?", (r[9],)).fetchone()
            c.expect(api is not None, f"kernel {r[12]} has its launch call")
            if api is None:
                continue
            c.expect(api[0] <= r[7], f"kernel {r[12]}: launch start {api[0]} <= kernel start {r[7]}")
            following = [s for s in syncs if s[0] >= api[0]]
            c.expect(bool(following) and r[8] <= following[0][1],
                     f"kernel {r[12]} ends {r[8]} before the next sync ends")
    waits = db.execute("SELECT start_ns, end_ns FROM cuda_syncs ORDER BY start_ns").fetchall()
    runtime_calls = set(db.execute("SELECT start_ns, end_ns FROM cuda_api WHERE api = 0").fetchall())
    runtime_syncs = [s for s in syncs if s in runtime_calls]
    c.expect(bool(waits) and waits == runtime_syncs,
             f"one wait per runtime synchronize call: {len(waits)} waits, {len(runtime_syncs)} calls")


def check_attribution(c, db, k):
    def range_name(range_id):
        row = db.execute("SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id"
                         " WHERE r.id = ?", (range_id,)).fetchone()
        return row[0] if row else None
    want = {"add_one": "add", "scale_3d": "small kernels", "spin": "spin", "prefill": "spin"}
    for name, rows in k.items():
        for r in rows:
            got = range_name(r[10])
            c.expect(got == want.get(name), f"{name} kernel attributed to {got!r}, want {want.get(name)!r}")
    parent = db.execute("SELECT p.name_id = (SELECT id FROM strings WHERE value = 'small kernels')"
                        " FROM ranges r JOIN ranges p ON p.id = r.parent_id"
                        " WHERE r.name_id = (SELECT id FROM strings WHERE value = 'add') LIMIT 1").fetchone()
    c.expect(parent == (1,), "'add' ranges nest in 'small kernels'")
    copies = db.execute("SELECT count(*) FROM memcpys m JOIN ranges r ON r.id = m.nvtx_range_id"
                        " JOIN strings s ON s.id = r.name_id WHERE s.value = 'copies'").fetchone()[0]
    c.expect(copies == 4, f"4 copies attributed to 'copies', saw {copies}")


def check_devices(c, db):
    gpus = db.execute("SELECT uuid, name, sm_count, cc_major, peak_fp32_flops, peak_dram_bytes_per_s"
                      " FROM gpus").fetchall()
    print("gpus:", gpus)
    c.expect(len(gpus) >= 1 and all(g[0].startswith("GPU-") and g[2] > 0 for g in gpus), "gpus rows")
    nulls = db.execute("SELECT count(*) FROM kernels WHERE gpu_id IS NULL").fetchone()[0]
    c.expect(nulls == 0, f"every kernel has a gpu_id ({nulls} without)")


def check_capture_ranges(c, build, workload, tmp):
    """--capture-range keeps the CUDA work launched inside the window, and only that; with
    cudaProfilerApi the agent records nothing outside it."""
    for option, want in (("--capture-range=cudaProfilerApi", {"add_one": 5, "scale_3d": 3}),
                         ("--capture-range=nvtx:spin", {"spin": 5, "prefill": 5})):
        db, _ = run_workload(build, workload, tmp, [option], name=option.split("=")[1].replace(":", "_"))
        got = {name: len(rows) for name, rows in kernels_by_name(db).items()}
        c.expect(got == want, f"{option}: kernels {got}, want {want}")
        copies = db.execute("SELECT count(*) FROM memcpys").fetchone()[0]
        c.expect(copies == 0, f"{option}: no copies (all outside), saw {copies}")
        # cudaProfilerApi pauses CUPTI outside its window, so nothing is recorded there; an
        # NVTX range filters at import what was recorded outside (4 copies, 1 set, 8 kernels).
        outside = db.execute("SELECT value FROM meta WHERE key = 'cuda_gpu_ops_outside_capture'").fetchone()
        want_outside = 0 if "cudaProfilerApi" in option else 13
        c.expect(outside == (want_outside,), f"{option}: GPU operations outside {outside}, want {want_outside}")


def check_no_api(c, build, workload, tmp):
    """--cuda-api=none still records all the GPU work, with the same timings, and no call."""
    db, expected = run_workload(build, workload, tmp, ["--cuda-api=none"], name="no_api")
    k = kernels_by_name(db)
    got = {name: len(rows) for name, rows in k.items()}
    want = {"add_one": 5, "scale_3d": 3, "spin": 5, "prefill": 5}
    c.expect(got == want, f"--cuda-api=none: kernels {got}, want {want}")
    copies = db.execute("SELECT count(*) FROM memcpys").fetchone()[0]
    c.expect(copies == 4, f"--cuda-api=none: 4 copies, saw {copies}")
    calls = db.execute("SELECT count(*) FROM cuda_api").fetchone()[0]
    c.expect(calls == 0, f"--cuda-api=none: no API calls, saw {calls}")
    check_durations(c, k, expected)


def main():
    reason = gpu_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    build = os.environ.get("LANTERN_BUILD", "build")
    workload = os.environ.get("LANTERN_CUDA_WORKLOAD", os.path.join(build, "bin", "cuda_workload"))
    c = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        db, expected = run_workload(build, workload, tmp)
        k = check_kernels(c, db)
        check_copies(c, db)
        check_streams(c, db)
        check_durations(c, k, expected)
        check_windows(c, db, k)
        check_attribution(c, db, k)
        check_devices(c, db)
        check_capture_ranges(c, build, workload, tmp)
        check_no_api(c, build, workload, tmp)
        for table in ("kernels", "memcpys", "memsets", "cuda_api", "cuda_syncs", "cuda_memory",
                      "cuda_streams", "cupti_overhead"):
            print(table, db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        print("dropped", db.execute("SELECT sum(dropped_events), sum(cuda_rejected_records) FROM processes").fetchone())
    print(f"{c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
