#!/usr/bin/env python3
"""Accuracy of Lantern's energy windows on a real GPU (docs/benchmarks.md, "Energy windows").

Part 1, windows: a steady matmul load runs for --seconds (>= 10) while windows of 20, 50, 100,
500 and 2000 ms are opened back to back (all lengths at once: named windows may overlap). The
reference for a window is the run's average power times the window's length, the average power
coming from the energy counter over the whole measured stretch (first to last counter update
seen; two reads, at its ends). Beside Lantern's interpolated energy, the same windows are
measured with Lantern's power-only (pre-Volta) method. (No reader of the benchmark's own polls
the counter meanwhile: in one process, NVML serializes the reads, and a second reader would
delay the monitor's.)

Part 2, profile (with --lantern BIN): `lantern profile -t nvtx,nvml` of idle and loaded phases
in NVTX ranges: idle vs loaded power on the timeline, and the energy of the phases against the
energy of the range enclosing them (they must add up within 1 %). With --replay-tool, windows
are replayed over the load phases from the launcher's samples, beside Zeus's method (the
counter's difference at the edges, from the recorded updates).

Part 3, square wave (with --lantern BIN): `lantern profile -t nvtx,nvml` of a changing load,
40 ms of matmuls then 60 ms idle, repeated for 10 s, each burst an NVTX range. Windows of 50,
100, 200 and 500 ms laid back to back over it are replayed from the launcher's samples
(energy_replay) and compared with a reference built from the bursts' times: the idle and busy
powers, each from the counter over a steady phase of its own, times the idle and busy time in
the window. The reference's own error is stated: its total over the whole square wave against
the counter's (by construction near 0: the bursts' power is fitted to the counter's total
over the square wave, the idle power measured alone).

--load add makes part 1's load an fp32 add (under the power cap, so the reference is sound);
--square-live BUSY_MS:PERIOD_MS runs only the energy windows (lantern.Monitor, live) over a
square wave in this process, against the idle power and the bursts' fitted power.

Prints a table and writes everything to --out (JSON). Needs torch with a CUDA GPU and NVML.
"""

import argparse
import ctypes
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

WINDOW_MS = (20, 50, 100, 500, 2000)


def load_dtype():
    """The matmuls' type (--dtype, handed to the profiled parts through the environment): a
    bf16 load draws the H100's 700 W cap and swings 510-778 W per 100 ms under power capping,
    which no constant reference describes; an fp32 load stays under the cap."""
    import torch
    return getattr(torch, os.environ.get("LANTERN_BENCH_DTYPE", "bfloat16"))


def monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)  # Lantern's clock


def read_counter(nvml, handle):
    value = ctypes.c_ulonglong()
    t0 = monotonic_ns()
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value)) == 0
    return (t0 + monotonic_ns()) // 2, value.value


def load_step():
    """One step of the steady load (--load): a matmul of --dtype, or an fp32 elementwise add
    over 1 GiB arrays, which is DRAM-bound and stays under the power cap (its counter power
    moved 0.4 % per 100 ms on the H200, the bf16 matmul's 4.4 %: at the cap, power capping
    swings the power, and a reference from the average is off by that much)."""
    import torch
    if os.environ.get("LANTERN_BENCH_LOAD") == "add":
        x = torch.randn(1 << 28, device="cuda")
        y = torch.randn(1 << 28, device="cuda")
        return lambda: torch.add(x, y, out=x)
    a = torch.randn(8192, 8192, device="cuda", dtype=load_dtype())
    return lambda: a @ a


