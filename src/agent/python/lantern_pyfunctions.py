"""`lantern profile --python-functions PATTERNS`: inside the profiled Python program, records
each call of the functions PATTERNS names as an NVTX push/pop range (domain "python", named by
the function's module and qualified name), without changing the program.

Loaded by the sitecustomize.py beside it, which the launcher puts first on PYTHONPATH
($LANTERN_PYTHON_FUNCTIONS holds the patterns). The ranges go through the NVTX injection the
launcher already set up: this module loads the agent ($NVTX_INJECTION64_PATH) and calls its
InitializeInjectionNvtx2 as NVTX's own loader does, handing it a function table of one module
(CORE2), so the Python `nvtx` package is not needed.

How calls are seen: on Python >= 3.12, sys.monitoring (PEP 669) calls back once at the first
start of each function and the event is disabled there for every function that does not
match, so the rest of the program runs at full speed; matched functions get start, return,
yield and resume events on their own code only. On 3.9-3.11 a profile function sees every
Python call and return. Either way the callbacks are the agent's C ones (src/agent/pyfunc.c:
a table lookup and the agent's push or pop, no Python-level call per event); this module only
classifies each code object once. Where the agent cannot use this Python's C API (3.8, a
free-threaded build, an interpreter that does not export its symbols) the same callbacks run
in Python, with a ctypes call per push and pop. docs/benchmarks.md measures both.

A pattern is a dotted name matched (fnmatch, `*` spans dots) against `module.qualname` of the
function's code (`mypkg.*`, `app.Model.forward`, `__main__.step`); a name without wildcards may
also be the path a package exports it under (`pandas.DataFrame.groupby`, defined in
pandas.core.frame), checked when the package is imported. Only functions and methods are
recorded (not module or class bodies, lambdas or comprehensions). Generators and coroutines
get one range per run between resumptions, as in a profiler's call/return view.
"""

import ctypes
import fnmatch
import os
import sys
import threading

DOMAIN = b"python"
hot_path = None  # how the calls are seen, once installed: "C sys.monitoring", "C profile", ...

# NVTX's injection interface (nvtx3/nvtxDetail/nvtxTypes.h, nvToolsExt.h)
_ETID_CALLBACKS = 1
_CB_MODULE_CORE2 = 5
_CBID_CORE2_SIZE = 16
_CBID_RANGE_PUSH_EX, _CBID_RANGE_POP = 4, 5
_CBID_REGISTER_STRING_A, _CBID_DOMAIN_CREATE_A = 10, 12
_NVTX_VERSION = 3
_MESSAGE_TYPE_REGISTERED = 3
_CO_NEWLOCALS = 0x2  # a function's code (inspect.CO_NEWLOCALS)


class _EventAttributes(ctypes.Structure):  # nvtxEventAttributes_t (v2), 48 bytes
    _fields_ = [("version", ctypes.c_uint16), ("size", ctypes.c_uint16),
                ("category", ctypes.c_uint32), ("colorType", ctypes.c_int32),
                ("color", ctypes.c_uint32), ("payloadType", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("payload", ctypes.c_uint64),
                ("messageType", ctypes.c_int32), ("message", ctypes.c_void_p)]


_GetModuleFunctionTable = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(ctypes.c_uint))


class _ExportTableCallbacks(ctypes.Structure):  # NvtxExportTableCallbacks
    _fields_ = [("struct_size", ctypes.c_size_t), ("get_module_table", _GetModuleFunctionTable)]


_GetExportTable = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)


