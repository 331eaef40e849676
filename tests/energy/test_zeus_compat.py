"""lantern.zeus against the fake NVML: Zeus's ZeusMonitor and Measurement and the seed's
ZeusProfilingService, with Zeus's signatures and messages, and examples/zeus/train.py (written
for Zeus, imports zeus.monitor) run unchanged by `python -m lantern.zeus`, with GPUs (joules
checked against the scripted power) and without (time only). Needs $LANTERN_BUILD."""

import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE / "python"))
BUILD = Path(os.environ.get("LANTERN_BUILD", SOURCE / "build"))
os.environ["LANTERN_LIBRARY"] = str(BUILD / "lib" / "liblantern.so")

import lantern.zeus as zeus  # noqa: E402

# Zeus's own parameter lists (zeus/monitor/energy.py; the seed's zeus/profiling.py).
ZEUS_SIGNATURES = {
    zeus.ZeusMonitor.__init__: ["self", "gpu_indices", "cpu_indices", "approx_instant_energy",
                                "log_file", "sync_execution_with"],
    zeus.ZeusMonitor.begin_window: ["self", "key", "sync_execution"],
    zeus.ZeusMonitor.end_window: ["self", "key", "sync_execution", "cancel"],
    zeus.ZeusProfilingService.__init__: ["self", "gpu_indices", "monitor_path",
                                         "monitor_log_dir", "monitor_log_prefix"],
    zeus.ZeusProfilingService.push_window: ["self"],
    zeus.ZeusProfilingService.pop_window: ["self"],
    zeus.sync_execution: ["gpu_devices", "sync_with"],
}


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """Points NVML at the fake with a script (epoch: now); returns the environment."""
    def write(body):
        script = tmp_path / "nvml.script"
        script.write_text(f"epoch_ns {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n{body}")
        monkeypatch.setenv("LANTERN_FAKE_NVML_SCRIPT", str(script))
        monkeypatch.setenv("LANTERN_NVML_LIBRARY", str(BUILD / "lib" / "liblantern_fake_nvml.so"))
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.setenv("LANTERN_POWERCAP_ROOT", str(tmp_path / "no-powercap"))
        return dict(os.environ)
    return write


def close_to(joules, watts, seconds, bound=None):
    """The fake draws constant power: energy is watts x time, within the measurement's own
    error bound where it is at hand (Measurement.gpu_energy_error; it grows when the sampling
    thread waits for a core on a busy machine), else within 10% (a ProfilingResult or a Zeus
    program's printout carry no bound; the GPUs' powers in these tests differ far more)."""
    if bound is not None:
        return abs(joules - watts * seconds) <= bound + 0.002
    return abs(joules - watts * seconds) <= 0.10 * watts * seconds + 0.01


def test_signatures_are_zeus_s():
    for function, names in ZEUS_SIGNATURES.items():
        assert list(inspect.signature(function).parameters) == names, function.__qualname__


def test_monitor_windows_measure_time_and_energy(fake_gpus):
    fake_gpus("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 300000\n"
              "power 1 0 100000\n")
    monitor = zeus.ZeusMonitor([0, 1], [], False, None, "torch")  # Zeus's positional order
    assert monitor.gpu_indices == [0, 1] and monitor.cpu_indices == []
    monitor.begin_window("epoch")
    monitor.begin_window("step")
    time.sleep(0.08)
    step = monitor.end_window("step")
    time.sleep(0.05)
    epoch = monitor.end_window("epoch", sync_execution=False)
    assert 0.08 <= step.time < epoch.time < 1.0
    for m in (step, epoch):
        assert isinstance(m, zeus.Measurement)
        assert set(m.gpu_energy) == {0, 1}
        assert close_to(m.gpu_energy[0], 300, m.time, m.gpu_energy_error[0])
        assert close_to(m.gpu_energy[1], 100, m.time, m.gpu_energy_error[1])
        assert m.total_energy == pytest.approx(m.gpu_energy[0] + m.gpu_energy[1])
        assert m.cpu_energy is None and m.dram_energy is None and m.soc_energy is None


def test_monitor_errors_cancel_and_log_file_as_zeus(fake_gpus, tmp_path):
    fake_gpus("gpu GPU-aaaa1111 Fake-A\npower 0 0 200000\n")
    log = tmp_path / "logs" / "zeus.csv"  # its folder made, as Zeus does
    monitor = zeus.ZeusMonitor(gpu_indices=[0], cpu_indices=[], log_file=log,
                               approx_instant_energy=True)
    monitor.begin_window("a")
    with pytest.raises(ValueError, match="^Measurement window 'a' already exists$"):
        monitor.begin_window("a")
    with pytest.raises(ValueError, match="^Measurement window 'b' does not exist$"):
        monitor.end_window("b")
    cancelled = monitor.end_window("a", cancel=True)
    assert (cancelled.time, cancelled.gpu_energy, cancelled.cpu_energy) == (0.0, {0: 0.0}, {})
    with pytest.raises(ValueError, match="does not exist"):
        monitor.end_window("a")
    monitor.begin_window("b")
    time.sleep(0.05)
    m = monitor.end_window("b")
    header, row = log.read_text().splitlines()
    assert header == "start_time,window_name,elapsed_time,gpu0_energy"
    start, name, elapsed, energy = row.split(",")
    assert name == "b" and float(elapsed) == m.time and float(energy) == m.gpu_energy[0]
    assert abs(float(start) - (time.time() - m.time)) < 5
    assert close_to(m.gpu_energy[0], 200, m.time, m.gpu_energy_error[0])


