#!/usr/bin/env python3
"""The flight recorder left attached (docs/long-runs.md, issue #30's "30-minute run"): a PyTorch
training loop under `lantern profile --ring SEC --ring-trigger nvtx:slow_step`, with one slow
step injected at SLOW_AT seconds that the program marks (nvtxMark "slow_step") after it ends.
Every minute (--sample-s) the driver reads the resident memory of the program and of lantern
(/proc/PID/status VmRSS); at the end it checks the dump: it holds the slow step and the SEC
seconds before the mark, and the step times inside the ring match the program's own log.

  python3 bench/long_ring.py --build build --minutes 8 --slow-at 420 --ring 20 --out DIR

--workload runs the program itself (what lantern runs)."""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time


def workload(args):
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.randn(32, 128, 256, device="cuda")
    nvtx = torch.cuda.nvtx
    log = open(args.log, "w", buffering=1)
    start = time.monotonic()
    step, slow_done = 0, False
    while time.monotonic() - start < args.minutes * 60:
        step += 1
        slow = not slow_done and time.monotonic() - start >= args.slow_at
        t0 = time.monotonic_ns()
        nvtx.range_push("step")
        opt.zero_grad(set_to_none=True)
        loss = model(data).pow(2).mean()
        loss.backward()
        opt.step()
        if slow:  # the slow step: 2 s of extra host work inside the step
            x = data
            end = time.monotonic() + 2.0
            while time.monotonic() < end:
                x = (x * 1.0001).sin()
        torch.cuda.synchronize()
        nvtx.range_pop()
        t1 = time.monotonic_ns()
        log.write(f"{step} {t0} {t1}{' slow' if slow else ''}\n")
        if slow:
            nvtx.mark("slow_step")  # "that step was slow": the ring's trigger
            slow_done = True


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def drive(args):
    os.makedirs(args.out, exist_ok=True)
    log = os.path.join(args.out, "steps.log")
    lantern = os.path.join(args.build, "bin", "lantern")
    cmd = [lantern, "profile", "-f", "--ring", str(args.ring), "--ring-trigger", "nvtx:slow_step",
           "-o", os.path.join(args.out, "ring-%n.db"), "--", sys.executable,
           os.path.abspath(__file__), "--workload", "--minutes", str(args.minutes), "--slow-at",
           str(args.slow_at), "--log", log]
    err = open(os.path.join(args.out, "lantern.err"), "w")
    proc = subprocess.Popen(cmd, stderr=err, stdout=err)
    started, rss = time.monotonic(), []
    while proc.poll() is None:
        time.sleep(1)
        minute = int((time.monotonic() - started) // args.sample_s)
        if minute >= 1 and (not rss or rss[-1]["minute"] < minute):
            kids = children(proc.pid)
            rss.append({"minute": minute, "lantern_kib": rss_kib(proc.pid),
                        "program_kib": rss_kib(kids[0]) if kids else None,
                        "raw_bytes": sum(os.path.getsize(os.path.join(r, f))
                                         for r, _, fs in os.walk(os.path.join(args.out, "ring-1.db.raw"))
                                         for f in fs) if os.path.isdir(os.path.join(args.out, "ring-1.db.raw")) else None})
            print(json.dumps(rss[-1]), flush=True)
    err.close()
    steps = [line.split() for line in open(log)]
    slow = next(s for s in steps if s[-1] == "slow")
    slow_start, slow_end = int(slow[1]), int(slow[2])
    dbs = sorted(f for f in os.listdir(args.out) if f.startswith("ring-") and f.endswith(".db"))
    result = {"rss": rss, "status": proc.returncode, "databases": dbs,
              "steps": len(steps), "slow_step": int(slow[0])}
    if dbs:
        with sqlite3.connect(os.path.join(args.out, dbs[0])) as db:
            rows = db.execute("SELECT r.start_ns, r.end_ns FROM ranges r JOIN strings s ON "
                              "s.id = r.name_id WHERE s.value = 'step' ORDER BY r.start_ns").fetchall()
            marks = db.execute("SELECT m.ts_ns FROM marks m JOIN strings s ON s.id = m.name_id "
                               "WHERE s.value = 'slow_step'").fetchall()
            kernels = db.execute("SELECT count(*) FROM kernels").fetchone()[0]
        ends = [e for _, e in rows if e is not None]
        first, last = (rows[0][0], max(ends)) if rows and ends else (None, None)
        truth = [(int(s[1]), int(s[2])) for s in steps
                 if first is not None and int(s[1]) >= first and int(s[2]) <= last]
        result.update({
            "dump_steps": len(rows), "dump_kernels": kernels, "marks": len(marks),
            "slow_in_dump": any(abs(a - slow_start) < 1_000_000 and abs(b - slow_end) < 1_000_000
                                for a, b in rows),
            "dump_span_before_mark_s": (marks[0][0] - first) / 1e9 if marks and first else None,
            "program_steps_in_span": len(truth)})
    # the program's own step time, minute by minute (the slow step left out)
    t_start = int(steps[0][1])
    per_minute = {}
    for s in steps:
        if s[-1] != "slow":
            per_minute.setdefault((int(s[1]) - t_start) // 60_000_000_000, []).append(
                (int(s[2]) - int(s[1])) / 1e6)
    result["step_ms_median_by_minute"] = {m: round(sorted(v)[len(v) // 2], 3)
                                          for m, v in sorted(per_minute.items())}
    m1 = rss[0] if rss else None
    if m1:
        result["lantern_rss_growth"] = max(r["lantern_kib"] or 0 for r in rss) / m1["lantern_kib"]
        result["program_rss_growth"] = max(r["program_kib"] or 0 for r in rss) / m1["program_kib"]
    print(json.dumps(result, indent=1))
    json.dump(result, open(os.path.join(args.out, "long_ring.json"), "w"), indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", action="store_true")
    p.add_argument("--build", default="build")
    p.add_argument("--minutes", type=float, default=8)
    p.add_argument("--slow-at", type=float, default=420)
    p.add_argument("--ring", type=int, default=20)
    p.add_argument("--out", default="long-ring")
    p.add_argument("--log")
    p.add_argument("--sample-s", type=float, default=60,
                   help="seconds between two RSS samples (their 'minute' counts these)")
    args = p.parse_args()
    workload(args) if args.workload else drive(args)


if __name__ == "__main__":
    main()
