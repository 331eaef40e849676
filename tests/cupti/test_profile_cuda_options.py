#!/usr/bin/env python3
"""`lantern profile`'s CUDA options reach the agent as docs/architecture.md says:
--capture-range, --delay/--duration (as CLOCK_MONOTONIC bounds), --cuda-api and
--cuda-memory-usage; bad values are usage errors (exit 2, one line). The profiled command is `env`, which prints them."""
import os
import subprocess
import sys
import tempfile
import time

build = os.environ["LANTERN_BUILD"]
lantern = os.path.join(build, "bin", "lantern")


def profile(*args):
    with tempfile.TemporaryDirectory() as tmp:
        return subprocess.run([lantern, "profile", "-o", os.path.join(tmp, "o.db"), *args],
                              capture_output=True, text=True, timeout=120)


before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
run = profile("-t", "cuda,nvtx", "--capture-range=nvtx:train step", "--delay", "1.5",
              "--duration", "2", "--cuda-api=all", "--cuda-memory-usage=true", "--", "env")
after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
assert run.returncode == 0, run.stderr
env = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
assert env["LANTERN_CAPTURE"] == "nvtx:train step", env.get("LANTERN_CAPTURE")
assert env["LANTERN_CUDA_API"] == "all"
assert env["LANTERN_CUDA_MEMORY"] == "1"
start, end = int(env["LANTERN_CAPTURE_FROM_NS"]), int(env["LANTERN_CAPTURE_UNTIL_NS"])
assert before + 1_500_000_000 <= start <= after + 1_500_000_000, (before, start, after)
assert end - start == 2_000_000_000, end - start

run = profile("-t", "cuda", "--", "env")
env = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
assert "LANTERN_CAPTURE" not in env and "LANTERN_CAPTURE_FROM_NS" not in env, env
assert "LANTERN_CUDA_MEMORY" not in env, env  # allocations are opt-in, as in nsys

run = profile("-t", "cuda", "--cuda-api=none", "--", "env")
assert run.returncode == 0, run.stderr
assert "LANTERN_CUDA_API=none" in run.stdout.splitlines(), run.stdout

for bad in (["--capture-range=nvtx:"], ["--capture-range=sometimes"], ["--delay", "-1"],
            ["--duration", "soon"], ["--cuda-api=some"], ["--cuda-memory-usage=yes"],
            ["-t", "cuda", "--cuda-api=none", "--python-backtrace"]):
    run = profile(*bad, "--", "true")
    assert run.returncode == 2, (bad, run.returncode)
    assert run.stderr.startswith("lantern: "), run.stderr
print("ok")
