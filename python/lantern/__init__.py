"""Lantern energy windows from Python: a ctypes binding of liblantern.so (include/lantern.h).

The surface follows Zeus's ZeusMonitor so code written for it runs unchanged::

    from lantern import Monitor
    monitor = Monitor(gpu_indices=[0])
    monitor.begin_window("step")
    ...                                   # GPU work
    m = monitor.end_window("step")        # Measurement(time, gpu_energy={0: J}, ...)

Beyond Zeus, each GPU energy carries an error bound and the number of counter updates inside
the window (gpu_energy_error, gpu_counter_updates), and windows too short to trust are listed
in too_short. The library is found through $LANTERN_LIBRARY, in the wheel's lantern/lib/, or in
an install prefix's or a clone's build folder (library_path). No compiled extension: pure
Python over ctypes. lantern.zeus is the drop-in for code written for Zeus; `python -m lantern`
runs the lantern command.
"""

import ctypes
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

__all__ = ["Monitor", "Measurement", "LanternError", "library_path", "ERR_GPU", "ERR_NO_NVML"]

# lantern.h's constants: generated from include/lantern.h (tests/energy/python_constants.py)
OK = 0
ERR_ARGUMENT = -1
ERR_NO_MEMORY = -2
ERR_GPU = -3
ERR_NO_WINDOW = -4
ERR_WINDOW_OPEN = -5
ERR_UNAVAILABLE = -6
ERR_THREAD = -7
ERR_NO_NVML = -8
POWER_ONLY = 0x1
NO_NVTX = 0x2
ENERGY_EXTRAPOLATED = 0x1
ENERGY_POWER_ONLY = 0x2
ENERGY_TOO_SHORT = 0x4
# end of lantern.h's constants


class LanternError(RuntimeError):
    """An error code from liblantern: lantern_errdetail's line where the call left one ("NVML
    not available: ...", "GPU 3 does not exist (2 GPUs visible)"), else what failed and
    lantern_strerror's sentence."""

    def __init__(self, code: int, what: str, detail: str = ""):
        self.code = code
        super().__init__(detail or f"{what}: {_lib().lantern_strerror(code).decode()}")


def _candidates() -> List[Path]:
    """liblantern.so's possible places, first match wins: the wheel (lantern/lib/), beside
    the module, a CMake install (<prefix>/lib/python3/site-packages/lantern -> <prefix>/lib),
    and a clone whose build/ folder is built (python/lantern -> build/lib)."""
    here = Path(__file__).resolve().parent
    return [here / "lib" / "liblantern.so", here / "liblantern.so",
            here.parents[2] / "liblantern.so", here.parents[1] / "build" / "lib" / "liblantern.so"]


def library_path() -> str:
    """Where liblantern.so is: $LANTERN_LIBRARY, else the first of _candidates() that exists,
    else the name for the dynamic loader's own search (ldconfig, LD_LIBRARY_PATH)."""
    env = os.environ.get("LANTERN_LIBRARY")
    if env:
        return env
    for candidate in _candidates():
        if candidate.exists():
            return str(candidate)
    return "liblantern.so.0"


_handle = None


