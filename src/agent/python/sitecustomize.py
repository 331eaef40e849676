"""Put first on PYTHONPATH by `lantern profile` (src/cli/cmd_profile.c): Python imports this
module at start-up (the site module's sitecustomize hook). It names threads from
threading.Thread.name (lantern_threads.py, beside it) and multiprocessing's children from their
Process.name (lantern_processes.py), starts the agent for CPU sampling when -t names cpu (so a
Python process is sampled from start-up, NVTX or not), starts the function recording of
--python-functions when asked (lantern_pyfunctions.py), then imports the sitecustomize this
one hides, if the installation or the environment has one, so that its behaviour is kept.
Its folder is then taken off sys.path: the program sees the path it would see without us (the
environment keeps PYTHONPATH, so Python child processes are recorded too)."""

import importlib
import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop(__name__)
    hidden = [p for p in sys.path if os.path.abspath(p or ".") == here]
    for p in hidden:
        sys.path.remove(p)
    try:
        importlib.import_module("sitecustomize")  # the next one on sys.path, if any
    except ImportError as err:
        if err.name != "sitecustomize":
            raise
    finally:
        sys.modules.setdefault(__name__, ours)  # the hidden one, if found, keeps the name


try:
    try:
        import lantern_threads

        lantern_threads.install()
    except Exception:
        pass  # thread names are a nicety: never an error in the program
    try:
        import lantern_processes

        lantern_processes.install()
    except Exception:
        pass  # so are multiprocessing children's names
    if "cpu" in os.environ.get("LANTERN_TRACE", "").split(","):
        try:  # CPU samples from the first line, NVTX or not (docs/cpu.md)
            import ctypes

            ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"]).lantern_agent_start_cpu_sampling()
        except Exception:
            pass  # never an error in the program
    if os.environ.get("LANTERN_PYTHON_FUNCTIONS"):
        import lantern_pyfunctions

        lantern_pyfunctions.install()
finally:
    _chain()
