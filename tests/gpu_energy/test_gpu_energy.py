"""GPU energy on a real NVIDIA GPU (label gpu): the energy windows of the Python module under
torch load, `lantern energy`, and `lantern profile -t nvml`. Run as a script: it exits 77 with
the reason printed when there is no usable NVML or torch GPU, so ctest shows a skip."""

import ctypes
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = BUILD / "bin" / "lantern"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
os.environ.setdefault("LANTERN_LIBRARY", str(BUILD / "lib" / "liblantern.so"))

LOAD = ("import torch, time\n"
        "a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)\n"
        "end = time.time() + {seconds}\n"
        "while time.time() < end:\n"
        "    a @ a\n"
        "torch.cuda.synchronize()\n")


def why_skip():
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        return f"no NVML: {e}"
    try:
        import torch
    except ImportError:
        return "no torch"
    return None if torch.cuda.is_available() else "torch sees no GPU"


def test_window_under_load_is_plausible_and_trusted():
    import lantern
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    with lantern.Monitor(gpu_indices=[0], cpu_indices=[]) as monitor:
        assert monitor.disabled_reason == ""
        monitor.begin_window("idle")
        time.sleep(1.0)
        idle = monitor.end_window("idle")
        monitor.begin_window("load")
        end = time.time() + 2.0
        while time.time() < end:
            a @ a
        load = monitor.end_window("load")  # synchronizes through torch, as Zeus does
    limit_w = 1000
    for m in (idle, load):
        watts = m.gpu_energy[0] / m.time
        assert 20 < watts < limit_w, m
        assert m.gpu_counter_updates[0] >= 8 and m.too_short == []
        assert m.gpu_energy_error[0] < 0.05 * m.gpu_energy[0]
    assert load.gpu_energy[0] / load.time > 1.5 * idle.gpu_energy[0] / idle.time


def test_energy_command_and_profile_sample_the_real_gpu(tmp_path):
    r = subprocess.run([str(LANTERN), "energy", "--cpus", "none", "--", sys.executable, "-c",
                        LOAD.format(seconds=1.5)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    gpu_line = [l for l in r.stderr.splitlines() if l.startswith("GPU 0:")][0]
    assert float(gpu_line.split()[2]) > 10, r.stderr
    r = subprocess.run([str(LANTERN), "profile", "-t", "nvtx,nvml", "-o", "g.db", "--", "sleep", "1"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(tmp_path / "g.db")
    uuid, = db.execute("SELECT uuid FROM gpus WHERE nvml_index = 0").fetchone()
    assert uuid.startswith("GPU-")
    power, energy = db.execute("SELECT count(power_mw), count(energy_mj) FROM gpu_samples").fetchone()
    assert power >= 50 and energy >= 8


if __name__ == "__main__":
    reason = why_skip()
    if reason:
        print(f"skip: {reason}")
        sys.exit(77)
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", __file__]))