def part_windows(seconds):
    import torch
    import lantern
    nvml = ctypes.CDLL(os.environ.get("LANTERN_NVML_LIBRARY") or "libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    handle = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0
    step = load_step()
    warm_end = time.time() + 3
    while time.time() < warm_end:  # reach steady power and clocks first
        step()
    torch.cuda.synchronize()
    counter_mon = lantern.Monitor(gpu_indices=[0], cpu_indices=[])
    power_mon = lantern.Monitor(gpu_indices=[0], cpu_indices=[], power_only=True)
    time.sleep(0.3)  # both monitors have samples and one counter update at least
    # the reference: the counter's average power over the whole stretch, from two reads only
    # (a reader of our own in this process would delay the monitor's reads)
    first = read_counter(nvml, handle)

    results = {ms: [] for ms in WINDOW_MS}
    begun = {}
    t_start = monotonic_ns()
    for ms in WINDOW_MS:
        begun[ms] = monotonic_ns()
        counter_mon.begin_window(f"w{ms}", sync_execution=False)
        power_mon.begin_window(f"w{ms}", sync_execution=False)
    t_stop = t_start + int(seconds * 1e9)
    while True:
        step()  # blocks once the launch queue is full: the GPU never idles
        now = monotonic_ns()
        if now >= t_stop:
            break
        for ms in WINDOW_MS:
            if now - begun[ms] < ms * 1_000_000:
                continue
            m = counter_mon.end_window(f"w{ms}", sync_execution=False)
            p = power_mon.end_window(f"w{ms}", sync_execution=False)
            ended = monotonic_ns()
            results[ms].append((begun[ms], ended, m, p))
            begun[ms] = monotonic_ns()
            counter_mon.begin_window(f"w{ms}", sync_execution=False)
            power_mon.begin_window(f"w{ms}", sync_execution=False)
    last = read_counter(nvml, handle)
    torch.cuda.synchronize()
    t_end = monotonic_ns()
    counter_mon.close()
    power_mon.close()

    ref_w = (last[1] - first[1]) / 1e3 / ((last[0] - first[0]) / 1e9)
    summary = {"seconds": (t_end - t_start) / 1e9, "reference_w": ref_w, "windows": {}}
    for ms, rows in results.items():
        lantern_err, power_err, bounds, short, ups = [], [], [], 0, []
        for begin_ns, end_ns, m, p in rows:
            ref = ref_w * m.time
            lantern_err.append(abs(m.gpu_energy[0] - ref) / ref * 100)
            power_err.append(abs(p.gpu_energy[0] - ref) / ref * 100)
            bounds.append(m.gpu_energy_error[0] / ref * 100)
            short += bool(m.too_short)
            ups.append(m.gpu_counter_updates[0])
        summary["windows"][ms] = {"n": len(rows), "lantern": error_stats(lantern_err),
                                  "power_only": error_stats(power_err),
                                  "bound_mean_pct": statistics.mean(bounds),
                                  "flagged_too_short": short,
                                  "counter_updates_mean": statistics.mean(ups)}
    return summary


def part_square_live(busy_ms, period_ms, seconds):
    """The energy windows (lantern.Monitor) over a square wave: busy_ms of bf16 matmuls, then
    idle, every period_ms. Reference: idle power from the counter over 2 s of idle, and the
    bursts' power fitted so that the reference's total over the square wave equals the
    counter's (two reads at its ends); then each window's reference is idle power x its idle
    time + burst power x its busy time, the busy times taken from the bursts' own clock."""
    import torch
    import lantern
    nvml = ctypes.CDLL(os.environ.get("LANTERN_NVML_LIBRARY") or "libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    handle = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    idle0 = read_counter(nvml, handle)
    time.sleep(2.0)
    idle1 = read_counter(nvml, handle)
    p_idle = (idle1[1] - idle0[1]) / 1e3 / ((idle1[0] - idle0[0]) / 1e9)
    mon = lantern.Monitor(gpu_indices=[0], cpu_indices=[])
    time.sleep(0.3)
    lengths = (50, 100, 200, 500)
    bursts, windows = [], {ms: [] for ms in lengths}
    first = read_counter(nvml, handle)
    t = monotonic_ns()
    begun = {}
    for ms in lengths:
        begun[ms] = t
        mon.begin_window(f"w{ms}", sync_execution=False)
    stop = t + int(seconds * 1e9)

    def roll(now):
        for ms in lengths:
            if now - begun[ms] >= ms * 1_000_000:
                m = mon.end_window(f"w{ms}", sync_execution=False)
                end = monotonic_ns()
                windows[ms].append((begun[ms], end, m))
                begun[ms] = end
                mon.begin_window(f"w{ms}", sync_execution=False)

    while t < stop:
        b0 = monotonic_ns()
        while monotonic_ns() < t + busy_ms * 1_000_000:
            a @ a
            torch.cuda.synchronize()
            roll(monotonic_ns())
        bursts.append((b0, monotonic_ns()))
        t += period_ms * 1_000_000
        while monotonic_ns() < t:
            time.sleep(0.001)
            roll(monotonic_ns())
    last = read_counter(nvml, handle)
    mon.close()
    busy_ns = sum(max(0, min(last[0], e) - max(first[0], b)) for b, e in bursts)
    total_j = (last[1] - first[1]) / 1e3
    p_busy = (total_j - p_idle * (last[0] - first[0] - busy_ns) / 1e9) / (busy_ns / 1e9)
    out = {"busy_ms": busy_ms, "period_ms": period_ms, "idle_w": p_idle, "busy_w": p_busy,
           "windows": {}}
    for ms, rows in windows.items():
        errs, bounds = [], []
        for b, e, m in rows[1:]:
            busy = sum(max(0, min(e, y) - max(b, x)) for x, y in bursts)
            ref = (p_busy * busy + p_idle * (e - b - busy)) / 1e9
            errs.append(abs(m.gpu_energy[0] - ref) / ref * 100)
            bounds.append(m.gpu_energy_error[0] / ref * 100)
        covered = sum(1 for x, bd in zip(errs, bounds) if x <= bd)
        out["windows"][ms] = {"n": len(errs), "lantern": error_stats(errs),
                              "bound_mean_pct": statistics.mean(bounds),
                              "within_bound_pct": 100 * covered / len(errs)}
    return out


def phases_program():
    """Run under `lantern profile`: idle and loaded phases in NVTX ranges inside 'all'."""
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=load_dtype())
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("all")
    for name, seconds in (("idle1", 1.5), ("load1", 2.5), ("idle2", 1.5), ("load2", 2.0)):
        torch.cuda.nvtx.range_push(name)
        end = time.time() + seconds
        if name.startswith("load"):
            while time.time() < end:
                a @ a
            torch.cuda.synchronize()
        else:
            time.sleep(seconds)
        torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()


def part_profile(lantern_bin, workdir):
    db = Path(workdir) / "bench_energy_profile.db"
    r = subprocess.run([lantern_bin, "profile", "-f", "-t", "nvtx,nvml", "-o", str(db), "--",
                        sys.executable, __file__, "--phases"], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    r = subprocess.run([lantern_bin, "stats", str(db), "--report", "energy_sum", "--format",
                        "json"], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    rows = {row["name"]: row for row in json.loads(r.stdout)["rows"] if row["scope"] == "nvtx"}
    phases = ["idle1", "load1", "idle2", "load2"]
    if not all(p in rows for p in phases + ["all"]):
        return {"error": f"NVTX ranges missing from the profile: {sorted(rows)}"}
    phase_sum = sum(rows[p]["energy_j"] for p in phases)
    whole = rows["all"]["energy_j"]
    con = sqlite3.connect(db)
    instant = {}
    for p in phases:
        start, end = con.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s"
                                 " ON s.id = r.name_id WHERE s.value = ?", (p,)).fetchone()
        instant[p] = con.execute("SELECT avg(power_mw) / 1000.0 FROM gpu_samples WHERE"
                                 " power_mw IS NOT NULL AND ts_ns BETWEEN ? AND ?",
                                 (start, end)).fetchone()[0]
    samples = con.execute("SELECT count(power_mw), count(energy_mj) FROM gpu_samples").fetchone()
    power_ts = [t for (t,) in con.execute("SELECT ts_ns FROM gpu_samples WHERE power_mw IS NOT NULL"
                                          " ORDER BY ts_ns")]
    gaps = [(b - a) / 1e6 for a, b in zip(power_ts, power_ts[1:])]
    return {"phases_j": {p: rows[p]["energy_j"] for p in phases}, "all_j": whole,
            "sum_vs_all_pct": (phase_sum - whole) / whole * 100,
            "avg_w": {p: rows[p]["avg_w"] for p in phases}, "instant_w": instant,
            "power_samples": samples[0], "counter_updates": samples[1],
            "power_gap_ms_mean": statistics.mean(gaps), "power_gap_ms_max": max(gaps)}


def error_stats(errs):
    errs = sorted(errs)
    return {"median": statistics.median(errs), "mean": statistics.mean(errs),
            "p95": errs[int(0.95 * (len(errs) - 1))], "max": errs[-1]}


def square_program():
    """Run under `lantern profile`: steady idle and load phases, then the square wave."""
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=load_dtype())
    torch.cuda.synchronize()
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    push("idle")
    time.sleep(2.0)
    pop()
    push("load")
    end = time.time() + 2.5
    while time.time() < end:
        a @ a
    torch.cuda.synchronize()
    pop()
    push("square")
    t = time.monotonic()
    for _ in range(100):
        push("burst")
        while time.monotonic() < t + 0.040:
            a @ a
            torch.cuda.synchronize()
        pop()
        t += 0.100
        time.sleep(max(0.0, t - time.monotonic()))
    pop()


def part_square(lantern_bin, workdir, tool):
    db = Path(workdir) / "bench_energy_square.db"
    r = subprocess.run([lantern_bin, "profile", "-f", "-t", "nvtx,nvml", "-o", str(db), "--",
                        sys.executable, __file__, "--square"], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    con = sqlite3.connect(db)
    gpu_id, = con.execute("SELECT gpu_id FROM gpu_samples WHERE energy_mj IS NOT NULL LIMIT 1").fetchone()
    updates = con.execute("SELECT ts_ns, energy_mj FROM gpu_samples WHERE gpu_id = ? AND"
                          " energy_mj IS NOT NULL ORDER BY ts_ns", (gpu_id,)).fetchall()

    def span(name):
        return con.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s ON"
                           " s.id = r.name_id WHERE s.value = ? ORDER BY r.start_ns", (name,)).fetchall()

    def counter_w(start, end):  # the counter's average power over updates within [start, end]
        inside = [u for u in updates if start <= u[0] <= end]
        return (inside[-1][1] - inside[0][1]) / 1e3 / ((inside[-1][0] - inside[0][0]) / 1e9)

    (idle_s, idle_e), = span("idle")
    (load_s, load_e), = span("load")
    (sq_s, sq_e), = span("square")
    p_idle = counter_w(idle_s + 500_000_000, idle_e)
    p_steady = counter_w(load_s + 1_000_000_000, load_e)
    bursts = span("burst")
    # a burst does not draw what a steady load does (clocks and power ramp): its power is the
    # one that makes the square wave's total the counter's, idle power taken as measured
    lo_u = [u for u in updates if u[0] >= sq_s + 200_000_000][0]
    hi_u = [u for u in updates if u[0] <= sq_e - 200_000_000][-1]
    busy_ns = sum(max(0, min(hi_u[0], e) - max(lo_u[0], s)) for s, e in bursts)
    total_j = (hi_u[1] - lo_u[1]) / 1e3
    p_busy = (total_j - p_idle * (hi_u[0] - lo_u[0] - busy_ns) / 1e9) / (busy_ns / 1e9)

    def reference(start, end):
        busy = sum(max(0, min(end, e) - max(start, s)) for s, e in bursts)
        return (p_busy * busy + p_idle * (end - start - busy)) / 1e9

    def counter_at(t):
        return max((u for u in updates if u[0] <= t), default=updates[0])[1]

    windows, meta = [], []
    lo, hi = sq_s + 200_000_000, sq_e - 200_000_000
    for ms in (50, 100, 200, 500):
        t = lo
        while t + ms * 1_000_000 <= hi:
            windows.append(f"{gpu_id} {t} {t + ms * 1_000_000}")
            meta.append((ms, reference(t, t + ms * 1_000_000),
                         (counter_at(t + ms * 1_000_000) - counter_at(t)) / 1e3))
            t += ms * 1_000_000
    out = subprocess.run([tool, str(db)], input="\n".join(windows) + "\n", capture_output=True,
                         text=True, check=True)
    per = {}
    for (ms, ref, zeus), line in zip(meta, out.stdout.splitlines()):
        j, err, _, _ = line.split()
        d = per.setdefault(ms, {"lantern": [], "zeus": [], "bound": []})
        d["lantern"].append(abs(float(j) - ref) / ref * 100)
        d["zeus"].append(abs(zeus - ref) / ref * 100)
        d["bound"].append(float(err) / ref * 100)
    whole = subprocess.run([tool, str(db)], input=f"{gpu_id} {lo} {hi}\n", capture_output=True,
                           text=True, check=True).stdout.split()[0]
    return {"idle_w": p_idle, "busy_w": p_busy, "steady_load_w": p_steady, "bursts": len(bursts),
            "reference_total_vs_counter_pct": (reference(lo, hi) - float(whole)) / float(whole) * 100,
            "windows": {ms: {"n": len(d["lantern"]), "lantern": error_stats(d["lantern"]),
                             "zeus_counter_delta": error_stats(d["zeus"]),
                             "bound_mean_pct": statistics.mean(d["bound"])}
                        for ms, d in per.items()}}


def part_replay(db_path, tool):
    """Windows replayed offline over a profile's samples (the launcher's sampler alone polled
    NVML): back-to-back windows of each length across the steady part of each load phase,
    against that phase's average power from the energy counter."""
    con = sqlite3.connect(db_path)
    gpu_id, = con.execute("SELECT gpu_id FROM gpu_samples WHERE energy_mj IS NOT NULL LIMIT 1").fetchone()
    updates = con.execute("SELECT ts_ns, energy_mj FROM gpu_samples WHERE gpu_id = ? AND"
                          " energy_mj IS NOT NULL ORDER BY ts_ns", (gpu_id,)).fetchall()

    def counter_at(t):  # what a read at t returns: the value of the last update before t
        return max((u for u in updates if u[0] <= t), default=updates[0])[1]

    windows, meta = [], []
    for phase in ("load1", "load2"):
        start, end = con.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s ON"
                                 " s.id = r.name_id WHERE s.value = ?", (phase,)).fetchone()
        steady = [u for u in updates if start + 500_000_000 <= u[0] <= end - 100_000_000]
        ref_w = (steady[-1][1] - steady[0][1]) / 1e3 / ((steady[-1][0] - steady[0][0]) / 1e9)
        for ms in WINDOW_MS[:4]:
            t = steady[0][0]
            while t + ms * 1_000_000 <= steady[-1][0]:
                windows.append(f"{gpu_id} {t} {t + ms * 1_000_000}")
                meta.append((ms, ref_w * ms / 1e3, (counter_at(t + ms * 1_000_000) - counter_at(t)) / 1e3))
                t += ms * 1_000_000
    text = "\n".join(windows) + "\n"
    out = subprocess.run([tool, str(db_path)], input=text, capture_output=True, text=True, check=True)
    power = subprocess.run([tool, str(db_path), "--power-only"], input=text, capture_output=True,
                           text=True, check=True)
    per = {}
    for (ms, ref, zeus), line, pline in zip(meta, out.stdout.splitlines(), power.stdout.splitlines()):
        j, err, ups, _ = line.split()
        d = per.setdefault(ms, {"lantern": [], "zeus": [], "power": [], "bound": []})
        d["lantern"].append(abs(float(j) - ref) / ref * 100)
        d["zeus"].append(abs(zeus - ref) / ref * 100)
        d["power"].append(abs(float(pline.split()[0]) - ref) / ref * 100)
        d["bound"].append(float(err) / ref * 100)
    return {ms: {"n": len(d["lantern"]), "lantern": error_stats(d["lantern"]),
                 "zeus_counter_delta": error_stats(d["zeus"]), "power_only": error_stats(d["power"]),
                 "bound_mean_pct": statistics.mean(d["bound"])} for ms, d in per.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--lantern", help="the lantern executable, for part 2")
    ap.add_argument("--out", default="bench_energy_accuracy.json")
    ap.add_argument("--replay", nargs=2, metavar=("DB", "TOOL"),
                    help="only replay windows over a profile database made by part 2 with "
                         "TOOL (build/bin/energy_replay): no GPU needed")
    ap.add_argument("--replay-tool", help="build/bin/energy_replay, for part 3")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
                    help="the matmul load's type (float32 stays under an H100's power cap)")
    ap.add_argument("--load", default="matmul", choices=["matmul", "add"],
                    help="part 1's steady load: matmuls of --dtype, or an fp32 add (under the cap)")
    ap.add_argument("--square-live", metavar="BUSY_MS:PERIOD_MS",
                    help="only the energy windows over a square wave, e.g. 30:60")
    ap.add_argument("--phases", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--square", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ["LANTERN_BENCH_DTYPE"] = args.dtype
    os.environ["LANTERN_BENCH_LOAD"] = args.load
    if args.square_live:
        busy, period = (int(x) for x in args.square_live.split(":"))
        q = part_square_live(busy, period, max(args.seconds, 6.0))
        Path(args.out).write_text(json.dumps({"square_live": q}, indent=1))
        print(f"energy windows over a {busy}/{period} ms square wave: idle {q['idle_w']:.1f} W, "
              f"bursts {q['busy_w']:.1f} W")
        for ms, w in q["windows"].items():
            print(f"{ms:>6}ms {w['n']:>5} median {w['lantern']['median']:.2f} % p95 "
                  f"{w['lantern']['p95']:.2f} % max {w['lantern']['max']:.2f} %, bound mean "
                  f"{w['bound_mean_pct']:.2f} %, error within bound in {w['within_bound_pct']:.0f} %")
        return
    if args.phases:
        phases_program()
        return
    if args.square:
        square_program()
        return
    if args.replay:
        replay = part_replay(*args.replay)
        print(f"{'window':>8} {'n':>5} {'lantern mean/p95 %':>20} {'zeus delta mean/p95 %':>22} "
              f"{'power-only mean/p95 %':>22} {'bound %':>8}")
        for ms, s in replay.items():
            print(f"{ms:>6}ms {s['n']:>5} {s['lantern']['mean']:>11.2f} /{s['lantern']['p95']:>6.2f}"
                  f" {s['zeus_counter_delta']['mean']:>13.2f} /{s['zeus_counter_delta']['p95']:>6.2f}"
                  f" {s['power_only']['mean']:>13.2f} /{s['power_only']['p95']:>6.2f}"
                  f" {s['bound_mean_pct']:>8.2f}")
        Path(args.out).write_text(json.dumps({"replay": replay}, indent=1))
        return
    result = {"windows": part_windows(max(args.seconds, 10.0))}
    if args.lantern:
        result["profile"] = part_profile(args.lantern, os.path.dirname(os.path.abspath(args.out)))
    if args.lantern and args.replay_tool and "error" not in result["profile"]:
        result["replay"] = part_replay(Path(os.path.dirname(os.path.abspath(args.out))) /
                                       "bench_energy_profile.db", args.replay_tool)
        result["square"] = part_square(args.lantern, os.path.dirname(os.path.abspath(args.out)),
                                       args.replay_tool)
    Path(args.out).write_text(json.dumps(result, indent=1))
    w = result["windows"]
    load = args.dtype if args.load == "matmul" else "fp32 add"
    print(f"energy windows (lantern.Monitor), steady {load} load {w['seconds']:.1f} s at "
          f"{w['reference_w']:.1f} W")
    print(f"{'window':>8} {'n':>5} {'lantern median/p95/max %':>26} "
          f"{'power-only median/p95 %':>24} {'bound %':>8} {'short':>6} {'updates':>8}")
    for ms, s in w["windows"].items():
        print(f"{ms:>6}ms {s['n']:>5} {s['lantern']['median']:>11.2f} /{s['lantern']['p95']:>6.2f}"
              f" /{s['lantern']['max']:>6.2f}"
              f" {s['power_only']['median']:>15.2f} /{s['power_only']['p95']:>6.2f}"
              f" {s['bound_mean_pct']:>8.2f} {s['flagged_too_short']:>6} "
              f"{s['counter_updates_mean']:>8.2f}")
    if "replay" in result:
        print("profile (launcher's sampler), steady load phases, windows replayed:")
        for ms, s in result["replay"].items():
            print(f"{ms:>6}ms {s['n']:>5} lantern median {s['lantern']['median']:.2f} % "
                  f"(p95 {s['lantern']['p95']:.2f}), zeus delta median "
                  f"{s['zeus_counter_delta']['median']:.2f} % (p95 "
                  f"{s['zeus_counter_delta']['p95']:.2f}), power-only median "
                  f"{s['power_only']['median']:.2f} %, bound {s['bound_mean_pct']:.2f} %")
    if "profile" in result:
        print("profile:", json.dumps(result["profile"]))
    if "square" in result:
        q = result["square"]
        if "error" in q:
            print("square:", q["error"])
        else:
            print(f"square wave 40/60 ms: idle {q['idle_w']:.1f} W, bursts {q['busy_w']:.1f} W "
                  f"(steady load {q['steady_load_w']:.1f} W), "
                  f"{q['bursts']} bursts; reference vs counter over it: "
                  f"{q['reference_total_vs_counter_pct']:+.2f} %")
            for ms, s in q["windows"].items():
                print(f"{ms:>6}ms {s['n']:>5} lantern median {s['lantern']['median']:.2f} % "
                      f"(p95 {s['lantern']['p95']:.2f}), zeus delta median "
                      f"{s['zeus_counter_delta']['median']:.2f} % (p95 "
                      f"{s['zeus_counter_delta']['p95']:.2f}), bound {s['bound_mean_pct']:.2f} %")


if __name__ == "__main__":
    main()