class _Nvtx:
    """The agent's CORE2 functions, obtained through its injection entry point: push and pop
    as addresses for the C hot path, and as ctypes functions for the Python one."""

    def __init__(self, agent_path):
        self._slots = (ctypes.c_void_p * _CBID_CORE2_SIZE)()
        self._table = (ctypes.POINTER(ctypes.c_void_p) * _CBID_CORE2_SIZE)(
            *[ctypes.pointer(ctypes.c_void_p.from_buffer(self._slots, i * 8))
              for i in range(_CBID_CORE2_SIZE)])
        self._get_module_table = _GetModuleFunctionTable(self._module_table)
        self._callbacks = _ExportTableCallbacks(ctypes.sizeof(_ExportTableCallbacks),
                                                self._get_module_table)
        self._get_export_table = _GetExportTable(self._export_table)
        agent = ctypes.CDLL(agent_path)
        initialize = agent.InitializeInjectionNvtx2
        initialize.argtypes, initialize.restype = [_GetExportTable], ctypes.c_int
        if initialize(self._get_export_table) != 1:
            raise OSError("the agent is not recording (no session)")
        slot = self._slots
        if not all(slot[i] for i in (_CBID_RANGE_PUSH_EX, _CBID_RANGE_POP,
                                     _CBID_REGISTER_STRING_A, _CBID_DOMAIN_CREATE_A)):
            raise OSError("the agent left the NVTX functions unset")
        create = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(slot[_CBID_DOMAIN_CREATE_A])
        self._register = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
            slot[_CBID_REGISTER_STRING_A])
        self.push_address, self.pop_address = slot[_CBID_RANGE_PUSH_EX], slot[_CBID_RANGE_POP]
        self.push = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
            self.push_address)
        self.pop = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(self.pop_address)
        self.domain = ctypes.c_void_p(create(DOMAIN))

    def _export_table(self, table_id):
        return ctypes.addressof(self._callbacks) if table_id == _ETID_CALLBACKS else None

    def _module_table(self, module, out_table, out_size):
        if module != _CB_MODULE_CORE2:
            return 0
        out_table[0] = ctypes.addressof(self._table)
        out_size[0] = _CBID_CORE2_SIZE - 1
        return 1

    def attributes(self, name):
        """A push's attributes for `name`, registered once: (struct, pointer to it)."""
        attributes = _EventAttributes(version=_NVTX_VERSION,
                                      size=ctypes.sizeof(_EventAttributes),
                                      messageType=_MESSAGE_TYPE_REGISTERED,
                                      message=self._register(self.domain, name.encode()))
        return attributes, ctypes.cast(ctypes.pointer(attributes), ctypes.c_void_p)


class _Matcher:
    """Decides once per code object whether its function is one the patterns name."""

    def __init__(self, patterns):
        self.patterns = patterns
        self.exact = [p for p in patterns if not any(c in p for c in "*?[")]
        self.resolved = set()  # codes of exact patterns found through their package's path

    def name(self, code, frame):
        module = frame.f_globals.get("__name__", "?") if frame is not None else "?"
        qualname = getattr(code, "co_qualname", None) or _qualname_before_311(code, frame)
        return f"{module}.{qualname}"

    def matches(self, code, name):
        # functions and methods only: not module or class bodies, lambdas or comprehensions
        if not code.co_flags & _CO_NEWLOCALS or code.co_name.startswith("<"):
            return False
        if any(fnmatch.fnmatchcase(name, p) for p in self.patterns):
            return True
        return any(p.rsplit(".", 1)[-1] == code.co_name and self._resolves_to(p, code)
                   for p in self.exact)

    def _resolves_to(self, pattern, code):
        """pandas.DataFrame.groupby: the object at that path, once its package is imported,
        has this code (through decorators' __wrapped__ and methods' __func__)."""
        parts = pattern.split(".")
        for i in range(len(parts) - 1, 0, -1):
            obj = sys.modules.get(".".join(parts[:i]))
            if obj is None:
                continue
            try:
                for attribute in parts[i:]:
                    obj = getattr(obj, attribute)
            except Exception:  # any attribute error or a property raising: not this path
                return False
            for _ in range(16):
                if getattr(obj, "__code__", None) is code:
                    return True
                obj = getattr(obj, "__wrapped__", None) or getattr(obj, "__func__", None)
                if obj is None:
                    break
            return False
        return False


def _qualname_before_311(code, frame):
    """Python < 3.11 has no co_qualname: a method is found through its first argument's class
    (self or cls); a nested function is named by its own name only."""
    name = code.co_name
    if frame is None or not code.co_argcount or code.co_varnames[0] not in ("self", "cls"):
        return name
    first = frame.f_locals.get(code.co_varnames[0])
    cls = first if isinstance(first, type) else type(first)
    for klass in getattr(cls, "__mro__", ()):
        function = klass.__dict__.get(name)
        function = getattr(function, "__func__", function)
        if getattr(function, "__code__", None) is code:
            return f"{klass.__qualname__}.{name}"
    return name


