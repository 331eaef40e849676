"""Thread names for Python programs under `lantern profile`, with no change to the program:
sitecustomize.py (beside this file) calls install() at start-up in every Python process. Each
threading.Thread hands its name to the agent (liblantern-agent.so's
lantern_agent_python_thread_name, src/agent/names.c, through ctypes) as it starts and whenever
it is renamed; the agent writes it as TRACE_THREAD_PYTHON_NAME (docs/trace-format.md). Nothing
here may raise into the program: on any failure names are simply not recorded."""

import os
import threading


def install():
    agent_path = os.environ.get("NVTX_INJECTION64_PATH")
    if not agent_path or not os.environ.get("LANTERN_SESSION_DIR"):
        return
    thread = threading.Thread
    if not hasattr(thread, "_bootstrap_inner") or not isinstance(thread.name, property):
        return
    state = {"fn": None, "broken": False}

    def tell(tid, name):
        if state["broken"] or not tid:
            return
        try:
            if state["fn"] is None:  # the first thread to start loads the agent
                import ctypes

                fn = ctypes.CDLL(agent_path).lantern_agent_python_thread_name
                fn.argtypes = (ctypes.c_uint32, ctypes.c_char_p)
                fn.restype = ctypes.c_int
                state["fn"] = fn
            state["fn"](tid, str(name).encode("utf-8", "replace"))
        except Exception:
            state["broken"] = True

    bootstrap_inner = thread._bootstrap_inner
    name_property = thread.name

    def _bootstrap_inner(self):
        tell(threading.get_native_id(), self._name)
        bootstrap_inner(self)

    def set_name(self, name):
        name_property.fset(self, name)
        tell(getattr(self, "_native_id", None), self._name)

    thread._bootstrap_inner = _bootstrap_inner
    thread.name = property(name_property.fget, set_name, doc=name_property.__doc__)
