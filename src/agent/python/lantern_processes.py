"""Process names for the children of Python's multiprocessing under `lantern profile`, with no
change to the program: sitecustomize.py (beside this file) calls install() at start-up in every
Python process. As a child's Process starts (its _bootstrap, whatever the start method), it
hands the agent (liblantern-agent.so's lantern_agent_python_process_name, src/agent/names.c,
through ctypes) its Process.name and the program it runs (python PATH or python -m MODULE, from
__main__, which multiprocessing sets to the parent's), so the importer names it
`train.py:loader-0` rather than `python3 -c` (docs/trace-format.md, TRACE_PROCESS_PYTHON_NAME).
The parent is never changed: the hook goes in only in a child. Nothing here may raise into the
program: on any failure the name is simply not recorded."""

import os
import sys


def _main_command():
    """The program __main__ runs, as a command line: ["python", "-m", MODULE] or ["python", PATH]."""
    main = sys.modules.get("__main__")
    module = getattr(getattr(main, "__spec__", None), "name", None)
    if module:
        if module.endswith(".__main__"):
            module = module[: -len(".__main__")]
        return ["python", "-m", module]
    path = getattr(main, "__file__", None)
    return ["python", path] if path else ["python"]


def _tell(agent_path, name):
    try:
        import ctypes

        fn = ctypes.CDLL(agent_path).lantern_agent_python_process_name
        fn.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p)
        fn.restype = ctypes.c_int
        main = b"\0".join(os.fsencode(a) for a in _main_command())
        fn(main, len(main), str(name).encode("utf-8", "replace"))
    except Exception:
        pass


def _hook(agent_path):
    """Wraps multiprocessing's BaseProcess._bootstrap, which runs first in every child."""
    process = sys.modules.get("multiprocessing.process")
    base = getattr(process, "BaseProcess", None)
    bootstrap = getattr(base, "_bootstrap", None)
    if bootstrap is None or getattr(bootstrap, "_lantern", False):
        return

    def _bootstrap(self, *args, **kwargs):
        _tell(agent_path, self.name)
        return bootstrap(self, *args, **kwargs)

    _bootstrap._lantern = True
    base._bootstrap = _bootstrap


def install():
    agent_path = os.environ.get("NVTX_INJECTION64_PATH")
    if not agent_path or not os.environ.get("LANTERN_SESSION_DIR"):
        return
    # fork and forkserver children: forked from a process that has imported multiprocessing
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _hook(agent_path))
    # spawn children: a new interpreter started as `python -c ... --multiprocessing-fork`
    if "--multiprocessing-fork" in sys.argv:
        import multiprocessing.process  # what spawn_main imports next anyway

        _hook(agent_path)
