"""Zeus compatibility: code written for Zeus's energy API runs on Lantern unchanged.

Two ways (docs/energy.md, "Code written for Zeus"):

* change the import: ``from lantern.zeus import ZeusMonitor`` (also Measurement,
  ZeusProfilingService, ProfilingResult, sync_execution);
* change nothing: ``python -m lantern.zeus train.py ARGS`` (or ``lantern profile -- python -m
  lantern.zeus train.py``) runs the script with the module names ``zeus``, ``zeus.monitor``,
  ``zeus.monitor.energy``, ``zeus.profiling`` and ``zeus.utils.framework`` pointing here, for
  that run only; nothing named ``zeus`` is installed, so a real Zeus stays untouched.

The surfaces follow Zeus's own: ZeusMonitor(gpu_indices, cpu_indices, approx_instant_energy,
log_file, sync_execution_with) with begin_window/end_window(key, sync_execution, cancel) and
the same ValueError messages; Measurement(time, gpu_energy, cpu_energy, dram_energy,
soc_energy) whose total_energy is, as in Zeus, the GPUs' energy; the seed document's
ZeusProfilingService(gpu_indices, monitor_path, monitor_log_dir, monitor_log_prefix) with
push_window()/pop_window() -> ProfilingResult(time, energy: list in gpu_indices order).
Energy comes from Lantern's sampler (lantern.Monitor), which interpolates between counter
updates, so approx_instant_energy is accepted but never needed, and GPUs older than Volta
need no monitor process (monitor_path is accepted and unused).
"""

import os
import runpy
import sys
import time
import types
from dataclasses import dataclass
from typing import Dict, List, Optional

import lantern

__all__ = ["ZeusMonitor", "Measurement", "ZeusProfilingService", "ProfilingResult",
           "sync_execution", "install"]


def sync_execution(gpu_devices: List[int], sync_with: str = "torch") -> None:
    """Waits until the given GPUs finish the work queued through torch, jax or cupy, as Zeus's
    zeus.utils.framework.sync_execution. A framework the program has not imported has no work
    queued, so nothing is waited for (Zeus would import it, or fail without it)."""
    if sync_with not in ("torch", "jax", "cupy"):
        raise RuntimeError("No framework is available.")
    lantern._sync(sync_with, gpu_devices)


@dataclass
class Measurement(lantern.Measurement):
    """Zeus's Measurement: time (s), gpu_energy {GPU index: J}, cpu_energy and dram_energy
    {package: J} or None, soc_energy (always None here); plus Lantern's error bounds."""

    soc_energy: Optional[object] = None

    @property
    def total_energy(self) -> float:
        """The GPUs' energy in joules, as Zeus's Measurement.total_energy (CPU not included)."""
        return sum(self.gpu_energy.values())

    @classmethod
    def _of(cls, m: lantern.Measurement) -> "Measurement":
        return cls(time=m.time, gpu_energy=m.gpu_energy, cpu_energy=m.cpu_energy,
                   dram_energy=m.dram_energy, gpu_energy_error=m.gpu_energy_error,
                   gpu_counter_updates=m.gpu_counter_updates, gpu_flags=m.gpu_flags)


class ZeusMonitor:
    """Zeus's ZeusMonitor over lantern.Monitor: named windows that may nest or overlap."""

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 cpu_indices: Optional[List[int]] = None, approx_instant_energy: bool = False,
                 log_file=None, sync_execution_with: str = "torch") -> None:
        self.approx_instant_energy = approx_instant_energy
        self.sync_with = sync_execution_with
        self._monitor = lantern.Monitor(gpu_indices=gpu_indices, cpu_indices=cpu_indices,
                                        sync_execution_with=sync_execution_with)
        self.gpu_indices = self._monitor.gpu_indices
        self.cpu_indices = self._monitor.cpu_indices
        self._start_times: Dict[str, float] = {}
        self.log_file = None
        if log_file is not None:
            if os.path.dirname(log_file):
                os.makedirs(os.path.dirname(log_file), exist_ok=True)
            self.log_file = open(log_file, "w")
            columns = ",".join(f"gpu{i}_energy" for i in self.gpu_indices)
            self.log_file.write(f"start_time,window_name,elapsed_time,{columns}\n")
            self.log_file.flush()

    def _sync(self, sync: bool) -> None:
        if sync and self.gpu_indices:
            sync_execution(self.gpu_indices, self.sync_with)

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        """Begins the window `key`; ValueError if one of that name is open."""
        if key in self._start_times:
            raise ValueError(f"Measurement window '{key}' already exists")
        self._sync(sync_execution)
        self._monitor.begin_window(key, sync_execution=False)
        self._start_times[key] = time.time()

    def end_window(self, key: str, sync_execution: bool = True,
                   cancel: bool = False) -> Measurement:
        """Ends the window `key` and returns its Measurement (zeros with cancel=True, as
        Zeus); ValueError if no window of that name is open."""
        start = self._start_times.pop(key, None)
        if start is None:
            raise ValueError(f"Measurement window '{key}' does not exist")
        self._sync(sync_execution)
        m = self._monitor.end_window(key, sync_execution=False)
        if cancel:
            return Measurement(time=0.0, gpu_energy={i: 0.0 for i in self.gpu_indices},
                               cpu_energy={i: 0.0 for i in self.cpu_indices})
        result = Measurement._of(m)
        if self.log_file is not None:
            energies = ",".join(str(result.gpu_energy.get(i, 0.0)) for i in self.gpu_indices)
            self.log_file.write(f"{start},{key},{result.time},{energies}\n")
            self.log_file.flush()
        return result