RECORDED_MAX = 1 << 16  # recorded codes kept, at most (src/agent/pyfunc.c)
UNRECORDED_MAX = 1 << 14  # codes not recorded kept, at most: PYFUNC_UNRECORDED_MAX there


class _Recorder:
    """Pushes and pops the ranges: the attributes of each matched code, made once. A program
    that compiles code forever must not grow it without bound: at most RECORDED_MAX codes are
    recorded, a later code that matches is not and is counted (the agent's
    lantern_pyfunc_not_kept, the Lost events line), and the codes not recorded are all
    forgotten when they reach UNRECORDED_MAX (a cache that only saves their classification)."""

    def __init__(self, nvtx, matcher, agent_path):
        self.nvtx, self.matcher = nvtx, matcher
        self.ranges = {}  # code -> attribute pointer (matched) or None (not recorded)
        self.unrecorded = 0  # of self.ranges, the codes not recorded
        self.not_kept = ctypes.CDLL(agent_path).lantern_pyfunc_not_kept
        self.lock = threading.RLock()  # classification only, never on the call path

    def _forget_unrecorded(self):
        """In place: the callbacks of the Python path hold self.ranges itself."""
        for code in [c for c, entry in self.ranges.items() if entry is None]:
            del self.ranges[code]
        self.unrecorded = 0

    def classify(self, code, frame):
        with self.lock:
            if code in self.ranges:
                return self.ranges[code]
            if self.unrecorded >= UNRECORDED_MAX:
                self._forget_unrecorded()
            name = self.matcher.name(code, frame)
            entry = None
            if self.matcher.matches(code, name):
                if len(self.ranges) - self.unrecorded < RECORDED_MAX:
                    attributes, pointer = self.nvtx.attributes(name)
                    entry = (pointer, attributes)  # attributes kept alive with the pointer
                else:
                    self.not_kept()
            self.ranges[code] = entry
            self.unrecorded += entry is None
            return entry


def _c_hot_path(recorder, agent_path, classify, disable):
    """The agent's C callbacks (src/agent/pyfunc.c), or None where they cannot be used (a
    Python without the GIL, or whose C API the agent cannot find): then the Python ones."""
    if getattr(sys, "_is_gil_enabled", lambda: True)() is False:
        return None
    if os.environ.get("LANTERN_PYFUNC_HOT_PATH") == "python":  # the tests' way to the fallback
        return None
    agent = ctypes.PyDLL(agent_path)  # PyDLL: called with the GIL held
    start = agent.lantern_pyfunc_start
    start.argtypes = [ctypes.c_void_p] * 3 + [ctypes.py_object] * 2
    start.restype = ctypes.c_int
    nvtx = recorder.nvtx
    if start(nvtx.push_address, nvtx.pop_address, nvtx.domain, classify, disable) != 0:
        return None
    return agent


def _address(entry):
    return None if entry is None else entry[0].value


def _install_monitoring(recorder, agent_path):
    """Python >= 3.12: PEP 669 events, disabled at each non-matching function's start."""
    monitoring = sys.monitoring
    events = monitoring.events
    tool = next((t for t in (monitoring.PROFILER_ID, 3, 4, monitoring.OPTIMIZER_ID)
                 if monitoring.get_tool(t) is None), None)
    if tool is None:
        raise OSError("every sys.monitoring tool id is in use")
    local = events.PY_RETURN | events.PY_YIELD | events.PY_RESUME

    def classify(code, frame):
        """The C hot path's question, once per code: the attributes' address, or None."""
        entry = recorder.classify(code, sys._getframe(1))
        if entry is not None:
            monitoring.set_local_events(tool, code, local)
        return _address(entry)

    global hot_path
    agent = _c_hot_path(recorder, agent_path, classify, monitoring.DISABLE)
    monitoring.use_tool_id(tool, "lantern --python-functions")
    hot_path = "C sys.monitoring" if agent is not None else "python sys.monitoring"
    if agent is not None:
        callback = agent.lantern_pyfunc_callback
        callback.argtypes, callback.restype = [ctypes.c_int], ctypes.py_object
        on_start, on_resume, on_end = callback(0), callback(1), callback(2)
        on_throw = on_resume
    else:
        on_start, on_resume, on_throw, on_end = _python_monitoring_callbacks(recorder, tool,
                                                                           local)
    register = monitoring.register_callback
    register(tool, events.PY_START, on_start)
    register(tool, events.PY_RESUME, on_resume)
    register(tool, events.PY_THROW, on_throw)
    register(tool, events.PY_RETURN, on_end)
    register(tool, events.PY_YIELD, on_end)
    register(tool, events.PY_UNWIND, on_end)
    monitoring.set_events(tool, events.PY_START | events.PY_THROW | events.PY_UNWIND)


