"""What the CPU-sampling tests of tests/cpu/ share (pytest puts this folder on their path)."""
import json
import os
import subprocess


def perf_events_allowed():
    """Unprivileged perf events: kernel.perf_event_paranoid 2 or less."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read()) <= 2
    except OSError:
        return False


def hot_functions(lantern, tmp_path, program, debug_dirs):
    """The functions of cpu_sample_sum's rows for `program 1` under `lantern profile`, most self
    time first, with LANTERN_DEBUG_DIRS=debug_dirs (where separate debug files are looked for)."""
    env = {**os.environ, "LANTERN_DEBUG_DIRS": debug_dirs}
    done = subprocess.run([lantern, "profile", "-t", "nvtx,cpu", "-o", "x.db", program, "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    out = subprocess.run([lantern, "stats", "x.db", "-r", "cpu_sample_sum", "--format", "json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return [r["function"] for r in json.loads(out.stdout)["rows"]]
