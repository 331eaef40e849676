#!/usr/bin/env python3
"""GPU proof of the CPU side (issue #27), with CPU sampling on as by default: a GPT-2-style
decode loop (gpt2_decode.py): cpu_sample_sum inside ':generate' names Python functions of
PyTorch and transformers, and a host-wait finding has a host part. (The Numba tutorial's host
wait is tests/analyze/test_analyze_host_gpu.py's.)
Prints what it found (for the closing note) and writes databases and outputs to
$LANTERN_PROOF_OUT (default: a temporary folder). Plain Python (no pytest on the GPU machine);
exits 77 without a GPU or transformers."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
failed = passed = 0


def expect(cond, what):
    global failed, passed
    print(("ok: " if cond else "FAIL: ") + what)
    passed += bool(cond)
    failed += not cond


def lantern(build, *args):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=900)


def has_module(m):
    return subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True).returncode == 0


def profile(build, out, name, command):
    db = os.path.join(out, f"{name}.db")
    r = lantern(build, "profile", "--sample=cpu", "-f", "-o", db, "--", *command)
    print(f"--- {name}: exit {r.returncode}\n{r.stderr[-1500:]}")
    return db if r.returncode == 0 else None


def host_parts(build, db, out, name):
    r = lantern(build, "analyze", db, "--format", "json")
    with open(os.path.join(out, f"{name}.analysis.json"), "w") as f:
        f.write(r.stdout)
    with open(os.path.join(out, f"{name}.analysis.txt"), "w") as f:
        f.write(lantern(build, "analyze", db, "--details").stdout)
    parts = []
    for rule in json.loads(r.stdout)["analysis"]["rules"]:
        for f in rule["findings"]:
            if f.get("host"):
                parts.append((rule["name"], f))
                h = f["host"]
                print(f"  {rule['name']}: {f['summary']}\n    host: {h.get('summary')}\n"
                      f"    advice: {f['advice']}")
    return parts


def top_functions(build, db, out, name, *extra):
    r = lantern(build, "stats", db, "--report", "cpu_sample_sum", "--format", "json", *extra)
    with open(os.path.join(out, f"{name}.cpu_sample_sum.json"), "w") as f:
        f.write(r.stdout)
    rows = json.loads(r.stdout)["rows"] if r.returncode == 0 and r.stdout else []
    for row in rows[:12]:
        print(f"    {row['self_percent']:5.1f} %  {row['function']}  ({row['module']})  {row['thread']}")
    return rows


def gpt2(build, out):
    db = profile(build, out, "gpt2_decode", [sys.executable, os.path.join(HERE, "gpt2_decode.py")])
    expect(db is not None, "GPT-2 decode loop profiled with CPU sampling on")
    if not db:
        return
    rows = top_functions(build, db, out, "gpt2_decode", "--filter-nvtx", "generate")
    pyframes = [r for r in rows[:15] if (r["module"] or "").endswith(".py")]
    expect(len(pyframes) >= 3, f"cpu_sample_sum in :generate names Python functions "
           f"({len(pyframes)} of the top 15 by self samples)")
    by_total = sorted(rows, key=lambda r: -r["total"])[:40]
    framework = [r["function"] for r in by_total if r["function"].startswith("Module._") or
                 "GPT2" in r["function"] or "Generation" in r["function"]]
    expect(framework, f"PyTorch's module dispatch or transformers' GPT-2 / generation code "
           f"among the top 40 by total samples ({framework[:5]})")
    parts = host_parts(build, db, out, "gpt2_decode")
    expect(any(rule in ("gpu_idle", "gpu_utilization", "launch_bound") for rule, _ in parts),
           "a host-wait finding has a host part")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SOURCE, "build")
    if not os.path.exists("/dev/nvidiactl"):
        print("SKIP: no NVIDIA GPU")
        return SKIP
    if not has_module("transformers"):
        print("SKIP: transformers not installed")
        return SKIP
    out = os.environ.get("LANTERN_PROOF_OUT") or tempfile.mkdtemp(prefix="cpu_gpu_")
    os.makedirs(out, exist_ok=True)
    gpt2(build, out)
    print(f"{passed} passed, {failed} failed; outputs in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
