"""`lantern profile --python-backtrace` on any machine: it needs -t cuda (usage error, exit 2,
one line), passes LANTERN_PYTHON_BACKTRACE=1 to the program, is off without the option, and is
listed by --help with where its cost is measured."""
import os
import subprocess
from pathlib import Path

BUILD = Path(os.environ.get("LANTERN_BUILD", Path(__file__).resolve().parents[2] / "build"))
LANTERN = str(BUILD / "bin" / "lantern")
ENV = {k: v for k, v in os.environ.items()
       if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LANTERN_PYTHON_BACKTRACE")}
SHOW = ["sh", "-c", "echo \"bt=${LANTERN_PYTHON_BACKTRACE:-unset}\""]


def lantern(*args, cwd=None):
    return subprocess.run([LANTERN, *args], capture_output=True, text=True, cwd=cwd, env=ENV,
                          timeout=60)


def test_needs_cuda_tracing():
    run = lantern("profile", "-t", "nvtx", "--python-backtrace", "--", "true")
    assert run.returncode == 2
    assert run.stderr.splitlines()[0] == "lantern: --python-backtrace needs -t cuda"


def test_passes_the_switch_to_the_program(tmp_path):
    run = lantern("profile", "-t", "cuda,nvtx", "--python-backtrace", "-o",
                  str(tmp_path / "on.db"), "--", *SHOW)
    assert run.returncode == 0, run.stderr
    assert "bt=1" in run.stdout.splitlines()


def test_off_by_default(tmp_path):
    run = lantern("profile", "-t", "cuda,nvtx", "-o", str(tmp_path / "off.db"), "--", *SHOW)
    assert run.returncode == 0, run.stderr
    assert "bt=unset" in run.stdout.splitlines()


def test_help_states_where_the_cost_is_measured():
    run = lantern("profile", "--help")
    text = " ".join(run.stdout.split())
    assert "--python-backtrace" in text
    assert "cost measured in docs/benchmarks.md" in text
    assert "adds about 5 us per kernel launch" in text