def _python_monitoring_callbacks(recorder, tool, local):
    """The same callbacks in Python, with a ctypes call per push and pop (~0.3 us each)."""
    monitoring = sys.monitoring
    push, pop, domain = recorder.nvtx.push, recorder.nvtx.pop, recorder.nvtx.domain
    ranges, disable = recorder.ranges, monitoring.DISABLE

    def on_start(code, offset):
        entry = ranges.get(code, 0)
        if entry == 0:
            entry = recorder.classify(code, sys._getframe(1))
            if entry is not None:
                monitoring.set_local_events(tool, code, local)
        if entry is None:
            return disable
        push(domain, entry[0])

    def on_resume(code, offset, *exception):  # PY_RESUME; PY_THROW has the exception too
        entry = ranges.get(code)
        if entry is not None:
            push(domain, entry[0])

    def on_end(code, offset, value):  # PY_RETURN, PY_YIELD, PY_UNWIND
        if ranges.get(code) is not None:
            pop(domain)

    return on_start, on_resume, on_resume, on_end


def _install_setprofile(recorder, agent_path):
    """Python < 3.12: a profile function on every thread; the agent's C one (3.9-3.11) where
    it can be used, else one in Python that returns at once for a code known not to match."""
    push, pop, domain = recorder.nvtx.push, recorder.nvtx.pop, recorder.nvtx.domain
    ranges = recorder.ranges

    def python_profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            entry = ranges.get(code, 0)
            if entry == 0:
                entry = recorder.classify(code, frame)
            if entry is not None:
                push(domain, entry[0])
        elif event == "return":
            if ranges.get(frame.f_code) is not None:
                pop(domain)

    def classify(code, frame):
        return _address(recorder.classify(code, frame))

    global hot_path
    agent = _c_hot_path(recorder, agent_path, classify, None)
    if agent is not None:
        profile_thread = agent.lantern_pyfunc_profile_thread
        profile_thread.argtypes, profile_thread.restype = [ctypes.py_object], ctypes.c_int
    if agent is None or profile_thread(python_profile) != 0:
        threading.setprofile(python_profile)
        sys.setprofile(python_profile)
        hot_path = "python setprofile"
        return

    def new_thread(frame, event, arg):
        """A new thread's first event: hand the thread to the C profile function, after
        handling this event the Python way (its return is then seen by the C one)."""
        profile_thread(python_profile)
        python_profile(frame, event, arg)

    threading.setprofile(new_thread)
    hot_path = "C profile"


def install():
    """Starts recording the functions of $LANTERN_PYTHON_FUNCTIONS; one `lantern:` line on
    stderr and nothing recorded if that cannot be done."""
    patterns = [p.strip() for p in os.environ.get("LANTERN_PYTHON_FUNCTIONS", "").split(",")
                if p.strip()]
    agent = os.environ.get("NVTX_INJECTION64_PATH")
    if not patterns or not agent:
        return
    try:
        recorder = _Recorder(_Nvtx(agent), _Matcher(patterns), agent)
        if hasattr(sys, "monitoring"):
            _install_monitoring(recorder, agent)
        else:
            _install_setprofile(recorder, agent)
    except (OSError, AttributeError, ValueError) as err:
        sys.stderr.write(f"lantern: --python-functions: Python functions not recorded: {err}\n")
