#!/usr/bin/env python3
"""GPU test of `lantern profile --python-backtrace` (the `trace` column of `lantern kernels`):
a small PyTorch script whose kernels come from known lines, profiled with `-t cuda,nvtx
--python-backtrace`; every kernel must carry the stack of the line that launched it
(file:line:function of the script, innermost first, PyTorch's frames folded), checked in the
database and in `lantern kernels --csv -c kernel,trace`. Then the native path: the CUDA C
workload's kernels name their caller in the program. Exits 77, saying why, without a GPU or
PyTorch. LANTERN_BACKTRACE_OUT (optional): folder for the databases and the report."""
import csv
import io
import os
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
LOOPS = 50

# Line numbers are found by their markers, so the script can be edited freely.
SCRIPT = """\
import torch
x = torch.randn(256, 256, device="cuda")  # LINE_RANDN
torch.cuda.synchronize()


def add_one(a):
    return a + 1  # LINE_ADD


def main():
    for _ in range(%d):
        add_one(x)  # LINE_LOOP
    y = torch.mm(x, x)  # LINE_MM
    torch.cuda.synchronize()
    return y


main()  # LINE_MAIN
""" % LOOPS


def skip_reason():
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA GPU (no /dev/nvidiactl)"
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "PyTorch with CUDA is not installed"
    return None


def line_of(marker):
    for number, text in enumerate(SCRIPT.splitlines(), 1):
        if text.endswith("# " + marker):
            return number
    raise KeyError(marker)


def profile(lantern, db, command):
    if os.path.exists(db):
        os.unlink(db)
    run = subprocess.run([lantern, "profile", "-t", "cuda,nvtx", "--python-backtrace", "-o", db,
                          "--"] + command, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        sys.exit(f"FAIL: lantern profile exited {run.returncode}: {run.stderr[-2000:]}")
    return run


def kernel_traces(db):
    """(kernel name, trace or None) of every kernel, in GPU start order."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT COALESCE(d.value, n.value), t.value FROM kernels k"
            " LEFT JOIN strings n ON n.id = k.name_id LEFT JOIN strings d ON d.id = k.demangled_id"
            " LEFT JOIN cuda_api a ON a.id = k.api_id LEFT JOIN strings t ON t.id = a.backtrace_id"
            " ORDER BY k.start_ns").fetchall()


def check(condition, message, failures):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def check_python(lantern, out_dir, failures):
    script = os.path.join(out_dir, "backtrace_script.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    db = os.path.join(out_dir, "backtrace_python.db")
    profile(lantern, db, [sys.executable, script])
    at = {m: f"{script}:{line_of(m)}" for m in ("LINE_RANDN", "LINE_ADD", "LINE_LOOP", "LINE_MM",
                                                "LINE_MAIN")}
    add_stack = (f"{at['LINE_ADD']}:add_one<-{at['LINE_LOOP']}:main<-"
                 f"{at['LINE_MAIN']}:<module>")
    mm_prefix = f"{at['LINE_MM']}:main<-{at['LINE_MAIN']}:<module>"
    randn_stack = f"{at['LINE_RANDN']}:<module>"
    rows = kernel_traces(db)
    traces = [t for _, t in rows]
    check(len(rows) >= LOOPS + 2, f"{len(rows)} kernels recorded (>= {LOOPS + 2})", failures)
    missing = [name for name, t in rows if t is None]
    check(not missing, f"every kernel has a trace (without: {missing[:5]})", failures)
    check(traces.count(add_stack) == LOOPS,
          f"{traces.count(add_stack)} kernels traced to `a + 1` at line {line_of('LINE_ADD')}"
          f" (want {LOOPS}): {add_stack}", failures)
    check(sum(1 for t in traces if t == mm_prefix) >= 1,
          f"the GEMM traced to torch.mm at line {line_of('LINE_MM')}", failures)
    check(sum(1 for t in traces if t == randn_stack) >= 1,
          f"randn's kernel traced to line {line_of('LINE_RANDN')}", failures)
    strays = sorted({t for t in traces if t not in (add_stack, mm_prefix, randn_stack)})
    check(not strays, f"no kernel traced elsewhere (strays: {strays[:3]})", failures)
    check(not any("site-packages" in (t or "") or "/torch/" in (t or "") for t in traces),
          "PyTorch's own frames are folded", failures)
    with sqlite3.connect(db) as conn:
        strings = conn.execute("SELECT count(*) FROM strings WHERE value = ?",
                               (add_stack,)).fetchone()[0]
    check(strings == 1, f"the repeated stack is one string ({strings})", failures)
    report = subprocess.run([lantern, "kernels", db, "--csv", "-c", "kernel,trace"],
                            capture_output=True, text=True, timeout=120)
    check(report.returncode == 0, "lantern kernels -c kernel,trace runs", failures)
    shown = [r["trace"] for r in csv.DictReader(io.StringIO(report.stdout))]
    check(shown.count(add_stack) == LOOPS, f"the report's trace column shows it "
          f"({shown.count(add_stack)} rows)", failures)
    with open(os.path.join(out_dir, "backtrace_report.csv"), "w") as f:
        f.write(report.stdout)


def check_native(lantern, build, out_dir, failures):
    workload = os.environ.get("LANTERN_CUDA_WORKLOAD", os.path.join(build, "bin",
                                                                     "cuda_workload"))
    if not os.path.exists(workload):
        print(f"SKIP native part: no {workload} (built where nvcc exists)")
        return
    db = os.path.join(out_dir, "backtrace_native.db")
    profile(lantern, db, [workload, os.path.join(out_dir, "workload.json")])
    rows = kernel_traces(db)
    name = os.path.basename(workload)
    check(len(rows) > 0, f"native: {len(rows)} kernels", failures)
    unnamed = [t for _, t in rows if not t or name not in t.split("<-")[0]]
    check(not unnamed, f"native: every kernel's innermost frame is in {name} "
          f"(e.g. {rows[0][1] if rows else None}; not: {unnamed[:3]})", failures)


def main():
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP
    build = os.environ.get("LANTERN_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
    lantern = os.path.join(build, "bin", "lantern")
    out_dir = os.environ.get("LANTERN_BACKTRACE_OUT") or tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    failures = []
    check_python(lantern, out_dir, failures)
    check_native(lantern, build, out_dir, failures)
    print("PASS" if not failures else f"FAIL: {len(failures)} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