def _declare(lib):
    c_monitor, c_meas = ctypes.c_void_p, ctypes.c_void_p
    signatures = {
        "lantern_libversion": (ctypes.c_char_p, []),
        "lantern_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "lantern_errdetail": (ctypes.c_char_p, []),
        "lantern_monitor_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint,
                                                ctypes.POINTER(c_monitor)]),
        "lantern_monitor_close": (None, [c_monitor]),
        "lantern_monitor_disabled_reason": (ctypes.c_char_p, [c_monitor]),
        "lantern_monitor_gpu_count": (ctypes.c_int, [c_monitor]),
        "lantern_monitor_gpu_index": (ctypes.c_int, [c_monitor, ctypes.c_int]),
        "lantern_monitor_cpu_count": (ctypes.c_int, [c_monitor]),
        "lantern_monitor_cpu_index": (ctypes.c_int, [c_monitor, ctypes.c_int]),
        "lantern_window_begin": (ctypes.c_int, [c_monitor, ctypes.c_char_p]),
        "lantern_window_end": (ctypes.c_int, [c_monitor, ctypes.c_char_p,
                                              ctypes.POINTER(c_meas)]),
        "lantern_window_push": (ctypes.c_int, [c_monitor]),
        "lantern_window_pop": (ctypes.c_int, [c_monitor, ctypes.POINTER(c_meas)]),
        "lantern_measurement_time": (ctypes.c_double, [c_meas]),
        "lantern_measurement_gpu_count": (ctypes.c_int, [c_meas]),
        "lantern_measurement_gpu_index": (ctypes.c_int, [c_meas, ctypes.c_int]),
        "lantern_measurement_gpu_energy": (ctypes.c_int, [c_meas, ctypes.c_int,
                                                          ctypes.POINTER(ctypes.c_double),
                                                          ctypes.POINTER(ctypes.c_double)]),
        "lantern_measurement_gpu_updates": (ctypes.c_int, [c_meas, ctypes.c_int]),
        "lantern_measurement_gpu_flags": (ctypes.c_uint, [c_meas, ctypes.c_int]),
        "lantern_measurement_cpu_count": (ctypes.c_int, [c_meas]),
        "lantern_measurement_cpu_index": (ctypes.c_int, [c_meas, ctypes.c_int]),
        "lantern_measurement_cpu_energy": (ctypes.c_int, [c_meas, ctypes.c_int,
                                                          ctypes.POINTER(ctypes.c_double)]),
        "lantern_measurement_dram_energy": (ctypes.c_int, [c_meas, ctypes.c_int,
                                                           ctypes.POINTER(ctypes.c_double)]),
        "lantern_measurement_free": (None, [c_meas]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def _lib():
    global _handle
    if _handle is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            raise ImportError(f"lantern: cannot load {path} ({err}); set LANTERN_LIBRARY to "
                              f"its path, or install the wheel (pip install .)") from None
        _declare(lib)
        _handle = lib
    return _handle


@dataclass
class Measurement:
    """One window's result, as Zeus's Measurement, plus Lantern's accuracy information.

    time: seconds; gpu_energy: {gpu index: joules}; cpu_energy / dram_energy: {package: joules}
    or None when RAPL is not readable here. gpu_energy_error: {gpu index: joules} bound;
    gpu_counter_updates: {gpu index: energy counter updates inside the window}; too_short:
    GPU indices whose window spans fewer than two counter updates (the value rests on the power
    sensor); gpu_flags: the raw LANTERN_ENERGY_* bits; not_measured: None, or why no energy
    at all was measured (no GPU with NVML, no readable RAPL), where total_energy reads 0."""

    time: float
    gpu_energy: Dict[int, float]
    cpu_energy: Optional[Dict[int, float]] = None
    dram_energy: Optional[Dict[int, float]] = None
    gpu_energy_error: Dict[int, float] = field(default_factory=dict)
    gpu_counter_updates: Dict[int, int] = field(default_factory=dict)
    gpu_flags: Dict[int, int] = field(default_factory=dict)
    not_measured: Optional[str] = None  # why nothing was measured (then total_energy is 0)

    @property
    def total_energy(self) -> float:
        """GPU, CPU and DRAM energy together, in joules."""
        parts = [self.gpu_energy, self.cpu_energy or {}, self.dram_energy or {}]
        return sum(sum(p.values()) for p in parts)

    @property
    def too_short(self) -> List[int]:
        return [i for i, f in self.gpu_flags.items() if f & ENERGY_TOO_SHORT]


def _read_rapl(lib, handle, count, getter) -> Optional[Dict[int, float]]:
    values = {}
    for i in range(count):
        joules = ctypes.c_double()
        if getter(handle, i, ctypes.byref(joules)) == OK:
            values[lib.lantern_measurement_cpu_index(handle, i)] = joules.value
    return values or None


def _take_measurement(handle, reason: str) -> Measurement:
    """Copies a lantern_measurement into Python objects and frees it; reason: why the GPUs
    could not be measured (the monitor's), for a measurement of nothing."""
    lib = _lib()
    try:
        result = Measurement(time=lib.lantern_measurement_time(handle), gpu_energy={})
        for i in range(lib.lantern_measurement_gpu_count(handle)):
            index = lib.lantern_measurement_gpu_index(handle, i)
            joules, bound = ctypes.c_double(), ctypes.c_double()
            if lib.lantern_measurement_gpu_energy(handle, i, ctypes.byref(joules),
                                                  ctypes.byref(bound)) != OK:
                continue
            result.gpu_energy[index] = joules.value
            result.gpu_energy_error[index] = bound.value
            result.gpu_counter_updates[index] = lib.lantern_measurement_gpu_updates(handle, i)
            result.gpu_flags[index] = lib.lantern_measurement_gpu_flags(handle, i)
        cpus = lib.lantern_measurement_cpu_count(handle)
        result.cpu_energy = _read_rapl(lib, handle, cpus, lib.lantern_measurement_cpu_energy)
        result.dram_energy = _read_rapl(lib, handle, cpus, lib.lantern_measurement_dram_energy)
        if not result.gpu_energy and not result.cpu_energy and not result.dram_energy:
            result.not_measured = (f"GPU energy: {reason}" if reason else "no GPU") + \
                "; CPU energy: no readable RAPL package"
        return result
    finally:
        lib.lantern_measurement_free(handle)


def _sync(framework: Optional[str], gpu_indices: List[int]) -> None:
    """Waits for the GPUs' queued work, as Zeus does, through the framework named. Only a
    framework the program has imported can have queued work, so one not imported is not
    imported here (importing torch takes seconds) and there is nothing to wait for."""
    module = sys.modules.get(framework or "")
    if module is None:
        return
    if framework == "torch":
        if module.cuda.is_available():
            for i in gpu_indices:
                module.cuda.synchronize(i)
    elif framework == "cupy":
        for i in gpu_indices:
            module.cuda.Device(i).synchronize()
    elif framework == "jax":
        (module.device_put(0.0) + 0).block_until_ready()


def _spec(indices) -> bytes:
    """None: all; []: none (as Zeus); else the indices, comma-separated."""
    if indices is None:
        return b""
    return ",".join(str(i) for i in indices).encode() if len(indices) else b"none"


class Monitor:
    """Measures time and energy of named windows (nested or overlapping) and of a stack of
    unnamed ones, on the chosen GPUs (CUDA indices; None: all visible) and CPU packages (None:
    all with readable RAPL; [] none). power_only=True selects the pre-Volta method (power
    integration; also LANTERN_ENERGY_METHOD=power). Zeus's ZeusMonitor arguments are accepted."""

    def __init__(self, gpu_indices: Optional[List[int]] = None,
                 cpu_indices: Optional[List[int]] = None,
                 sync_execution_with: str = "torch", power_only: bool = False,
                 approx_instant_energy: bool = False, log_file=None):
        del approx_instant_energy, log_file  # Zeus options Lantern does not need
        if sync_execution_with not in ("torch", "jax", "cupy"):
            raise ValueError(f"sync_execution_with must be torch, jax or cupy, "
                             f"not {sync_execution_with!r}")
        self._lib = _lib()
        self.sync_execution_with = sync_execution_with
        handle = ctypes.c_void_p()
        rc = self._lib.lantern_monitor_open(_spec(gpu_indices), _spec(cpu_indices),
                                            POWER_ONLY if power_only else 0, ctypes.byref(handle))
        if rc != OK:
            raise LanternError(rc, f"cannot monitor GPUs {gpu_indices} / CPUs {cpu_indices}",
                               self._lib.lantern_errdetail().decode())
        self._handle = handle
        count = self._lib.lantern_monitor_gpu_count(handle)
        self.gpu_indices = [self._lib.lantern_monitor_gpu_index(handle, i) for i in range(count)]
        count = self._lib.lantern_monitor_cpu_count(handle)
        self.cpu_indices = [self._lib.lantern_monitor_cpu_index(handle, i) for i in range(count)]
        if not self.gpu_indices and self.disabled_reason:  # said once, as `lantern energy` does
            warnings.warn(f"lantern: GPU energy not measured: {self.disabled_reason}",
                          RuntimeWarning, stacklevel=2)

    @property
    def disabled_reason(self) -> str:
        """Why GPU energy cannot be measured here, or '' when it can."""
        return self._lib.lantern_monitor_disabled_reason(self._handle).decode()

    def _check_open(self):
        if not self._handle:
            raise ValueError("monitor is closed")

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        """Begins the window `key`; ValueError if a window of that name is open."""
        self._check_open()
        if sync_execution:
            _sync(self.sync_execution_with, self.gpu_indices)
        rc = self._lib.lantern_window_begin(self._handle, key.encode())
        if rc == ERR_WINDOW_OPEN:
            raise ValueError(f"measurement window '{key}' already exists")
        if rc != OK:
            raise LanternError(rc, f"cannot begin window '{key}'")

    def end_window(self, key: str, sync_execution: bool = True,
                   cancel: bool = False) -> Optional[Measurement]:
        """Ends the window `key` and returns its Measurement (None with cancel=True)."""
        self._check_open()
        if sync_execution and not cancel:
            _sync(self.sync_execution_with, self.gpu_indices)
        handle = ctypes.c_void_p()
        rc = self._lib.lantern_window_end(self._handle, key.encode(), ctypes.byref(handle))
        if rc == ERR_NO_WINDOW:
            raise ValueError(f"measurement window '{key}' does not exist")
        if rc != OK:
            raise LanternError(rc, f"cannot end window '{key}'")
        measurement = _take_measurement(handle, self.disabled_reason)
        return None if cancel else measurement

    def push_window(self, sync_execution: bool = True) -> None:
        """Begins an unnamed window on the stack."""
        self._check_open()
        if sync_execution:
            _sync(self.sync_execution_with, self.gpu_indices)
        rc = self._lib.lantern_window_push(self._handle)
        if rc != OK:
            raise LanternError(rc, "cannot push a window")

    def pop_window(self, sync_execution: bool = True) -> Tuple[float, Dict[int, float]]:
        """Ends the innermost pushed window: (seconds, {gpu index: joules})."""
        self._check_open()
        if sync_execution:
            _sync(self.sync_execution_with, self.gpu_indices)
        handle = ctypes.c_void_p()
        rc = self._lib.lantern_window_pop(self._handle, ctypes.byref(handle))
        if rc == ERR_NO_WINDOW:
            raise ValueError("no pushed window to pop")
        if rc != OK:
            raise LanternError(rc, "cannot pop a window")
        measurement = _take_measurement(handle, self.disabled_reason)
        return measurement.time, measurement.gpu_energy

    def window(self, key: str, sync_execution: bool = True) -> "_Window":
        """A context manager: `with monitor.window("x") as w: ...`, then w.measurement."""
        return _Window(self, key, sync_execution)

    def close(self) -> None:
        """Stops sampling; open windows are dropped."""
        if self._handle:
            self._lib.lantern_monitor_close(self._handle)
            self._handle = None

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None):
            self.close()


class _Window:
    def __init__(self, monitor: Monitor, key: str, sync_execution: bool):
        self.monitor, self.key, self.sync_execution = monitor, key, sync_execution
        self.measurement: Optional[Measurement] = None

    def __enter__(self) -> "_Window":
        self.monitor.begin_window(self.key, self.sync_execution)
        return self

    def __exit__(self, *exc) -> None:
        self.measurement = self.monitor.end_window(self.key, self.sync_execution)
