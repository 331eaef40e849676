#!/usr/bin/env python3
"""GPU proof of what the host did (issue #27): the Nsight Systems tutorial's Numba program, v1
(examples/numba_tutorial: each kernel compiled at its first launch, the GPU idle meanwhile)
under `lantern profile -t cuda,nvtx,cpu`, then:
  - gpu_idle's GPU finding has a host part with samples from the gaps, and the advice of the
    JIT pattern (numba's compiler and llvmlite in the stacks);
  - the page has its Host CPU section with flame graphs, both exports carry the samples;
  - with sampling refused (LANTERN_TEST_CPU_REFUSE=1), the finding says sampling was off.
Prints the host parts (for the closing note) and keeps the databases, analyses and pages in
$LANTERN_PROOF_OUT (default: a temporary folder). Plain Python (the GPU machine has no
pytest); exits 77, saying why, without a GPU or numba."""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77

# its host wait (~0.6-0.7 s) must be named as Numba's JIT
TUTORIAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "numba_tutorial", "tutorial.py")


def lantern(build, *args, env=None):
    return subprocess.run([os.path.join(build, "bin", "lantern"), *args], capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})


def gpu_idle_host(build, db):
    out = lantern(build, "analyze", db, "--rule", "gpu_idle", "--format", "json")
    assert out.returncode == 0, out.stderr
    findings = json.loads(out.stdout)["analysis"]["rules"][0]["findings"]
    return findings[0] if findings else None


def main():
    build = os.environ.get("LANTERN_BUILD", "build")
    if not os.path.exists("/dev/nvidiactl"):
        print("SKIP: no NVIDIA GPU")
        return SKIP
    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        print("SKIP: numba is not installed")
        return SKIP
    out = os.environ.get("LANTERN_PROOF_OUT") or tempfile.mkdtemp(prefix="lantern-host-")
    os.makedirs(out, exist_ok=True)
    failed = 0

    def expect(cond, what):
        nonlocal failed
        print(("ok: " if cond else "FAIL: ") + what)
        failed += not cond

    db = os.path.join(out, "jit.db")
    run = lantern(build, "profile", "-t", "cuda,nvtx,cpu", "-f", "-o", db, "--", sys.executable,
                  TUTORIAL, "v1")
    expect(run.returncode == 0, f"profiled ({run.stderr[-500:]})")
    f = gpu_idle_host(build, db)
    expect(f is not None and f["host"] is not None, "gpu_idle's GPU finding has a host part")
    if f and f["host"]:
        h = f["host"]
        print("  summary:", f["summary"])
        print("  host:", h["summary"])
        print("  advice:", f["advice"])
        expect(h["sampled"] and h["samples"] > 0, "samples in the host-wait gaps")
        expect(h["pattern"] == "JIT compilation of numba kernels",
               f"the JIT pattern ({h['pattern']}, {h['pattern_percent']})")
    with open(os.path.join(out, "jit.analysis.txt"), "w") as t:
        t.write(lantern(build, "analyze", db).stdout)
    page = os.path.join(out, "jit.html")
    expect(lantern(build, "report", db, "-f", "-o", page).returncode == 0, "report written")
    with open(page) as p:
        html = p.read()
    expect('id="cpu"' in html and 'class="flame"' in html, "the page has flame graphs")
    for fmt, ext in (("perfetto", "perfetto-trace"), ("chrome", "json")):
        path = os.path.join(out, f"jit.{ext}")
        expect(lantern(build, "export", db, "--format", fmt, "-f", "-o", path).returncode == 0,
               f"{fmt} export ({os.path.getsize(path) if os.path.exists(path) else 0} bytes)")

    db = os.path.join(out, "refused.db")
    run = lantern(build, "profile", "-t", "cuda,nvtx,cpu", "-f", "-o", db, "--", sys.executable,
                  TUTORIAL, "v1", env={"LANTERN_TEST_CPU_REFUSE": "1"})
    expect(run.returncode == 0, "profiled with sampling refused")
    f = gpu_idle_host(build, db)
    expect(f is not None and f["host"] is not None and not f["host"]["sampled"]
           and f["host"]["summary"].startswith("CPU sampling was off"),
           "sampling off is said, not guessed")
    if f and f["host"]:
        print("  host:", f["host"]["summary"])
    print(f"outputs in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
