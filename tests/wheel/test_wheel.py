"""The installed wheel, in a fresh venv ($LANTERN_WHEEL_VENV, made by scripts/wheel.sh): the
`lantern` command and `python -m lantern` run the bundled executable, which finds the agent in
the package; `import lantern` finds its own library; a Python program profiled under the
installed launcher has its ranges in the database (energy windows, and --python-functions
from the bootstrap installed beside the agent), its threads and processes their names; an
unchanged Zeus program runs. Nothing
from the source tree or the build folders is used: the environment is scrubbed and the
commands run in a temporary folder."""

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

VENV = Path(os.environ.get("LANTERN_WHEEL_VENV", "/nonexistent"))
SOURCE = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not VENV.is_dir(), reason="no LANTERN_WHEEL_VENV (scripts/wheel.sh)")

PROGRAM = '''
import lantern


def compute(n):
    return sum(range(n))


monitor = lantern.Monitor(gpu_indices=None, cpu_indices=[])
for i in range(3):
    with monitor.window("step"):
        compute(10000)
compute(1)
print("library", lantern.library_path())
'''


def run(*args, cwd, **kw):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LANTERN_", "PYTHON", "NVTX_", "CUDA_INJECTION"))}
    env["PATH"] = f"{VENV / 'bin'}:{env['PATH']}"
    env["LANTERN_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"  # the same without a GPU
    r = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120, **kw)
    assert r.returncode == 0, f"{args}: {r.stderr}"
    return r


def site_packages():
    return next(VENV.glob("lib/python3*/site-packages"))


def test_command_and_module_run_the_bundled_executable(tmp_path):
    version = run("lantern", "--version", cwd=tmp_path).stdout
    assert version.startswith("lantern ")
    assert run(str(VENV / "bin" / "python"), "-m", "lantern", "--version",
               cwd=tmp_path).stdout == version
    package = site_packages() / "lantern"
    for part in ("bin/lantern", "lib/liblantern-agent.so", "lib/liblantern.so"):
        assert (package / part).is_file(), part


def test_profile_a_python_program_with_the_installed_launcher(tmp_path):
    (tmp_path / "app.py").write_text(PROGRAM)
    r = run("lantern", "profile", "-o", "app.db", "--python-functions", "__main__.compute",
            "--", "python", "app.py", cwd=tmp_path)
    assert f"library {site_packages() / 'lantern' / 'lib' / 'liblantern.so'}" in r.stdout
    db = sqlite3.connect(tmp_path / "app.db")
    rows = db.execute("SELECT d.value, n.value, count(*) FROM ranges r "
                      "JOIN domains ON domains.id = r.domain_id "
                      "JOIN strings d ON d.id = domains.name_id "
                      "JOIN strings n ON n.id = r.name_id GROUP BY 1, 2").fetchall()
    assert rows == [("lantern.energy", "step", 3), ("python", "__main__.compute", 4)]
    run(str(VENV / "bin" / "python"), "-m", "lantern", "stats", "app.db", cwd=tmp_path)


NAMES_PROGRAM = '''
import os, subprocess, sys, threading
import lantern

monitor = lantern.Monitor(gpu_indices=None, cpu_indices=[])


def work():
    with monitor.window("load"):
        sum(range(1000))


if sys.argv[1:] != ["child"]:
    loader = threading.Thread(target=work, name="data-loader-0")
    loader.start()
    loader.join()
    subprocess.run([sys.executable, sys.argv[0], "child"], env=dict(os.environ, RANK="1"), check=True)
else:
    work()
'''


def test_threads_and_processes_are_named_with_the_installed_bootstrap(tmp_path):
    """The issue's proof: a named Python thread and a spawned child with a rank, profiled by
    the installed launcher, carry their names, rank and parent link in the database."""
    (tmp_path / "names.py").write_text(NAMES_PROGRAM)
    run("lantern", "profile", "-o", "names.db", "--", "python", "names.py", cwd=tmp_path)
    db = sqlite3.connect(tmp_path / "names.db")
    processes = db.execute("SELECT p.name, p.rank, parent.name FROM processes p"
                           " LEFT JOIN processes parent ON parent.id = p.parent_id ORDER BY p.start_ns").fetchall()
    assert processes == [("names.py", None, None), ("names.py", 1, "names.py")]
    threads = db.execute("SELECT s.value FROM threads t JOIN strings s ON s.id = t.python_name_id").fetchall()
    assert threads == [("data-loader-0",)]
    out = run("lantern", "stats", "names.db", cwd=tmp_path).stdout
    assert "names.py (rank 1), started by pid" in out


def test_import_finds_its_library_without_environment(tmp_path):
    r = run(str(VENV / "bin" / "python"), "-c",
            "import lantern; lantern._lib(); print(lantern.library_path())", cwd=tmp_path)
    assert r.stdout.strip() == str(site_packages() / "lantern" / "lib" / "liblantern.so")


def test_unchanged_zeus_program_runs_time_only(tmp_path):
    r = run(str(VENV / "bin" / "python"), "-m", "lantern.zeus",
            str(SOURCE / "examples" / "zeus" / "train.py"), "--epochs", "1", "--steps", "2",
            "--step-seconds", "0.01", cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert lines[0] == "gpus []"
    assert [line.split()[0] for line in lines[1:]] == ["epoch", "step", "window"]
