#!/usr/bin/env python3
"""GPU proof of the page's lanes of sampled threads without an NVTX lane (docs/analyze.md,
"lantern report"): cpu_lanes_gpu.py, a training loop whose main thread's steps are NVTX ranges
and whose backward pass runs on PyTorch's autograd thread, under `lantern profile -t
cuda,nvtx,cpu`; the page then has a lane for pt_autograd_0 (and none for the main thread, which
has its NVTX lane), its tooltip's samples are the database's, and its green (samples x period
over each column's time) adds up to the CPU time the kernel counted for the thread
(/proc/self/task/TID/stat, 10 ms ticks). Plain Python (the GPU machine has no pytest); exits
77, saying why, without a GPU or torch."""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu_lanes_gpu.py")
GREEN = "#3f9a58"  # html_timeline.c's running share


def lantern(build, *args):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=600)


def main():
    build = os.environ.get("LANTERN_BUILD", "build")
    if not os.path.exists("/dev/nvidiactl"):
        print("SKIP: no NVIDIA GPU")
        return SKIP
    if subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                      capture_output=True).returncode != 0:
        print("SKIP: torch with CUDA is not installed")
        return SKIP
    out = os.environ.get("LANTERN_PROOF_OUT") or tempfile.mkdtemp(prefix="lantern-lanes-")
    os.makedirs(out, exist_ok=True)
    failed = 0

    def expect(cond, what):
        nonlocal failed
        print(("ok: " if cond else "FAIL: ") + what)
        failed += not cond
        return cond

    db, page = os.path.join(out, "lanes.db"), os.path.join(out, "lanes.html")
    run = lantern(build, "profile", "-t", "cuda,nvtx,cpu", "-f", "-o", db, "--", sys.executable,
                  PROGRAM)
    if not expect(run.returncode == 0, f"profiled ({run.stderr[-500:]})"):
        return 1
    truth = re.search(r"autograd tid (\d+) cpu_ns (\d+) steps (\d+)", run.stdout)
    if not expect(truth is not None, f"the program found pt_autograd_0 ({run.stdout[-300:]})"):
        return 1
    tid, cpu_ns, steps = (int(v) for v in truth.groups())
    print(f"  pt_autograd_0: tid {tid}, {cpu_ns / 1e6:.0f} ms of CPU time, {steps} steps")
    done = lantern(build, "report", db, "-o", page, "--force")
    if not expect(done.returncode == 0, f"report written ({done.stderr[-300:]})"):
        return 1
    html = open(page, encoding="utf-8").read()
    if not expect('id="cpu-lanes"' in html, "the page has lanes of sampled threads"):
        return 1
    svg = html[html.index('id="cpu-lanes"'):]
    svg = svg[:svg.index("</svg>")]
    lane = re.search(rf'<title>thread pt_autograd_0 \(tid {tid}\) of process [^<]*</title>'
                     r'[^<]*</text>\n<g class="cpu-lane"><title>(\d+) samples: [^<]*</title>'
                     r'(.*?)</g>', svg, re.S)
    if not expect(lane is not None, "pt_autograd_0 has a lane, named with its tid"):
        return 1
    with sqlite3.connect(db) as con:
        start, end = (int(con.execute("SELECT value FROM meta WHERE key = ?", (k,)).fetchone()[0])
                      for k in ("start_ns", "end_ns"))
        samples = con.execute("SELECT count(*) FROM cpu_samples s JOIN threads t"
                              " ON t.id = s.thread_id WHERE t.tid = ?", (tid,)).fetchone()[0]
        main_tid = con.execute("SELECT t.tid FROM ranges r JOIN threads t"
                               " ON t.id = r.start_thread_id LIMIT 1").fetchone()[0]
    expect(int(lane.group(1)) == samples and samples > 0,
           f"its tooltip's samples ({lane.group(1)}) are the database's ({samples})")
    expect(f"(tid {main_tid})" not in svg, "the main thread (NVTX ranges) has no CPU lane")
    green = sum(float(w) * float(o) for w, o in re.findall(
        rf'width="(\d+)" height="13" fill="{GREEN}" fill-opacity="([\d.]+)"', lane.group(2)))
    drawn_ns = green * (end - start) / 1000
    # the agent finds a new thread within 100 ms; the kernel's ticks are 10 ms
    expect(abs(drawn_ns - cpu_ns) <= 0.15 * cpu_ns + 150e6,
           f"its green is {drawn_ns / 1e6:.0f} ms of CPU time, the kernel's count "
           f"{cpu_ns / 1e6:.0f} ms (within 15 % + 150 ms)")
    print(f"outputs in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