def test_profiling_service_push_pop_per_gpu_list(fake_gpus):
    fake_gpus("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 250000\n"
              "power 1 0 50000\n")
    service = zeus.ZeusProfilingService(None, "zeus_monitor", "", "")
    assert service.gpu_indices == [0, 1]
    service.push_window()
    service.push_window()
    time.sleep(0.4)  # windows of 4 counter updates or more: no bound printed, 10% is ample
    inner = service.pop_window()
    time.sleep(0.05)
    outer = service.pop_window()
    assert isinstance(outer, zeus.ProfilingResult)
    assert 0.4 <= inner.time < outer.time
    for r in (inner, outer):
        assert len(r.energy) == 2
        assert close_to(r.energy[0], 250, r.time) and close_to(r.energy[1], 50, r.time)
    with pytest.raises(RuntimeError, match="^No profiling window active"):
        service.pop_window()
    only_second = zeus.ZeusProfilingService(gpu_indices=[1])
    only_second.push_window()
    assert len(only_second.pop_window().energy) == 1


def test_errors_tell_missing_nvml_from_missing_gpu(fake_gpus, monkeypatch):
    fake_gpus("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 1000\n")
    with pytest.raises(lantern_error(), match=r"^GPU 3 does not exist \(2 GPUs visible\)$"):
        zeus.ZeusMonitor(gpu_indices=[3])
    monkeypatch.setenv("LANTERN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    with pytest.raises(lantern_error(), match=r"^NVML not available: NVML not found \("):
        zeus.ZeusMonitor(gpu_indices=[0])
    assert zeus.ZeusMonitor().gpu_indices == []  # all GPUs of none: time only, as Zeus


def lantern_error():
    import lantern
    return lantern.LanternError


def test_zeus_module_names_resolve_here_only_after_install():
    code = ("import importlib.util, sys; assert importlib.util.find_spec('zeus') is None or "
            "'lantern' not in str(importlib.util.find_spec('zeus').origin); "
            "import lantern.zeus; lantern.zeus.install(); "
            "from zeus.monitor import ZeusMonitor, Measurement; "
            "from zeus.monitor.energy import Measurement as M2; "
            "from zeus.profiling import ZeusProfilingService, ProfilingResult; "
            "from zeus.utils.framework import sync_execution; import zeus.monitor; "
            "assert ZeusMonitor is lantern.zeus.ZeusMonitor and M2 is Measurement; "
            "assert zeus.monitor.ZeusMonitor is ZeusMonitor; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(SOURCE / "python")))
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr


def run_example(env, *args):
    env = dict(env, PYTHONPATH=str(SOURCE / "python"))
    r = subprocess.run([sys.executable, "-m", "lantern.zeus",
                        str(SOURCE / "examples" / "zeus" / "train.py"), *args],
                       capture_output=True, text=True, env=env, cwd="/", timeout=60)
    assert r.returncode == 0, r.stderr
    return [dict(f.split("=") for f in line.split() if "=" in f) | {"_": line.split()[0]}
            for line in r.stdout.splitlines()[1:]], r.stdout.splitlines()[0]


def test_unchanged_zeus_example_measures_energy(fake_gpus):
    env = fake_gpus("gpu GPU-aaaa1111 Fake-A\ngpu GPU-bbbb2222 Fake-B\npower 0 0 300000\n"
                    "power 1 0 120000\n")
    # steps of 0.4 s: 4 counter updates or more per window, where Lantern is within a few %
    # (0.04 s windows rest on the power samples: ±10%, inside their bound, which a Zeus
    # program does not print)
    lines, gpus = run_example(env, "--epochs", "1", "--steps", "2", "--step-seconds", "0.4")
    assert gpus == "gpus [0, 1]"
    assert [line["_"] for line in lines] == ["epoch", "step", "window"]
    for line in lines:
        seconds = float(line["time"])
        assert seconds >= 0.4
        if line["_"] != "step":
            assert close_to(float(line["gpu0"]), 300, seconds)
            assert close_to(float(line["gpu1"]), 120, seconds)
        if line["_"] != "window":
            assert close_to(float(line["total"]), 420, seconds)


def test_unchanged_zeus_example_without_gpu_measures_time(fake_gpus):
    env = fake_gpus("")
    env["LANTERN_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
    lines, gpus = run_example(env, "--epochs", "1", "--steps", "2", "--step-seconds", "0.03")
    assert gpus == "gpus []"
    epoch, step, window = lines
    assert float(epoch["time"]) >= 0.06 and float(step["time"]) >= 0.03
    assert float(window["time"]) >= 0.03
    assert epoch["total"] == step["total"] == "0.000000" and "gpu0" not in window