@dataclass
class ProfilingResult:
    """One ZeusProfilingService window: time (s) and energy (J) per GPU, in gpu_indices order."""

    time: float
    energy: List[float]


class ZeusProfilingService:
    """The seed document's ZeusProfilingService: a stack of unnamed windows over all or the
    given GPUs. The monitor_* arguments (Zeus's power-polling process for pre-Volta GPUs) are
    accepted; Lantern integrates power itself where a GPU has no energy counter."""

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 monitor_path: str = "zeus_monitor", monitor_log_dir: str = "",
                 monitor_log_prefix: str = "") -> None:
        self.monitor_path = monitor_path
        self.monitor_log_dir = monitor_log_dir
        self.monitor_log_prefix = monitor_log_prefix
        self._monitor = lantern.Monitor(gpu_indices=gpu_indices, cpu_indices=[])
        self.gpu_indices = self._monitor.gpu_indices

    def push_window(self) -> None:
        """Begins a window on the stack (after waiting for the GPUs' queued work)."""
        self._monitor.push_window()

    def pop_window(self) -> ProfilingResult:
        """Ends the innermost window: ProfilingResult(time, [J per GPU]); RuntimeError when
        no window is open, as Zeus."""
        try:
            seconds, energy = self._monitor.pop_window()
        except ValueError:
            raise RuntimeError(
                "No profiling window active. Consider calling `push_window` first.") from None
        return ProfilingResult(seconds, [energy.get(i, 0.0) for i in self.gpu_indices])


# ---- running unchanged Zeus programs --------------------------------------------------------

_ALIASES = {
    "zeus": ["monitor", "profiling", "utils"],
    "zeus.monitor": ["ZeusMonitor", "Measurement", "energy"],
    "zeus.monitor.energy": ["ZeusMonitor", "Measurement"],
    "zeus.profiling": ["ZeusProfilingService", "ProfilingResult"],
    "zeus.utils": ["framework"],
    "zeus.utils.framework": ["sync_execution"],
}


def install() -> None:
    """Makes `import zeus.monitor` (and the other Zeus modules above) resolve to this module's
    classes in this process. Refuses to shadow a Zeus that is already imported."""
    if "zeus" in sys.modules and not getattr(sys.modules["zeus"], "__lantern__", False):
        raise RuntimeError("lantern.zeus: the real zeus is already imported in this process")
    modules = {}
    for name in _ALIASES:
        module = types.ModuleType(name, f"Lantern's stand-in for {name} (lantern.zeus)")
        module.__lantern__ = True
        module.__path__ = []  # a package, so submodules import
        modules[name] = module
    this = sys.modules[__name__]
    for name, attributes in _ALIASES.items():
        for attribute in attributes:
            child = modules.get(f"{name}.{attribute}")
            setattr(modules[name], attribute, child if child else getattr(this, attribute))
    sys.modules.update(modules)


def _main(argv: List[str]) -> None:
    """python -m lantern.zeus SCRIPT [ARGS...]: runs SCRIPT as __main__ with install() done."""
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: python -m lantern.zeus SCRIPT [ARGS...]\n"
                         "Runs a program written for Zeus (zeus.monitor.ZeusMonitor, "
                         "zeus.profiling.ZeusProfilingService) on Lantern, unchanged.\n")
        sys.exit(0 if argv else 2)
    install()
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python SCRIPT` sets it
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    import lantern.zeus as _self  # the module, not this __main__ copy, holds the classes

    _self._main(sys.argv[1:])
